package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlite"
)

// WorkerEnv is the environment variable that turns a program into a torture
// worker: the coordinator re-executes its own binary (os.Executable) with
// it set to the worker's configuration, and gives it the write end of a
// pipe as file descriptor 3 for its history.
const WorkerEnv = "GOMOGILE_TORTURE_WORKER"

// workerConfig is what a worker process is told.
type workerConfig struct {
	Proc        string // process prefix, "p<slot>.<gen>"
	DSN         string
	Stores      int // Stores opened by this process, each a simulated tracker
	Workers     int // goroutines per Store
	Seed        uint64
	Counters    int
	Keys        int
	Dmids       []int
	Devids      []int
	LockTimeout time.Duration
	QueueLease  time.Duration
	OpTimeout   time.Duration
	Broken      string // negative control: the wrapper to apply to every Store
	// DupOf, when set, makes the process a duplicate of that live
	// process: it opens one Store with DSN, the other's own (same
	// lock_owner identity, same database file), records the outcome as a
	// "dupowner" event of that process and exits.
	DupOf string
}

// MaybeWorker runs the torture worker and exits when the process was started
// as one (WorkerEnv set); otherwise it returns at once. Programs that run
// torture.Run call it first thing in main (tests: in TestMain), so that the
// coordinator can re-execute them as its tracker processes.
func MaybeWorker() {
	spec := os.Getenv(WorkerEnv)
	if spec == "" {
		return
	}
	var cfg workerConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "torture worker: bad %s: %v\n", WorkerEnv, err)
		os.Exit(2)
	}
	out := os.NewFile(3, "history")
	if out == nil {
		fmt.Fprintln(os.Stderr, "torture worker: no history pipe on fd 3")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := workerMain(ctx, cfg, &emitter{w: out})
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "torture worker %s: %v\n", cfg.Proc, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// proc is one worker process's state: its Stores and the fids it knows.
type proc struct {
	cfg   workerConfig
	em    *emitter
	holds atomic.Int64 // hold ids
	rqs   atomic.Int64 // requeue ids
	lids  atomic.Int64 // lease ids
	mu    sync.Mutex
	pool  []int64 // committed fids, for the other operations to pick from
	wg    sync.WaitGroup
}

// workerMain opens the Stores, runs the workload until ctx ends (SIGTERM),
// then releases and closes everything.
func workerMain(ctx context.Context, cfg workerConfig, em *emitter) error {
	if cfg.DupOf != "" {
		dupMain(ctx, cfg, em)
		return nil
	}
	p := &proc{cfg: cfg, em: em}
	var stores []*store.Store
	defer func() {
		for _, st := range stores {
			_ = st.Close()
		}
	}()
	for j := 0; j < cfg.Stores; j++ {
		name := fmt.Sprintf("%ss%d", cfg.Proc, j)
		st, err := openStore(ctx, em, name, cfg.DSN)
		if err != nil {
			return nil // stopped before it could start: the run is over
		}
		if cfg.Broken != "" {
			wst, err := wrapBroken(cfg.Broken, st)
			if err != nil {
				_ = st.Close()
				return err
			}
			st = wst
		}
		stores = append(stores, st)
		em.emit(event{K: "hello", P: name, Msg: st.Capabilities().LockMechanism})
	}
	var wg sync.WaitGroup
	wg.Go(func() { stallWatch(ctx, em, cfg.Proc+"s0") })
	for j, st := range stores {
		for w := 0; w < cfg.Workers; w++ {
			wk := &worker{
				p:    p,
				st:   st,
				name: fmt.Sprintf("%ss%d", cfg.Proc, j),
				rng:  rand.New(rand.NewPCG(cfg.Seed, uint64(j*1000+w+1))),
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				wk.loop(ctx)
			}()
		}
	}
	wg.Wait()
	p.wg.Wait()
	return nil
}

// stallTick and stallMin: the stall watch ticks every stallTick and
// reports a gap of stallMin or more between ticks.
const (
	stallTick = 10 * time.Millisecond
	stallMin  = 100 * time.Millisecond
)

// stallWatch reports, as "stall" events, the spans in which this process's
// Go runtime ran none of its goroutines on time: a machine so loaded that
// the process was not scheduled, a long GC pause, a SIGSTOP. A call cannot
// return during such a span whatever the store does, so the deadline check
// takes it off the call's lateness; a call stuck in the store while the
// process runs is still judged in full.
func stallWatch(ctx context.Context, em *emitter, proc string) {
	t := time.NewTicker(stallTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := time.Now() // not the tick's own stamp: that is when it was due
			if gap := now.Sub(last); gap >= stallMin {
				em.emit(event{K: "stall", P: proc, S: nanos(last.Add(stallTick)), T: nanos(now)})
			}
			last = now
		}
	}
}

