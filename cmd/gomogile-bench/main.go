// Command gomogile-bench is gomogile's load generator (package
// internal/testkit/load): for every backend, tracker count and client count it
// starts trackers on a fresh database and a storage node, in this process
// on loopback, drives them with the Go client — each iteration an upload
// of a 4 KiB file and a get_paths of it — and prints one line per cell:
//
//	load: backend=<b> trackers=<t> clients=<c> ops_per_s=<n> p50_ms=<x> p99_ms=<y> rt_per_upload=<n>
//
// rt_per_upload is the database round trips the trackers made per
// iteration, counted on the wire (MySQL, PostgreSQL) or at the driver
// (SQLite). With -tracker-addr it measures a tracker already running
// elsewhere (e.g. the original Perl MogileFS) with the same workload, and
// starts only the storage node; with -perl-client the same workload also
// runs through a Perl MogileFS::Client script (scripts/load-client.pl).
// -chart writes throughput against clients as SVG (or PNG, by extension).
//
//	gomogile-bench -backends sqlite,mysql,postgres -clients 1,8,32 -trackers 1,2 -chart docs/load.svg
//	gomogile-bench -tracker-addr 127.0.0.1:7001 -backends original-sqlite -trackers 1
//
// The MySQL and PostgreSQL servers are those of the tests,
// $GOMOGILE_TEST_MYSQL_DSN and $GOMOGILE_TEST_POSTGRES_DSN (by default the
// local servers make test uses); each cell creates a database of its own
// there and drops it at the end. Exit status: 0, 1 when a cell failed, 2
// on bad usage.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/client"
	"github.com/gomogile/gomogile/internal/buildinfo"
	"github.com/gomogile/gomogile/internal/testkit/freshdb"
	"github.com/gomogile/gomogile/internal/testkit/load"

	_ "github.com/gomogile/gomogile/store/etcd" // -locks etcd
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// The servers when the tests' variables are unset: those make test uses.
const (
	defaultMySQL    = "mysql://root@127.0.0.1:3306/test"
	defaultPostgres = "postgres://root@127.0.0.1:5432/test?sslmode=disable"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if buildinfo.VersionRequested(args) {
		fmt.Fprintln(stdout, buildinfo.Read().String("gomogile-bench"))
		return 0
	}
	fs := flag.NewFlagSet("gomogile-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backends := fs.String("backends", strings.Join(load.Backends, ","), "backends, comma-separated: sqlite, mysql, postgres, galera (a private 3-node cluster, with -locks etcd; with -tracker-addr: one label for the lines)")
	clients := fs.String("clients", "1,8,32", "concurrent clients per cell, comma-separated")
	trackers := fs.String("trackers", "1,2,4", "trackers on one database per cell, comma-separated")
	locks := fs.String("locks", "", "keep the trackers' locks in a private 3-member etcd cluster (etcd); backend galera needs it")
	iterations := fs.Int("iterations", 1000, "iterations (upload + get_paths) per cell, over all its clients")
	duration := fs.Duration("duration", 0, "run each cell this long instead of -iterations")
	trackerAddr := fs.String("tracker-addr", "", "measure the tracker(s) at these addresses (comma-separated) instead of starting ours")
	nodeHTTP := fs.String("node-http", "", "the storage node's HTTP address (default: a free port of 127.0.0.1)")
	nodeMgmt := fs.String("node-mgmt", "", "the storage node's management address, an external tracker's mogstored_stream_port (default: a free port of 127.0.0.1)")
	perlClient := fs.String("perl-client", "", "also run the workload through this Perl MogileFS::Client script (scripts/load-client.pl)")
	chart := fs.String("chart", "", "write a chart of ops/s against clients to this file (.svg, .png)")
	save := fs.String("save", "", "also write the load: lines to this file (for -chart-from)")
	chartFrom := fs.String("chart-from", "", "draw -chart from the load: lines of this file (an earlier run's output; - = stdin) instead of running")
	title := fs.String("chart-title", "gomogile: 4 KiB upload + get_paths", "the chart's title")
	dir := fs.String("dir", "", "keep the databases, the storage node's files and the daemons' log here (default: a temporary directory, removed)")
	verbose := fs.Bool("v", false, "log progress to stderr")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (clients, trackers and node together) to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg := load.Config{
		Backends:     split(*backends),
		Iterations:   *iterations,
		Duration:     *duration,
		TrackerAddrs: client.ParseTrackers(*trackerAddr),
		PerlClient:   *perlClient,
		NodeHTTP:     *nodeHTTP,
		NodeMgmt:     *nodeMgmt,
		Dir:          *dir,
		MySQL:        env(freshdb.EnvMySQL, defaultMySQL),
		Postgres:     env(freshdb.EnvPostgres, defaultPostgres),
		Locks:        *locks,
		Out:          stdout,
	}
	var err error
	if cfg.Clients, err = ints(*clients); err == nil {
		cfg.Trackers, err = ints(*trackers)
	}
	if err != nil || fs.NArg() > 0 || len(cfg.Backends) == 0 {
		fmt.Fprintln(stderr, "gomogile-bench: -clients and -trackers take positive numbers, -backends at least one name, and no arguments are taken")
		fs.Usage()
		return 2
	}
	if *chartFrom != "" {
		return redraw(*chartFrom, *chart, *title, stdin(*chartFrom), stderr)
	}
	if *save != "" {
		f, err := os.Create(*save)
		if err != nil {
			fmt.Fprintln(stderr, "gomogile-bench:", err)
			return 1
		}
		defer f.Close()
		cfg.Out = io.MultiWriter(stdout, f)
	}
	lg := log.New(stderr, "", log.Ltime)
	if *verbose {
		cfg.Logf = lg.Printf
	} else {
		lg.SetOutput(io.Discard)
	}
	_ = gomysql.SetLogger(lg)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(stderr, "gomogile-bench:", err)
			return 1
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	results, err := load.Run(ctx, cfg)
	if err == nil && *chart != "" {
		err = load.Chart(results, *title, *chart)
	}
	if err != nil {
		fmt.Fprintln(stderr, "gomogile-bench:", err)
		return 1
	}
	return 0
}

func stdin(name string) io.Reader {
	if name == "-" {
		return os.Stdin
	}
	return nil
}

// redraw is -chart-from: the chart of the lines of the file from (or of
// in, when from is "-").
func redraw(from, chart, title string, in io.Reader, stderr io.Writer) int {
	if chart == "" {
		fmt.Fprintln(stderr, "gomogile-bench: -chart-from needs -chart")
		return 2
	}
	if in == nil {
		f, err := os.Open(from)
		if err != nil {
			fmt.Fprintln(stderr, "gomogile-bench:", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	var results []load.Result
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if r, ok := load.ParseLine(sc.Text()); ok {
			results = append(results, r)
		}
	}
	err := sc.Err()
	if err == nil && len(results) == 0 {
		err = fmt.Errorf("no load: lines in %s", from)
	}
	if err == nil {
		err = load.Chart(results, title, chart)
	}
	if err != nil {
		fmt.Fprintln(stderr, "gomogile-bench:", err)
		return 1
	}
	return 0
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range split(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
