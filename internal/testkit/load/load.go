// Package load is gomogile's load generator (cmd/gomogile-bench, make
// load): it drives trackers with the Go client (package client) — and,
// when given one, with a Perl MogileFS::Client script — through one
// workload, each iteration an upload of a 4 KiB file (create_open, a PUT to
// the storage node, create_close) and a get_paths of it, and reports
// throughput, latency and the database round trips each iteration cost.
//
// For each backend, tracker count and client count (a cell) it starts a
// fresh database (a new file for SQLite, a new database on the MySQL or
// PostgreSQL server through package freshdb), that many trackers on it
// and, once per run, one storage node, all in this process on loopback;
// registers a domain, a one-copy class, the node's host and two devices;
// uploads once through each tracker until its monitor lets it (warm-up);
// then runs the clients, each its own client.Client naming every tracker,
// for Iterations iterations in all or for Duration. It prints one line
// per cell:
//
//	load: backend=<b> trackers=<t> clients=<c> ops_per_s=<n> p50_ms=<x> p99_ms=<y> rt_per_upload=<n> db_cpu_ms=<z>
//
// ops_per_s is iterations per second of wall time; p50_ms and p99_ms are
// percentiles of one iteration's duration. db_cpu_ms is the CPU time (user
// and system, from /proc) the database server's processes spent per
// iteration during the timed run — mariadbd or mysqld for MySQL and
// Galera (the three nodes), postgres for PostgreSQL — which is what
// bounds an installation's uploads per database core however many
// trackers it runs; it is absent for SQLite (inside the trackers'
// process) and where /proc cannot tell. It is measured from outside, so an
// external tracker's cells have it too: the original's and ours compare
// on one database server. rt_per_upload is counted, not
// estimated: the database round trips the trackers made while the clients
// ran (the background workers' included) divided by the iterations. On
// MySQL and PostgreSQL an internal/testkit/faultproxy proxy between each tracker
// and the server counts request/response turns on the wire, in a counting
// pass of its own before the timed run (countIterations per client, the
// cell's clients and trackers, on the cell's database): the timed run goes
// to the server directly, as an external tracker's does, since the
// proxies would cost this process, which also runs the clients and the
// node, a second copy of all the database traffic. SQLite runs in the
// trackers' process, so a database/sql driver wrapping SQLite's, which the
// trackers' DSN names (sql_driver), counts its statements, BEGINs, COMMITs and ROLLBACKs,
// which are what the wire would carry, during the timed run itself.
//
// With Config.Locks = "etcd" the trackers keep their locks in a private
// etcd cluster the run starts (private.go), and backend Galera is a private
// 3-node Galera cluster, each cell's tracker i on node i%3 + 1.
//
// Against an external tracker (Config.TrackerAddrs, e.g. the original
// Perl MogileFS 2.73) it starts only the storage node, registers it there
// and reports rt_per_upload=- since it cannot see that tracker's database.
package load

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomogile/gomogile/client"
	"github.com/gomogile/gomogile/internal/testkit/faultproxy"
	"github.com/gomogile/gomogile/internal/testkit/freshdb"
)

// Backends are the backends a run takes by default, in its order.
var Backends = []string{"sqlite", "mysql", "postgres"}

// FileSize is the size of every uploaded file.
const FileSize = 4096

// Config is one run.
type Config struct {
	Backends []string // of Backends; "external" with TrackerAddrs
	Clients  []int    // concurrent clients per cell
	Trackers []int    // trackers per cell, on one database
	// Iterations per cell, over all clients; Duration, when set, runs each
	// cell that long instead.
	Iterations int
	Duration   time.Duration
	// MySQL and Postgres name the servers the fresh databases are made
	// on (DSNs of package store).
	MySQL, Postgres string
	// Locks, when "etcd", keeps the trackers' locks in a private 3-member
	// etcd cluster (lock_dsn) started for the run; the lines' backend is
	// then "<backend>/etcd". Backend Galera needs it.
	Locks string
	// TrackerAddrs, when set, are an external tracker's addresses: no
	// tracker is started and Backends is one label for the lines.
	TrackerAddrs []string
	// NodeHTTP and NodeMgmt are the storage node's HTTP and management
	// addresses; "" = ports of 127.0.0.1 the kernel picks. An external
	// tracker must be told the management port (mogstored_stream_port)
	// before the run starts.
	NodeHTTP, NodeMgmt string
	// PerlClient, when set, is a Perl script run as each client's process
	// for a second line per cell (see perl.go).
	PerlClient string
	// Dir holds the databases of SQLite, the storage node's docroot and
	// the daemons' log (daemons.log); "" = a temporary directory, removed
	// at the end.
	Dir string
	// Out receives the lines as each cell ends; Logf, if set, progress.
	Out  io.Writer
	Logf func(format string, args ...any)
}

