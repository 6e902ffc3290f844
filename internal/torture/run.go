package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
	// The backends a DSN may name.
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// Config is one torture run. Zero fields take the defaults noted.
type Config struct {
	DSN        string        // the database; required
	Duration   time.Duration // how long load and faults run (10s)
	Trackers   int           // simulated trackers, each an independently opened Store (3)
	Workers    int           // workers per tracker (4)
	KillEvery  time.Duration // kill database sessions this often (0 = never)
	CrashEvery time.Duration // close a tracker holding locks this often (0 = never)
	Seed       uint64        // drives every random choice (0 = from the clock; the Report says which)

	Counters    int           // lock-guarded counters (4)
	Keys        int           // keys per domain; few, so commits replace each other (40)
	Devices     int           // devices for file_on (6)
	LockTimeout time.Duration // workers' Lock timeout (1s)
	QueueLease  time.Duration // replicate-queue lease (2s; the database rounds to seconds)
	// LostSlack is added to a backend's documented bound on a late Lost
	// notice, for scheduling delays on a loaded machine (100ms). Backends
	// held to promise 8 exactly get none.
	LostSlack time.Duration
	// ClockSkew is how far the database's clock may be from ours when lease
	// expiry is compared (0: the database runs on this host).
	ClockSkew time.Duration
	// OpTimeout bounds each operation (10s).
	OpTimeout time.Duration

	// Logf, if set, receives progress: faults and phases.
	Logf func(format string, args ...any)
	// Wrap, if set, wraps every tracker's Store (not the checker's): tests
	// use it to break a real Store on purpose and see an invariant trip.
	Wrap func(store.Store) store.Store
}

func (c *Config) defaults() {
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
	def(&c.Trackers, 3)
	def(&c.Workers, 4)
	def(&c.Counters, 4)
	def(&c.Keys, 40)
	def(&c.Devices, 6)
	defd(&c.LockTimeout, time.Second)
	defd(&c.QueueLease, 2*time.Second)
	defd(&c.LostSlack, 100*time.Millisecond)
	defd(&c.OpTimeout, 10*time.Second)
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// tracker is one incarnation of a simulated tracker: a Store and its name.
// A crash replaces it in its slot by a new incarnation.
type tracker struct {
	slot    *slot
	gen     int
	st      store.Store
	crashed bool // guarded by lockLog.mu
}

func (t *tracker) String() string { return fmt.Sprintf("t%d.%d", t.slot.idx, t.gen) }

// slot is a tracker position: its workers follow whichever incarnation is
// current.
type slot struct {
	idx     int
	mu      sync.Mutex
	cur     *tracker
	changed chan struct{} // closed when cur is replaced
}

func (s *slot) current() *tracker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// replace installs a new incarnation and wakes workers waiting on the old.
func (s *slot) replace(st store.Store) *tracker {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := 0
	if s.cur != nil {
		gen = s.cur.gen + 1
	}
	s.cur = &tracker{slot: s, gen: gen, st: st}
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
	return s.cur
}

// waitReplaced blocks until old is no longer current, or stop or ctx ends.
func (s *slot) waitReplaced(ctx context.Context, old *tracker, stop <-chan struct{}) {
	s.mu.Lock()
	if s.cur != old {
		s.mu.Unlock()
		return
	}
	ch := s.changed
	s.mu.Unlock()
	select {
	case <-ch:
	case <-stop:
	case <-ctx.Done():
	}
}

// run is the state of one torture run.
type run struct {
	cfg      Config
	dsn      string
	admin    store.Store // the checker's own Store, never wrapped or crashed
	driver   string
	slots    []*slot
	dmids    []int
	devids   []int
	ops      *opLog
	locks    *lockLog
	counters *counterLog
	files    *fileLog
	queue    *queueLog
	rep      *Report
	faultsMu sync.Mutex
}

// Run runs the torture described by cfg and checks its invariants. The
// error reports a run that could not be carried out (no database, setup
// failed, ctx ended); invariant violations are in the Report (see
// Report.OK), not in the error.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg.defaults()
	rep := Report{Seed: cfg.Seed, Trackers: cfg.Trackers, Workers: cfg.Workers}
	d, err := store.ParseDSN(cfg.DSN)
	if err != nil {
		return rep, fmt.Errorf("torture: %w", err)
	}
	rep.DSN = d.Redacted()
	r := &run{
		cfg:      cfg,
		dsn:      cfg.DSN,
		ops:      newOpLog(),
		locks:    newLockLog(),
		counters: &counterLog{},
		files:    newFileLog(),
		queue:    newQueueLog(cfg.ClockSkew),
		rep:      &rep,
	}
	if err := r.setup(ctx); err != nil {
		r.closeAll()
		return rep, err
	}
	err = r.load(ctx)
	if err == nil {
		err = r.finish(ctx)
	}
	r.closeAll()
	r.locks.wg.Wait()
	rep.Ops, rep.Samples = r.ops.ops, r.ops.samples
	return rep, err
}

