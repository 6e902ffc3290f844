package torture

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gomogile/gomogile/store"
	// The backends a DSN may name.
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// Config is one torture run. Zero fields take the defaults noted.
type Config struct {
	// DSN is the database, an empty one of its own; or Private names a
	// private server (PrivatePostgres, PrivateMySQL, PrivatePgBouncer,
	// PrivateFailover) the run starts, crashes and removes.
	DSN     string
	Private string
	// Locks, if LocksEtcd, keeps the Stores' named locks in a private etcd
	// cluster the run starts and removes (lock_dsn, each slot through
	// fault proxies of its own), and adds the etcd fault kinds; "" keeps
	// the database's own locks.
	Locks    string
	Duration time.Duration // how long load and faults run (10s)
	// Procs is the number of tracker processes (3; SQLite 1, since one
	// process owns an SQLite database), Stores the Stores each opens (1;
	// SQLite 3), Workers the goroutines per Store (4).
	Procs, Stores, Workers int
	// FaultEvery is how often the injector makes a fault, the kinds taken
	// in turn (700ms; 0 = never).
	FaultEvery time.Duration
	// Faults, if set, restricts the kinds made to these (the negative
	// controls use it to make the fault that shows theirs often).
	Faults []string
	Seed   uint64 // drives every random choice (0 = from the clock; the Report says which)

	Counters    int           // lock-guarded counters (4)
	Keys        int           // keys per domain; few, so commits replace each other (40)
	Devices     int           // devices for file_on (6)
	LockTimeout time.Duration // workers' Lock timeout (1s)
	QueueLease  time.Duration // replicate-queue lease (2s; the database rounds to seconds)
	// LostSlack is how late after the next grant a holder's Lost may be
	// stamped, for the watcher goroutine's scheduling on a loaded machine
	// (150ms), added to the backend's documented bound (MySQL's watcher).
	LostSlack time.Duration
	// ClockSkew is how far the database's clock may be from ours when lease
	// expiry is compared (0: the database runs on this host).
	ClockSkew time.Duration
	// OpTimeout is each operation's deadline (3s); DeadlineSlack how late
	// past it an operation may return (500ms: the return is stamped after
	// the call, on a loaded machine).
	OpTimeout, DeadlineSlack time.Duration
	// RecoverySlack is added to DeadOwnerBound when judging how soon a
	// killed holder's lock was granted again (500ms).
	RecoverySlack time.Duration

	// Logf, if set, receives progress: faults and phases.
	Logf func(format string, args ...any)
	// Broken names a negative control (see Controls): every worker wraps
	// its Stores in it, and the run must report the invariant it breaks.
	Broken string
	// Command re-executes this program as a worker ([os.Executable()]);
	// the program must call MaybeWorker first thing.
	Command []string

	// killPoolerAfter, for tests (export_test.go): SIGKILL the private
	// PgBouncer once, this far into the load, as its own assertion
	// failures end it; the run must start it again and pass.
	killPoolerAfter time.Duration
}