// dupMain is a duplicate process's one attempt: a Store opened with the
// identity of a live one must be refused (PostgreSQL: store.ErrDuplicate,
// the owner renews its lease; SQLite: sqlite.ErrInUse, the owner holds the
// file). Msg is empty when it was refused so, "accepted" when it opened.
func dupMain(ctx context.Context, cfg workerConfig, em *emitter) {
	octx, cancel := context.WithTimeout(ctx, cfg.OpTimeout+5*time.Second)
	defer cancel()
	start := time.Now()
	st, err := store.Open(octx, cfg.DSN)
	ev := event{K: "dupowner", P: cfg.DupOf, S: nanos(start), T: nanos(time.Now()), E: kindOf(err)}
	switch {
	case err == nil:
		_ = st.Close()
		ev.Msg = "accepted"
	case !errors.Is(err, store.ErrDuplicate) && !errors.Is(err, sqlite.ErrInUse):
		ev.Msg = err.Error()
	}
	em.emit(ev)
}

// OpenBound is how long a tracker process may take to open each of its
// Stores, from its first attempt, not counting the time the database or
// the pooler in front of it was down or the process paused: a new process
// of a slot takes its lock_owner identity over from the killed one within
// a lease, and an Open through faults that come and go succeeds within a
// few attempts. The run checks it ("every tracker process opened its
// Stores within OpenBound"); the worker itself never gives up.
const OpenBound = 30 * time.Second

// openAttempt bounds one attempt to open a Store, so that one stuck on a
// connection the faults broke (a blackholed proxy, a pooler that holds a
// login while its server restarts) leaves time for more.
const openAttempt = 10 * time.Second

// openStore opens the Store name of this process, retrying until it is
// open or ctx ends; the run judges how long it took against OpenBound.
// It records the first attempt ("openstart"), the success ("opened"), or,
// when ctx ended first, the last error ("openfail").
func openStore(ctx context.Context, em *emitter, name, dsn string) (*store.Store, error) {
	start := time.Now()
	em.emit(event{K: "openstart", P: name, S: nanos(start), T: nanos(start)})
	st, err := openRetry(ctx, dsn, openAttempt)
	if err != nil {
		em.emit(event{K: "openfail", P: name, S: nanos(start), E: kindOf(err), Msg: err.Error()})
		return nil, err
	}
	em.emit(event{K: "opened", P: name, S: nanos(start)})
	return st, nil
}

// openRetry opens a Store, retrying while the database is down (a crash,
// a partition) until ctx ends, each attempt bounded by attempt (0: none).
// When ctx ends first its error is the last attempt's that ctx did not
// cut short.
func openRetry(ctx context.Context, dsn string, attempt time.Duration) (*store.Store, error) {
	backoff := 20 * time.Millisecond
	var last error
	for {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if attempt > 0 {
			actx, cancel = context.WithTimeout(ctx, attempt)
		}
		st, err := store.Open(actx, dsn)
		cancel()
		if err == nil {
			return st, nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		if !sleepCtx(ctx, backoff) {
			return nil, fmt.Errorf("open: %w", last)
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func (p *proc) addPool(fid int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pool = append(p.pool, fid)
}

func (p *proc) unpool(fid int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, f := range p.pool {
		if f == fid {
			p.pool[i] = p.pool[len(p.pool)-1]
			p.pool = p.pool[:len(p.pool)-1]
			return
		}
	}
}

func (p *proc) pick(rng *rand.Rand) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pool) == 0 {
		return 0, false
	}
	return p.pool[rng.IntN(len(p.pool))], true
}