// setup opens the checker's Store and the trackers, and creates the rows
// the workload needs.
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
	r.rep.Backend, r.rep.Server = info.Driver, info.ServerVersion
	r.rep.LockMechanism = admin.Capabilities().LockMechanism
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
	for i := 0; i < cfg.Trackers; i++ {
		s := &slot{idx: i}
		r.slots = append(r.slots, s)
		st, err := r.open(ctx)
		if err != nil {
			return err
		}
		s.replace(st)
	}
	return nil
}

// open opens one more tracker Store, as a separate tracker process would.
func (r *run) open(ctx context.Context) (store.Store, error) {
	st, err := store.Open(ctx, r.dsn)
	if err != nil {
		return nil, fmt.Errorf("torture: open tracker: %w", err)
	}
	if r.cfg.Wrap != nil {
		st = r.cfg.Wrap(st)
	}
	return st, nil
}

// load runs the workers and the fault injector for cfg.Duration.
func (r *run) load(ctx context.Context) error {
	cfg := r.cfg
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range r.slots {
		for w := 0; w < cfg.Workers; w++ {
			wk := &worker{
				r:    r,
				slot: s,
				rng:  rand.New(rand.NewPCG(cfg.Seed, uint64(s.idx*1000+w+1))),
				stop: stop,
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				wk.loop(ctx)
			}()
		}
	}
	faultsDone := make(chan struct{})
	faultCtx, cancelFaults := context.WithCancel(ctx)
	go func() {
		defer close(faultsDone)
		r.inject(faultCtx)
	}()

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
	close(stop)
	wg.Wait()
	r.rep.Load = time.Since(start)
	cfg.Logf("torture: load stopped after %v", r.rep.Load.Round(time.Millisecond))
	return ctx.Err()
}

// finish drains the replicate queue and checks every invariant.
func (r *run) finish(ctx context.Context) error {
	remaining, err := r.drain(ctx)
	if err != nil {
		return err
	}
	bound, doc := lostBound(r.driver)
	if bound > 0 {
		// Only a measured gap needs slack: on a strict backend any
		// overlap is found without a clock (see lockLog.granted).
		bound += r.cfg.LostSlack
	}
	tolerated := r.locks.judge(bound, doc, r.rep)
	if err := r.counters.judge(ctx, r.admin, r.cfg.Counters, tolerated, r.rep); err != nil {
		return fmt.Errorf("torture: check counters: %w", err)
	}
	if err := r.files.judge(ctx, r.admin, r.rep); err != nil {
		return fmt.Errorf("torture: check files: %w", err)
	}
	r.queue.judge(remaining, r.rep)
	return nil
}

// lostBound is how late a backend's package documentation allows Lost to
// fire after the server freed the lock; 0 holds a backend to design §4
// promise 8 exactly.
func lostBound(driver string) (time.Duration, string) {
	switch driver {
	case "mysql", "mariadb":
		return 200 * time.Millisecond, "store/mysql: the watcher's IS_USED_LOCK poll every 200ms bounds Lost, plus a round trip; another tracker may get the lock the instant the server frees it"
	}
	return 0, "design §4 promise 8: Lost fires before another holder can get the lock"
}

// drain leases and finishes the replicate queue until it is empty, waiting
// for rows whose leases a crash left behind to come due.
func (r *run) drain(ctx context.Context) (int64, error) {
	tr := r.slots[0].current()
	deadline := time.Now().Add(r.cfg.QueueLease + 3*time.Second)
	backoff := 10 * time.Millisecond
	for {
		call := time.Now()
		items, err := tr.st.Lease(ctx, store.QueueReplicate, 100, r.cfg.QueueLease)
		r.ops.note("drain_lease", err)
		if err != nil {
			return 0, fmt.Errorf("torture: drain: %w", err)
		}
		if len(items) > 0 {
			backoff = 10 * time.Millisecond
			recs := r.leased(tr, call, items)
			for i, it := range items {
				r.queue.letGo(recs[i])
				err := tr.st.Finish(ctx, store.QueueReplicate, it.Fid)
				r.ops.note("drain_finish", err)
				r.queue.finished(it.Fid, err)
				if err != nil {
					return 0, fmt.Errorf("torture: drain: %w", err)
				}
			}
			continue
		}
		n, err := tr.st.QueueLength(ctx, store.QueueReplicate)
		if err != nil {
			return 0, fmt.Errorf("torture: drain: %w", err)
		}
		if n == 0 || time.Now().After(deadline) {
			return n, nil
		}
		// Rows are leased out until a whole second of database clock
		// passes; poll until they come due.
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return n, ctx.Err()
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

func (r *run) leased(tr *tracker, call time.Time, items []store.QueueItem) []*leaseRec {
	fids := make([]int64, len(items))
	until := make([]time.Time, len(items))
	for i, it := range items {
		fids[i], until[i] = it.Fid, it.NextTry
	}
	return r.queue.leased(tr.String(), call, fids, until, r.files.known)
}

func (r *run) closeAll() {
	for _, s := range r.slots {
		if tr := s.current(); tr != nil {
			if err := tr.st.Close(); err != nil {
				r.cfg.Logf("torture: close %s: %v", tr, err)
			}
		}
	}
	if r.admin != nil {
		if err := r.admin.Close(); err != nil {
			r.cfg.Logf("torture: close checker: %v", err)
		}
	}
}