func (c *Config) defaults(driver string) {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	defd := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	defd(&c.Duration, 10*time.Second)
	if driver == "sqlite" {
		c.Procs = 1
		def(&c.Stores, 3)
	}
	def(&c.Procs, 3)
	def(&c.Stores, 1)
	def(&c.Workers, 4)
	def(&c.Counters, 4)
	def(&c.Keys, 40)
	def(&c.Devices, 6)
	defd(&c.LockTimeout, time.Second)
	defd(&c.QueueLease, 2*time.Second)
	defd(&c.LostSlack, 150*time.Millisecond)
	defd(&c.OpTimeout, 3*time.Second)
	defd(&c.DeadlineSlack, 500*time.Millisecond)
	defd(&c.RecoverySlack, 500*time.Millisecond)
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// wproc is one tracker process.
type wproc struct {
	slot, gen int
	prefix    string
	cmd       *exec.Cmd
	exited    chan struct{} // closed once its history is read and it is reaped
	err       error         // Wait's, after exited
	stderr    *tail
}

// run is the state of one torture run.
type run struct {
	cfg    Config
	dsn    string // what the workers open
	driver string
	caps   store.Capabilities
	admin  *store.Store // the coordinator's own Store (nil on SQLite during the load)
	dmids  []int
	devids []int
	rep    *Report

	mu      sync.Mutex
	history []event
	open    map[string]map[int64]string // process prefix → open hold id → name
	procs   []*wproc                    // current process of each slot
	bad     int                         // undecodable history lines (a SIGKILL mid-write)
	stopped map[string]bool
	hello   map[string]bool // processes whose Stores are open
	dupSeen map[string]bool // processes whose duplicate reported its attempt
	// writing: per process, the holdings between their lock check and the
	// return of their guarded write — where a pause does the most harm.
	writing map[string]map[int64]bool
	// troubled is when a fault last touched a slot (-1: all of them).
	troubled map[int]time.Time
	px       *proxies   // nil: no network faults
	srv      *servers   // private servers, nil when the DSN was given
	etcd     *etcdLocks // Config.Locks = LocksEtcd: the private etcd cluster
	// workerBase is the DSN the workers open before their proxies are put
	// in: dsn, or the pooler's.
	workerBase string
	probeID    int64
	probes     sync.WaitGroup
}

// Run runs the torture described by cfg and checks its invariants. The
// error reports a run that could not be carried out (no database, setup
// failed, ctx ended); invariant violations are in the Report (see
// Report.OK), not in the error.
func Run(ctx context.Context, cfg Config) (Report, error) {
	r := &run{open: map[string]map[int64]string{}, stopped: map[string]bool{}, hello: map[string]bool{}, dupSeen: map[string]bool{}, writing: map[string]map[int64]bool{}}
	if cfg.Private == PrivateGalera && cfg.Locks != LocksEtcd {
		return Report{}, fmt.Errorf("torture: private %s needs etcd locks (--locks etcd): a Galera node's GET_LOCK is its own: %w", PrivateGalera, store.ErrInvalid)
	}
	if cfg.Private != "" {
		logf := cfg.Logf
		if logf == nil {
			logf = func(string, ...any) {}
		}
		r.cfg.Logf = logf
		r.cfg.Private = cfg.Private
		err := r.startServers(ctx)
		defer r.srv.cleanup()
		if err != nil {
			return Report{}, err
		}
		cfg.DSN = r.cfg.DSN
	}
	switch cfg.Locks {
	case "":
	case LocksEtcd:
		if r.cfg.Logf == nil {
			r.cfg.Logf = cfg.Logf
			if r.cfg.Logf == nil {
				r.cfg.Logf = func(string, ...any) {}
			}
		}
		lockDSN, err := r.startEtcd(ctx)
		defer r.etcd.cleanup()
		if err != nil {
			return Report{}, err
		}
		cfg.DSN = withParams(cfg.DSN, "lock_dsn", lockDSN)
		if r.workerBase != "" {
			r.workerBase = withParams(r.workerBase, "lock_dsn", lockDSN)
		}
	default:
		return Report{}, fmt.Errorf("torture: locks %q: want %q or none: %w", cfg.Locks, LocksEtcd, store.ErrInvalid)
	}
	d, err := store.ParseDSN(cfg.DSN)
	if err != nil {
		return Report{}, fmt.Errorf("torture: %w", err)
	}
	cfg.defaults(d.Driver)
	rep := Report{Seed: cfg.Seed, DSN: d.Redacted(), Procs: cfg.Procs, Stores: cfg.Stores, Workers: cfg.Workers, Broken: cfg.Broken}
	r.cfg, r.dsn, r.rep = cfg, workerDSN(cfg.DSN, d), &rep
	if r.workerBase == "" {
		r.workerBase = r.dsn
	} else if wd, err := store.ParseDSN(r.workerBase); err == nil {
		r.workerBase = workerDSN(r.workerBase, wd)
	}
	rep.Private = cfg.Private
	rep.LockService = cfg.Locks
	if err := r.setup(ctx); err != nil {
		r.closeAdmin()
		return rep, err
	}
	err = r.load(ctx)
	if err == nil {
		err = r.finish(ctx)
	}
	r.closeAdmin()
	return rep, err
}

// workerDSN is the DSN the workers open: PostgreSQL's lock lease shortened
// to a second unless the DSN sets it, so pauses and kills outlast leases
// within a short run.
func workerDSN(dsn string, d *store.DSN) string {
	if d.Driver != "postgres" || d.Params.Has("lock_lease") || strings.HasPrefix(strings.ToLower(dsn), "dbi:") {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	q := u.Query()
	q.Set("lock_lease", "1s")
	u.RawQuery = q.Encode()
	return u.String()
}

// setup creates the rows the workload needs, with the coordinator's own
// Store; on SQLite it closes it again, since the worker process must own
// the database.
func (r *run) setup(ctx context.Context) error {
	cfg := r.cfg
	admin, err := store.Open(ctx, r.dsn)
	if err != nil {
		return fmt.Errorf("torture: open %s: %w", r.rep.DSN, err)
	}
	r.admin = admin
	info, err := admin.Info(ctx)
	if err != nil {
		return fmt.Errorf("torture: %w", err)
	}
	r.driver = info.Driver
	r.caps = admin.Capabilities()
	r.rep.Backend, r.rep.Server = info.Driver, info.ServerVersion
	r.rep.LockMechanism = r.caps.LockMechanism
	cfg.Logf("torture: %s %s, seed %d", info.Driver, info.ServerVersion, cfg.Seed)

	for _, name := range []string{"torture-a", "torture-b"} {
		dm, err := admin.CreateDomain(ctx, name)
		if errors.Is(err, store.ErrDuplicate) {
			return fmt.Errorf("torture: domain %q exists: run on an empty database: %w", name, err)
		}
		if err != nil {
			return fmt.Errorf("torture: %w", err)
		}
		r.dmids = append(r.dmids, dm.ID)
	}
	h, err := admin.CreateHost(ctx, store.Host{Name: "torture-host", IP: "127.0.0.2", Status: store.HostAlive, HTTPPort: 7500})
	if err != nil {
		return fmt.Errorf("torture: %w", err)
	}
	for i := 0; i < cfg.Devices; i++ {
		dev, err := admin.CreateDevice(ctx, store.Device{HostID: h.ID, Status: store.DeviceAlive, Weight: 100})
		if err != nil {
			return fmt.Errorf("torture: %w", err)
		}
		r.devids = append(r.devids, dev.ID)
	}
	for i := 0; i < cfg.Counters; i++ {
		if err := admin.SetServerSetting(ctx, counterKey(i), "0"); err != nil {
			return fmt.Errorf("torture: %w", err)
		}
	}
	if !r.caps.CrossProcess {
		r.closeAdmin()
	}
	return nil
}

func (r *run) closeAdmin() {
	if r.admin != nil {
		if err := r.admin.Close(); err != nil {
			r.cfg.Logf("torture: close coordinator's store: %v", err)
		}
		r.admin = nil
	}
}

// record appends an event to the history and follows the open holdings of
// each process, for the injector to pick victims.
func (r *run) record(ev event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = append(r.history, ev)
	pfx := procPrefix(ev.P)
	switch ev.K {
	case "grant":
		m := r.open[pfx]
		if m == nil {
			m = map[int64]string{}
			r.open[pfx] = m
		}
		m[ev.H] = ev.N
	case "end":
		delete(r.open[pfx], ev.H)
	case "hello":
		r.hello[pfx] = true
	case "dupowner":
		r.dupSeen[ev.P] = true
	case "guard":
		if r.writing[pfx] == nil {
			r.writing[pfx] = map[int64]bool{}
		}
		r.writing[pfx][ev.H] = true
	case "setdone", "lostpre":
		delete(r.writing[pfx], ev.H)
	}
}

// procPrefix is the process part of a Store's name: "p1.2" of "p1.2s0".
func procPrefix(p string) string {
	if i := strings.LastIndexByte(p, 's'); i > 0 {
		return p[:i]
	}
	return p
}

// start starts the process of a slot, incarnation gen.
func (r *run) start(slot, gen int) (*wproc, error) {
	cfg := r.cfg
	wc := workerConfig{
		Proc: fmt.Sprintf("p%d.%d", slot, gen), DSN: r.slotDSN(slot), Stores: cfg.Stores, Workers: cfg.Workers,
		Seed: cfg.Seed + uint64(slot*7919+gen*104729), Counters: cfg.Counters, Keys: cfg.Keys,
		Dmids: r.dmids, Devids: r.devids, LockTimeout: cfg.LockTimeout, QueueLease: cfg.QueueLease,
		OpTimeout: cfg.OpTimeout, Broken: cfg.Broken,
	}
	p, err := r.spawn(wc)
	if err != nil {
		return nil, err
	}
	p.slot, p.gen = slot, gen
	r.mu.Lock()
	if slot < len(r.procs) {
		r.procs[slot] = p
	} else {
		r.procs = append(r.procs, p)
	}
	r.mu.Unlock()
	cfg.Logf("torture: started %s (pid %d)", p.prefix, p.cmd.Process.Pid)
	return p, nil
}

// spawn starts a process of this program as a torture worker told wc,
// whose history lines join the run's.
func (r *run) spawn(wc workerConfig) (*wproc, error) {
	cfg := r.cfg
	spec, err := json.Marshal(wc)
	if err != nil {
		return nil, err
	}
	argv := cfg.Command
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("torture: find own executable: %w", err)
		}
		argv = []string{exe}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("torture: pipe: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), WorkerEnv+"="+string(spec))
	cmd.ExtraFiles = []*os.File{pw}
	p := &wproc{prefix: wc.Proc, cmd: cmd, exited: make(chan struct{}), stderr: newTail(30)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("torture: start worker: %w", err)
	}
	pw.Close()
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var ev event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				r.mu.Lock()
				r.bad++
				r.mu.Unlock()
				continue
			}
			r.record(ev)
		}
		pr.Close()
		p.err = cmd.Wait()
	}()
	return p, nil
}

