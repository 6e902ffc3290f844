// Command gomogile-torture runs the torture program of design §5 against a
// database: tracker processes (this program re-executed as workers) under
// load while they are SIGKILLed and SIGSTOPped, their sessions killed, and
// — with the fault infrastructure — the database crashed, partitioned,
// delayed and failed over; then it checks the invariants (see package
// internal/testkit/torture). It prints the report, ending with one summary line,
// and exits 1 when an invariant is violated, 2 on bad usage, 3 when the run
// could not be carried out.
//
//	gomogile-torture --dsn 'mysql://root@127.0.0.1:3306/torture' --duration 10m
//	gomogile-torture --private postgres --duration 120s   # a private primary and standby, crashed and failed over at will
//	gomogile-torture --private postgres-pgbouncer --duration 120s
//	gomogile-torture --private mysql --locks etcd --duration 120s   # locks in a private etcd cluster, its members killed
//	gomogile-torture --private galera --locks etcd --duration 120s  # a 3-node Galera cluster, its nodes killed and rejoining
//
// Run it on an empty database of its own: it creates domains, a host,
// devices and files, and kills every other session of that database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/internal/buildinfo"
	"github.com/gomogile/gomogile/internal/testkit/torture"
)

func main() {
	// Re-executed as a tracker process by the coordinator: run as one.
	torture.MaybeWorker()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if buildinfo.VersionRequested(args) {
		fmt.Fprintln(stdout, buildinfo.Read().String("gomogile-torture"))
		return 0
	}
	fs := flag.NewFlagSet("gomogile-torture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg torture.Config
	var seed uint64
	var verbose bool
	fs.StringVar(&cfg.DSN, "dsn", "", "database DSN (an empty database of its own; sqlite://, mysql://, postgres://, DBI:…)")
	fs.StringVar(&cfg.Private, "private", "", "start a private server instead of --dsn: postgres (a primary with a standby), mysql, postgres-pgbouncer or galera (3 nodes; with --locks etcd)")
	fs.StringVar(&cfg.Locks, "locks", "", "keep the locks outside the database: etcd (a private 3-member cluster, its members killed and partitioned at will)")
	fs.DurationVar(&cfg.Duration, "duration", time.Minute, "how long load and faults run")
	fs.IntVar(&cfg.Procs, "procs", 3, "tracker processes (SQLite: 1, which owns the database)")
	fs.IntVar(&cfg.Stores, "stores", 0, "Stores per process (default 1; SQLite 3)")
	fs.IntVar(&cfg.Workers, "workers", 4, "workers per Store")
	fs.DurationVar(&cfg.FaultEvery, "fault-every", 700*time.Millisecond, "make a fault this often, the applicable kinds in turn; 0 = never")
	faults := fs.String("faults", "", "make only these fault kinds, comma-separated (e.g. sigstop, as the etcd unfenced control makes); default every kind that applies")
	fs.DurationVar(&cfg.OpTimeout, "op-timeout", 3*time.Second, "each operation's deadline")
	fs.StringVar(&cfg.Broken, "broken", "", "negative control: break the Stores this way (see --list-controls)")
	listControls := fs.Bool("list-controls", false, "list the negative controls and the invariant each must trip")
	fs.Uint64Var(&seed, "seed", 0, "seed for every random choice (0 = from the clock; printed)")
	fs.DurationVar(&cfg.ClockSkew, "clock-skew", 0, "allowed difference between this host's clock and the database's")
	fs.BoolVar(&verbose, "v", false, "log faults and phases as they happen")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *listControls {
		for _, c := range torture.Controls() {
			name := c.Name
			if c.Locks != "" {
				name += " (--locks " + c.Locks + ")"
			}
			fmt.Fprintf(stdout, "%-32s %s\n", name, c.Invariant)
		}
		return 0
	}
	if (cfg.DSN == "") == (cfg.Private == "") || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "gomogile-torture: one of --dsn and --private is required, and no arguments are taken")
		fs.Usage()
		return 2
	}
	cfg.Seed = seed
	if *faults != "" {
		cfg.Faults = strings.Split(*faults, ",")
	}
	lg := log.New(stderr, "", log.Ltime|log.Lmicroseconds)
	if verbose {
		cfg.Logf = lg.Printf
	} else {
		lg.SetOutput(io.Discard)
	}
	// The MySQL driver logs every connection the faults break; that is
	// expected here, so it goes where the rest of the log goes.
	_ = gomysql.SetLogger(lg)
	rep, err := torture.Run(ctx, cfg)
	fmt.Fprint(stdout, rep.String())
	if err != nil {
		fmt.Fprintln(stderr, "gomogile-torture:", err)
		return 3
	}
	if !rep.OK() {
		return 1
	}
	return 0
}