// Result is one cell's measurement.
type Result struct {
	Backend  string
	Trackers int
	Clients  int
	Driver   string // "go", or "perl" for the Perl client's
	Ops      int    // iterations done
	OpsPerS  float64
	P50, P99 time.Duration
	// RTPerUpload is the round trips per iteration; negative when they
	// could not be counted (an external tracker).
	RTPerUpload float64
	// DBCPU is the CPU time the database server's processes spent per
	// iteration, read from /proc around the timed run; negative when
	// there is none to read (SQLite, not Linux).
	DBCPU time.Duration
}

// Line is the result's output line. The Perl client's lines end with
// driver=perl; the Go client's have exactly the fields of the package doc.
func (r Result) Line() string {
	rt := "-"
	if r.RTPerUpload >= 0 {
		rt = strconv.FormatFloat(r.RTPerUpload, 'f', 1, 64)
	}
	s := fmt.Sprintf("load: backend=%s trackers=%d clients=%d ops_per_s=%.0f p50_ms=%.2f p99_ms=%.2f rt_per_upload=%s",
		r.Backend, r.Trackers, r.Clients, r.OpsPerS, ms(r.P50), ms(r.P99), rt)
	if r.DBCPU >= 0 {
		s += fmt.Sprintf(" db_cpu_ms=%.2f", ms(r.DBCPU))
	}
	if r.Driver != "" && r.Driver != "go" {
		s += " driver=" + r.Driver
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Run runs every cell of cfg and returns their results in order. It stops
// at the first cell that fails.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Iterations <= 0 && cfg.Duration <= 0 {
		return nil, errors.New("load: neither iterations nor a duration")
	}
	if len(cfg.TrackerAddrs) > 0 {
		cfg.Trackers = []int{len(cfg.TrackerAddrs)}
		if len(cfg.Backends) != 1 {
			return nil, errors.New("load: an external tracker takes one backend label")
		}
	} else {
		for _, b := range cfg.Backends {
			if !slices.Contains(Backends, b) && b != Galera {
				return nil, fmt.Errorf("load: unknown backend %q (want %s or %s)", b, strings.Join(Backends, ", "), Galera)
			}
		}
	}
	var priv privates
	defer func() {
		if err := priv.cleanup(); err != nil {
			cfg.Logf("load: private servers: %v", err)
		}
	}()
	if len(cfg.TrackerAddrs) == 0 {
		if err := priv.start(ctx, cfg); err != nil {
			return nil, err
		}
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "gomogile-load-")
		if err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	logFile, err := os.Create(filepath.Join(dir, "daemons.log"))
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	defer logFile.Close()
	log := &lockedWriter{w: logFile}
	n, err := startNode(ctx, dir, cfg.NodeHTTP, cfg.NodeMgmt, log)
	if err != nil {
		return nil, err
	}
	defer n.stop()
	cfg.Logf("load: storage node http://%s, daemons' log %s", n.http, logFile.Name())

	var out []Result
	cell := 0
	for _, b := range cfg.Backends {
		for _, t := range cfg.Trackers {
			for _, c := range cfg.Clients {
				cell++
				rs, err := runCell(ctx, cfg, &priv, n, log, filepath.Join(dir, fmt.Sprintf("cell%d", cell)), b, t, c)
				if err != nil {
					return out, fmt.Errorf("%w (backend=%s trackers=%d clients=%d; daemons' log %s)", err, b, t, c, logFile.Name())
				}
				for _, r := range rs {
					fmt.Fprintln(cfg.Out, r.Line())
				}
				out = append(out, rs...)
			}
		}
	}
	return out, nil
}

// counter reads the round trips the trackers of a cell made so far.
type counter func() int64

// countIterations is the length of a MySQL or PostgreSQL cell's counting
// pass, per client, with at least minCountIterations in all.
const (
	countIterations    = 20
	minCountIterations = 200
)