// coord records an event of the coordinator's own.
func (r *run) coord(k, prefix string, t time.Time) {
	r.record(event{K: k, P: prefix, T: nanos(t)})
}

// signal sends sig to a process and records it. SIGKILL also waits for
// the process to be reaped, so that its history is complete.
func (r *run) signal(p *wproc, sig syscall.Signal) {
	t := time.Now()
	_ = p.cmd.Process.Signal(sig)
	switch sig {
	case syscall.SIGKILL:
		r.coord("kill", p.prefix, t)
		<-p.exited
	case sigStop:
		r.coord("stop", p.prefix, t)
		r.mu.Lock()
		r.stopped[p.prefix] = true
		r.mu.Unlock()
	case sigCont:
		r.coord("cont", p.prefix, t)
		r.mu.Lock()
		delete(r.stopped, p.prefix)
		r.mu.Unlock()
	}
}

// load runs the tracker processes and the fault injector for cfg.Duration,
// then stops the processes.
func (r *run) load(ctx context.Context) error {
	cfg := r.cfg
	if err := r.startProxies(); err != nil {
		return err
	}
	defer r.closeProxies()
	if err := r.startEtcdProxies(); err != nil {
		return err
	}
	defer r.closeEtcdProxies()
	for i := 0; i < cfg.Procs; i++ {
		if _, err := r.start(i, 0); err != nil {
			r.stopAll()
			return err
		}
	}
	faultsDone := make(chan struct{})
	faultCtx, cancelFaults := context.WithCancel(ctx)
	inj := newInjector(r)
	go func() {
		defer close(faultsDone)
		inj.run(faultCtx)
	}()
	if d := cfg.killPoolerAfter; d > 0 && r.srv != nil && r.srv.bouncer != nil {
		go func() {
			if sleepCtx(faultCtx, d) {
				cfg.Logf("torture: SIGKILL pgbouncer (test)")
				if err := r.srv.bouncer.Kill(); err != nil {
					cfg.Logf("torture: kill pgbouncer: %v", err)
				}
			}
		}()
	}
	start := time.Now()
	timer := time.NewTimer(cfg.Duration)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
	}
	// Faults stop first, so the workers' last operations and the checks
	// run on a quiet database.
	cancelFaults()
	<-faultsDone
	inj.close()
	r.healProxies()
	r.healEtcd()
	r.probes.Wait()
	r.rep.Load = time.Since(start)
	r.stopAll()
	cfg.Logf("torture: load stopped after %v", r.rep.Load.Round(time.Millisecond))
	return ctx.Err()
}