// cellDB is a cell's fresh database: the DSN each tracker opens, and how
// their round trips are counted.
type cellDB struct {
	dsns []string
	// count, when set, counts the round trips of trackers opening dsns
	// (SQLite's driver wrapper, in this process, costing next to nothing).
	count counter
	// proxied, when set instead, returns DSNs through counting proxies
	// (MySQL, PostgreSQL), their counter and a close for the proxies.
	proxied func() ([]string, counter, func(), error)
	cleanup func() error
}

// A driver is a kind of client: the Go client, or the Perl script.
type clientsRun func(context.Context, Config, []string, int) (Result, error)

func runCell(ctx context.Context, cfg Config, priv *privates, n *node, log io.Writer, dir, backend string, trackers, clients int) (_ []Result, err error) {
	drivers := []string{"go"}
	runs := map[string]clientsRun{"go": goClients, "perl": perlClients}
	if cfg.PerlClient != "" {
		drivers = append(drivers, "perl")
	}
	var rs []Result
	if len(cfg.TrackerAddrs) > 0 {
		if err := ready(ctx, cfg, n, cfg.TrackerAddrs); err != nil {
			return nil, err
		}
		cfg.Logf("load: backend=%s clients=%d: trackers %s ready", backend, clients, strings.Join(cfg.TrackerAddrs, ","))
		for _, d := range drivers {
			cpu := startCPU(backend)
			r, err := runs[d](ctx, cfg, cfg.TrackerAddrs, clients)
			if err != nil {
				return nil, err
			}
			r.Backend, r.Trackers, r.Clients, r.Driver, r.RTPerUpload, r.DBCPU = backend, trackers, clients, d, -1, cpu(r.Ops)
			rs = append(rs, r)
		}
		return rs, nil
	}
	db, err := cellDatabase(ctx, cfg, priv, dir, backend, trackers)
	if err != nil {
		return nil, err
	}
	label := backend
	if cfg.Locks != "" {
		label += "/" + cfg.Locks
	}
	defer func() { err = errors.Join(err, db.cleanup()) }()

	// Through a proxy the round trips cost this process, which also runs
	// the clients and the node, twice the loopback traffic to the database
	// (10 to 15% of the cell's throughput on two cores), and an external
	// tracker is measured without one. So MySQL and PostgreSQL count in a
	// pass of their own, through proxies, and the timed run goes direct.
	rt := map[string]float64{}
	if db.proxied != nil {
		dsns, count, closeProxies, err := db.proxied()
		if err != nil {
			return nil, err
		}
		ccfg := cfg
		ccfg.Duration, ccfg.Iterations = 0, max(minCountIterations, countIterations*clients)
		err = withTrackers(ctx, cfg, n, log, dsns, func(addrs []string) error {
			for _, d := range drivers {
				before := count()
				r, err := runs[d](ctx, ccfg, addrs, clients)
				if err != nil {
					return err
				}
				rt[d] = float64(count()-before) / float64(r.Ops)
			}
			return nil
		})
		closeProxies()
		if err != nil {
			return nil, err
		}
	}
	err = withTrackers(ctx, cfg, n, log, db.dsns, func(addrs []string) error {
		cfg.Logf("load: backend=%s trackers=%d clients=%d: trackers %s ready", label, trackers, clients, strings.Join(addrs, ","))
		for _, d := range drivers {
			var before int64
			if db.count != nil {
				before = db.count()
			}
			cpu := startCPU(backend)
			r, err := runs[d](ctx, cfg, addrs, clients)
			if err != nil {
				return err
			}
			r.Backend, r.Trackers, r.Clients, r.Driver, r.DBCPU = label, trackers, clients, d, cpu(r.Ops)
			if db.count != nil {
				r.RTPerUpload = float64(db.count()-before) / float64(r.Ops)
			} else {
				r.RTPerUpload = rt[d]
			}
			rs = append(rs, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// withTrackers starts a tracker on each DSN, registers the node, warms
// them up, runs f with their addresses and stops them.
func withTrackers(ctx context.Context, cfg Config, n *node, log io.Writer, dsns []string, f func(addrs []string) error) (err error) {
	var addrs []string
	for _, dsn := range dsns {
		d, addr, err := startTracker(ctx, dsn, n, log)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, d.stop()) }()
		addrs = append(addrs, addr)
	}
	if err := ready(ctx, cfg, n, addrs); err != nil {
		return err
	}
	return f(addrs)
}

// ready registers the node on the trackers at addrs and warms them up.
func ready(ctx context.Context, cfg Config, n *node, addrs []string) error {
	reg, err := client.New(addrs[:1], nil)
	if err != nil {
		return err
	}
	err = register(ctx, reg, n)
	reg.Close()
	if err != nil {
		return err
	}
	return warmUp(ctx, addrs)
}

// sqliteStatements counts the statements of every SQLite pool opened with
// sql_driver=countingSQLite, registering that driver on first use.
var sqliteStatements = sync.OnceValue(func() *statements {
	s := &statements{}
	sql.Register(countingSQLite, s.driver("sqlite"))
	return s
})

// cellDatabase makes the cell's fresh database, and each tracker's DSN
// of it (with the cell's lock_dsn when the locks are in etcd).
func cellDatabase(ctx context.Context, cfg Config, priv *privates, dir, backend string, trackers int) (cellDB, error) {
	priv.cells++
	db, err := freshCellDatabase(ctx, cfg, priv, dir, backend, trackers)
	if err != nil || priv.etcd == nil {
		return db, err
	}
	cell := priv.cells
	for i := range db.dsns {
		db.dsns[i] = priv.withLocks(db.dsns[i], cell)
	}
	if proxied := db.proxied; proxied != nil {
		db.proxied = func() ([]string, counter, func(), error) {
			dsns, count, closeAll, err := proxied()
			for i := range dsns {
				dsns[i] = priv.withLocks(dsns[i], cell)
			}
			return dsns, count, closeAll, err
		}
	}
	return db, nil
}

// freshCellDatabase is cellDatabase without the locks.
func freshCellDatabase(ctx context.Context, cfg Config, priv *privates, dir, backend string, trackers int) (cellDB, error) {
	if backend == Galera {
		return galeraCellDatabase(ctx, priv, trackers)
	}
	if backend == "sqlite" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return cellDB{}, fmt.Errorf("load: %w", err)
		}
		st := sqliteStatements()
		dsn := "sqlite://" + filepath.Join(dir, "mogilefs.db") + "?sql_driver=" + countingSQLite
		db := cellDB{count: st.n.Load, cleanup: func() error { return nil }}
		for range trackers {
			db.dsns = append(db.dsns, dsn)
		}
		return db, nil
	}
	server := cfg.MySQL
	if backend == "postgres" {
		server = cfg.Postgres
	}
	dsn, drop, err := freshdb.Create(ctx, server)
	if err != nil {
		return cellDB{}, fmt.Errorf("load: %w", err)
	}
	db := cellDB{cleanup: func() error {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return drop(dctx)
	}}
	for range trackers {
		db.dsns = append(db.dsns, dsn)
	}
	db.proxied = proxiedDSNs(db.dsns)
	return db, nil
}

// proxiedDSNs is a cell's proxied for trackers opening dsns: each through
// a counting proxy of its own.
func proxiedDSNs(dsns []string) func() ([]string, counter, func(), error) {
	dsns = slices.Clone(dsns) // the cell may add parameters to its own
	return func() ([]string, counter, func(), error) {
		var proxies []*faultproxy.Proxy
		closeAll := func() {
			for _, p := range proxies {
				_ = p.Close()
			}
		}
		var through []string
		for _, dsn := range dsns {
			p, t, err := faultproxy.Through(dsn, faultproxy.Options{})
			if err != nil {
				closeAll()
				return nil, nil, nil, fmt.Errorf("load: %w", err)
			}
			proxies = append(proxies, p)
			through = append(through, t)
		}
		count := func() int64 {
			var n int64
			for _, p := range proxies {
				n += p.Stats().RoundTrips
			}
			return n
		}
		return through, count, closeAll, nil
	}
}

// payload is every upload's content.
var payload = bytes.Repeat([]byte("gomogile load 4k "), FileSize/17+1)[:FileSize]

// upload is one iteration: the file stored under key, then its paths.
func upload(ctx context.Context, c *client.Client, key string) error {
	if _, err := c.StoreFile(ctx, Domain, key, Class, bytes.NewReader(payload), FileSize); err != nil {
		return err
	}
	paths, err := c.GetPaths(ctx, Domain, key, nil)
	if err == nil && len(paths) == 0 {
		err = fmt.Errorf("load: get_paths of %s: no path", key)
	}
	return err
}

// budget hands out iterations to the clients of a cell until Iterations
// are taken or Duration has passed.
type budget struct {
	left     atomic.Int64
	deadline time.Time
}

func newBudget(cfg Config) *budget {
	b := &budget{}
	if cfg.Duration > 0 {
		b.left.Store(math.MaxInt64)
		b.deadline = time.Now().Add(cfg.Duration)
	} else {
		b.left.Store(int64(cfg.Iterations))
	}
	return b
}

func (b *budget) take() bool {
	if !b.deadline.IsZero() && time.Now().After(b.deadline) {
		return false
	}
	return b.left.Add(-1) >= 0
}

// run is a cell's clients' measurements.
type run struct {
	mu    sync.Mutex
	lats  []time.Duration
	start time.Time
}

func (r *run) add(d time.Duration) {
	r.mu.Lock()
	r.lats = append(r.lats, d)
	r.mu.Unlock()
}

func (r *run) result() Result {
	wall := time.Since(r.start)
	slices.Sort(r.lats)
	res := Result{Ops: len(r.lats)}
	if len(r.lats) > 0 {
		res.OpsPerS = float64(len(r.lats)) / wall.Seconds()
		res.P50 = percentile(r.lats, 0.50)
		res.P99 = percentile(r.lats, 0.99)
	}
	return res
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// goClients runs the workload with clients Go clients.
func goClients(ctx context.Context, cfg Config, addrs []string, clients int) (Result, error) {
	b := newBudget(cfg)
	// One transport for the clients' PUTs, keeping a connection per client
	// alive as the trackers' own connections are.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer hc.CloseIdleConnections()
	r := &run{start: time.Now()}
	errs := make(chan error, clients)
	prefix := strconv.FormatInt(time.Now().UnixNano(), 36)
	for i := range clients {
		c, err := client.New(addrs, &client.Options{HTTPClient: hc})
		if err != nil {
			return Result{}, err
		}
		go func() {
			defer c.Close()
			for j := 0; b.take(); j++ {
				octx, cancel := context.WithTimeout(ctx, 30*time.Second)
				t0 := time.Now()
				err := upload(octx, c, fmt.Sprintf("%s-%d-%d", prefix, i, j))
				cancel()
				if err != nil {
					errs <- fmt.Errorf("load: client %d, iteration %d: %w", i, j, err)
					return
				}
				r.add(time.Since(t0))
			}
			errs <- nil
		}()
	}
	var err error
	for range clients {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		return Result{}, err
	}
	return r.result(), nil
}

// lockedWriter lets the daemons share one log file.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ParseLine reads a line Line printed back into a Result (for a chart of
// an earlier run's output); ok is false for any other line.
func ParseLine(line string) (r Result, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(line), "load: ")
	if !found {
		return Result{}, false
	}
	r.Driver, r.DBCPU = "go", -1
	seen := 0
	for _, f := range strings.Fields(rest) {
		k, v, found := strings.Cut(f, "=")
		if !found {
			return Result{}, false
		}
		var err error
		switch k {
		case "backend":
			r.Backend = v
		case "trackers":
			r.Trackers, err = strconv.Atoi(v)
		case "clients":
			r.Clients, err = strconv.Atoi(v)
		case "ops_per_s":
			r.OpsPerS, err = strconv.ParseFloat(v, 64)
		case "p50_ms", "p99_ms":
			var x float64
			x, err = strconv.ParseFloat(v, 64)
			d := time.Duration(x * float64(time.Millisecond))
			if k == "p50_ms" {
				r.P50 = d
			} else {
				r.P99 = d
			}
		case "rt_per_upload":
			r.RTPerUpload = -1
			if v != "-" {
				r.RTPerUpload, err = strconv.ParseFloat(v, 64)
			}
		case "db_cpu_ms":
			var x float64
			x, err = strconv.ParseFloat(v, 64)
			r.DBCPU = time.Duration(x * float64(time.Millisecond))
			seen-- // optional
		case "driver":
			r.Driver = v
			seen-- // optional
		default:
			return Result{}, false
		}
		if err != nil {
			return Result{}, false
		}
		seen++
	}
	return r, seen == 7
}