// stopAll ends every process: SIGTERM lets it finish its operations and
// release its locks; one that does not exit in time is killed.
func (r *run) stopAll() {
	r.mu.Lock()
	procs := append([]*wproc(nil), r.procs...)
	r.mu.Unlock()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(sigCont)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-time.After(2*r.cfg.OpTimeout + 10*time.Second):
			r.cfg.Logf("torture: %s did not exit after SIGTERM; killing it", p.prefix)
			r.signal(p, syscall.SIGKILL)
		}
		if p.err != nil {
			// A process stopAll had to kill is reported by the kill; one
			// that failed by itself is a broken run.
			if !signaled(p.err) {
				r.rep.WorkerErrors = append(r.rep.WorkerErrors, fmt.Sprintf("%s: %v\n%s", p.prefix, p.err, p.stderr))
			}
		}
	}
}

// finish drains the replicate queue and checks every invariant.
func (r *run) finish(ctx context.Context) error {
	if err := r.srv.ensureUp(ctx); err != nil {
		return fmt.Errorf("torture: private server down for the checks: %w", err)
	}
	if r.admin == nil {
		admin, err := openRetry(ctx, r.dsn, 0)
		if err != nil {
			return fmt.Errorf("torture: reopen for the checks: %w", err)
		}
		r.admin = admin
	}
	restartErr := r.notePoolerDeaths()
	h := newHistory(r)
	remaining, err := r.drain(ctx, h)
	if err != nil {
		return err
	}
	if err := h.judge(ctx, r.admin, remaining); err != nil {
		return err
	}
	return restartErr
}

// notePoolerDeaths puts the pooler's deaths in the report; a restart that
// failed left the run without its pooler, and is the run's error.
func (r *run) notePoolerDeaths() error {
	var failed error
	for _, d := range r.srv.poolerDeaths() {
		detail := fmt.Sprintf("dead at %s, started again %v later; its log ended:\n%s", stamp(d.from), d.to.Sub(d.from).Round(time.Millisecond), d.log)
		if d.err != nil {
			detail = fmt.Sprintf("dead at %s, not started again: %v; its log ended:\n%s", stamp(d.from), d.err, d.log)
			failed = fmt.Errorf("torture: private pgbouncer died and could not be started again: %w", d.err)
		} else {
			r.rep.PoolerRestarts++
		}
		r.rep.finding("pgbouncer died (the harness's pooler, not a tracker; restarted, not a violation)", detail)
	}
	return failed
}

// drain leases and finishes the replicate queue until it is empty, waiting
// for rows whose leases a kill left behind to come due. Its leases join the
// history.
func (r *run) drain(ctx context.Context, h *history) (int64, error) {
	st := r.admin
	deadline := time.Now().Add(r.cfg.QueueLease + 3*time.Second)
	backoff := 10 * time.Millisecond
	for {
		call := time.Now()
		items, err := st.Lease(ctx, store.QueueReplicate, 100, r.cfg.QueueLease)
		if err != nil {
			return 0, fmt.Errorf("torture: drain: %w", err)
		}
		if len(items) > 0 {
			backoff = 10 * time.Millisecond
			ev := event{K: "leased", P: "drain", S: nanos(call), T: nanos(time.Now()), H: 1}
			for _, it := range items {
				ev.Fids = append(ev.Fids, it.Fid)
				ev.Until = append(ev.Until, nanos(it.NextTry))
			}
			h.add(ev)
			for i, it := range items {
				h.add(event{K: "letgo", P: "drain", H: int64(1 + i), Fid: it.Fid, T: nanos(time.Now())})
				err := st.Finish(ctx, store.QueueReplicate, it.Fid)
				h.add(event{K: "finished", P: "drain", Fid: it.Fid, E: kindOf(err), T: nanos(time.Now())})
				if err != nil {
					return 0, fmt.Errorf("torture: drain: %w", err)
				}
			}
			continue
		}
		left, err := st.QueueLength(ctx, store.QueueReplicate)
		if err != nil {
			return 0, fmt.Errorf("torture: drain: %w", err)
		}
		if left == 0 || time.Now().After(deadline) {
			return left, nil
		}
		// Rows are leased out until a whole second of database clock
		// passes; poll until they come due.
		if !sleepCtx(ctx, backoff) {
			return left, ctx.Err()
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// tail keeps the last lines written to it.
type tail struct {
	mu    sync.Mutex
	n     int
	lines []string
	part  string
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.part + string(b)
	parts := strings.Split(s, "\n")
	t.part = parts[len(parts)-1]
	t.lines = append(t.lines, parts[:len(parts)-1]...)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(append(append([]string(nil), t.lines...), t.part), "\n")
}

// signaled reports whether a process that exited with err was ended by a
// signal.
func signaled(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}
