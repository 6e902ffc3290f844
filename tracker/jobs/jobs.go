package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// Job class names, as !jobs and !want know them.
const (
	JobReplicate = "replicate"
	JobDelete    = "delete"
	JobFsck      = "fsck"
	JobReaper    = "reaper"
	JobMonitor   = "monitor"
	JobMaster    = "job_master"
)

// Options configures a Manager. Zero fields take DefaultOptions' values,
// except the worker counts and StreamPort, where 0 means none, and the
// booleans. Settings and Nodes take their defaults field by field.
type Options struct {
	ReplicateWorkers, DeleteWorkers, FsckWorkers int

	ReaperInterval  time.Duration // dead devices and old tempfiles
	MonitorInterval time.Duration // device usage and reachability
	QueuePoll       time.Duration // idle queue workers and the job master look again this often
	TempFileTTL     time.Duration // tempfiles older than this are reaped

	// HTTPClient talks to storage nodes; nil: cluster.NewHTTPClient(Nodes).
	HTTPClient *http.Client `json:"-"`
	// Nodes are conn_timeout, node_timeout and conn_pool_size for the
	// storage-node client (zero fields: the original's defaults). The
	// tracker passes its own, so workers and commands wait alike.
	Nodes cluster.NodeConfig
	// Settings are min_free_space and default_mindevcount, as the
	// tracker's commands use them. The zero value takes
	// cluster.DefaultSettings field by field.
	Settings cluster.Settings
	// RebalanceIgnoreMissing is rebalance_ignore_missing: a moved file's
	// source copy that is already gone (404) counts as deleted; without it
	// the move fails and the source device stays in file_on, as in the
	// original.
	RebalanceIgnoreMissing bool
	// ReplUseGetPort is repl_use_get_port: replication reads the source
	// copy from its host's http_get_port rather than its http_port.
	ReplUseGetPort bool
	// Namespace is the namespace cache to read hosts, devices and classes
	// through; the tracker shares its own so that clear_cache and its
	// changes reach the workers at once. Nil: a cache of NamespaceTTL.
	Namespace *cluster.Cache `json:"-"`
	// NamespaceTTL is how long a namespace read is reused when Namespace
	// is nil (namespace_cache_ttl); 0: cluster.DefaultCacheTTL.
	NamespaceTTL time.Duration
	Logger       *slog.Logger `json:"-"` // nil: slog.Default()

	// NoReaper is reaper_jobs = 0: this tracker reaps nothing (another
	// tracker on the database may).
	NoReaper bool

	// NoJobMaster is like mogilefsd --no-job_master: this tracker injects
	// nothing into the fsck and rebalance queues (and drains nothing); it
	// still works the queues.
	NoJobMaster bool

	// Hostname is how this tracker names itself in fsck_host and
	// rebal_host (the original's Sys::Hostname); "" = os.Hostname().
	Hostname string
	// Lease is how long a leased queue row stays hidden from other
	// trackers; it bounds how long a crashed tracker delays an item.
	Lease time.Duration
	// PassTimeout bounds one pass of the monitor, the reaper and the job
	// master, and one Lease call, so that a hung database or storage node
	// delays a loop rather than stopping it for good. (A queue item is
	// bounded by Lease.)
	PassTimeout time.Duration
	// CloseGrace is how long Close lets in-flight items finish before
	// cancelling and handing them back.
	CloseGrace time.Duration
	// Testing is the original's TESTING environment variable: a failed
	// replication is retried after 1 s instead of the back-off, and
	// FakeIOUtil applies.
	Testing bool
	// FakeIOUtil overrides the I/O utilisation the monitor reports for a
	// device (the original's T_FAKE_IO_DEV<N>=<pct>), while Testing is set;
	// it steers get_paths ordering as a real figure would.
	FakeIOUtil map[int]string
	// StreamPort is mogstored_stream_port: the storage nodes' management
	// port, where the monitor watches I/O utilisation. 0 (or less) watches
	// nothing, as mogstored_stream_port = 0 does; DefaultOptions has 7501.
	StreamPort int

	// Process, when set, runs each worker in a process of its own, as
	// 2.73 did: it returns the command that starts one worker of a job
	// class — the tracker's own binary with WorkerArgs, whose main calls
	// RunWorker. The Manager adds the connection (fd 3) and supervises the
	// process (proc.go). Nil: workers are goroutines of this process.
	// HTTPClient, Namespace and Logger do not cross into a process: it
	// builds its client from Nodes and its own cache (invalidated with
	// this Manager's), and its records are logged by Logger here.
	Process func(jobClass string) *exec.Cmd `json:"-"`
	// Watchdog is how long a worker process may be silent before it is
	// killed and replaced; 0: 2.73's watchdog_timeout of its job (30 s for
	// the monitor, 90 s to 240 s for the others).
	Watchdog time.Duration

	// only is set in a worker process: the one job class it runs, one
	// worker of, whatever a job master would gate.
	only string
}

// DefaultOptions are the original's defaults (mogilefsd.conf: replicate_jobs
// 1, delete_jobs 1, fsck_jobs 1, mogstored_stream_port 7501;
// T_TEMPFILE_TOO_OLD 3600 s; monitor every 2.5 s; reaper every 5 s).
func DefaultOptions() Options {
	return Options{
		ReplicateWorkers: 1,
		DeleteWorkers:    1,
		FsckWorkers:      1,
		ReaperInterval:   5 * time.Second,
		MonitorInterval:  2500 * time.Millisecond,
		QueuePoll:        time.Second,
		TempFileTTL:      time.Hour,
		Lease:            10 * time.Minute,
		CloseGrace:       5 * time.Second,
		PassTimeout:      time.Minute,
		StreamPort:       defaultStreamPort,
	}
}

// JobStat is one job class's line in !jobs / !stats.
type JobStat struct {
	Name string
	// Processes says the workers are processes (Options.Process); Pids
	// are then the running ones' process ids (empty while one starts).
	// Goroutine workers have none.
	Processes bool
	Pids      []int
	Wanted    int
	Running   int
	Started   bool  // it has had a worker since Open
	Processed int64 // items handled (queue rows, passes of a loop)
	Errors    int64
}

// Manager owns the workers of one tracker.
type Manager struct {
	st      *store.Store
	opts    Options
	log     *slog.Logger
	nodes   *cluster.Nodes
	ns      *cluster.Cache
	ownHTTP bool // the client is ours: Close drops its idle connections
	obs     *observations
	watch   *watchers // nil: StreamPort <= 0
	downLog *downLog  // the monitor's failure lines, one per change
	host    string

	mu        sync.Mutex
	opened    bool
	isClosed  bool
	leaseCtx  context.Context // cancelled first on Close: stop leasing
	leaseStop context.CancelFunc
	workCtx   context.Context // cancelled after the grace: abandon items
	workStop  context.CancelFunc
	wg        sync.WaitGroup
	classes   map[string]*jobClass
	// sent counts the rows leased from each queue (work_sent_to_<job>).
	sent map[store.Queue]*atomic.Int64
	// procMu guards procs, the worker processes running (Options.Process).
	procMu sync.Mutex
	procs  map[*proc]struct{}
	// publish, in the monitor's worker process, sends the observations to
	// the tracker at a pass's start and end ("pass_start", "pass_done").
	publish func(kind string)
	// tempfileBudget is how long one reaper pass reads expired tempfiles
	// before it yields to the dead devices and starts over (reaper.go).
	tempfileBudget time.Duration
}

// jobClass counts one job class and tracks its running workers, as the
// original's ProcManager tracked each job's children.
type jobClass struct {
	name string
	// most is how many workers the class may have (monitor and
	// job_master: 1, as the original's request_job_process allows); 0: no
	// bound but !want's own.
	most int
	// needsMaster: the class runs only while a job master is wanted, as the
	// original spawns no replicate, delete or fsck child without one.
	needsMaster bool
	want        int
	workers     []*worker
	// dying are the workers a !to :shutdown stopped, until the supervisor
	// sees them gone (control.go).
	dying []*worker
	// started: the class has had a worker; !jobs lists only those, as the
	// original lists the jobs it has had children for.
	started   bool
	running   atomic.Int64
	processed atomic.Int64
	errors    atomic.Int64
	run       func(stop context.Context) // worker body
}

// New builds a Manager; it starts nothing until Open.
func New(st *store.Store, opts Options) *Manager {
	def := DefaultOptions()
	if opts.ReaperInterval <= 0 {
		opts.ReaperInterval = def.ReaperInterval
	}
	if opts.MonitorInterval <= 0 {
		opts.MonitorInterval = def.MonitorInterval
	}
	if opts.QueuePoll <= 0 {
		opts.QueuePoll = def.QueuePoll
	}
	if opts.TempFileTTL <= 0 {
		opts.TempFileTTL = def.TempFileTTL
	}
	if opts.Lease <= 0 {
		opts.Lease = def.Lease
	}
	if opts.PassTimeout <= 0 {
		opts.PassTimeout = def.PassTimeout
	}
	if opts.CloseGrace <= 0 {
		opts.CloseGrace = def.CloseGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	defSet := cluster.DefaultSettings()
	if opts.Settings.MinFreeMB == 0 {
		opts.Settings.MinFreeMB = defSet.MinFreeMB
	}
	if opts.Settings.DefaultMinDevCount <= 0 {
		opts.Settings.DefaultMinDevCount = defSet.DefaultMinDevCount
	}
	ns := opts.Namespace
	if ns == nil {
		ns = cluster.NewCache(st, opts.NamespaceTTL)
	}
	host := opts.Hostname
	if host == "" {
		host, _ = os.Hostname()
	}
	m := &Manager{
		st:      st,
		opts:    opts,
		log:     opts.Logger.With("component", "jobs"),
		nodes:   cluster.NewNodes(opts.Nodes, opts.HTTPClient),
		ns:      ns,
		ownHTTP: opts.HTTPClient == nil,
		obs:     newObservations(),
		downLog: newDownLog(),
		host:    host,
		sent:    map[store.Queue]*atomic.Int64{},
		procs:   map[*proc]struct{}{},

		tempfileBudget: opts.PassTimeout / 2,
	}
	for _, q := range []store.Queue{store.QueueReplicate, store.QueueDelete, store.QueueFsck, store.QueueRebalance} {
		m.sent[q] = new(atomic.Int64)
	}
	if opts.StreamPort > 0 {
		m.watch = newWatchers(m.obs, opts.StreamPort, m.log.With("job", JobMonitor))
	}
	m.classes = m.newClasses()
	return m
}

// newClasses is the job classes with their wanted counts and bodies: a
// goroutine's loop, or (Options.Process) a process running it; in a worker
// process (only), the one class it runs.
func (m *Manager) newClasses() map[string]*jobClass {
	opts := m.opts
	classes := map[string]*jobClass{
		JobReplicate: {name: JobReplicate, needsMaster: true, want: max(opts.ReplicateWorkers, 0)},
		JobDelete:    {name: JobDelete, needsMaster: true, want: max(opts.DeleteWorkers, 0)},
		JobFsck:      {name: JobFsck, needsMaster: true, want: max(opts.FsckWorkers, 0)},
		JobReaper:    {name: JobReaper, want: 1},
		JobMonitor:   {name: JobMonitor, most: 1, want: 1},
		JobMaster:    {name: JobMaster, most: 1, want: 1},
	}
	if opts.NoJobMaster {
		classes[JobMaster].want = 0
	}
	if opts.NoReaper {
		classes[JobReaper].want = 0
	}
	classes[JobReplicate].run = m.replicateWorker
	classes[JobDelete].run = m.deleteWorker
	classes[JobFsck].run = m.fsckWorker
	classes[JobMonitor].run = m.monitorLoop
	classes[JobReaper].run = m.reaperLoop
	classes[JobMaster].run = m.jobMasterLoop
	if opts.only != "" {
		for name, jc := range classes {
			jc.want = 0
			if name == opts.only {
				jc.want = 1
			}
		}
	}
	if opts.Process != nil {
		for _, jc := range classes {
			jc.run = func(stop context.Context) { m.runProcess(stop, jc) }
		}
	}
	return classes
}

// Open starts the workers. The monitor runs first; workers that need to
// know which devices are reachable wait for its first pass, as the original
// waits for monitor_has_run. ctx is not retained: Close stops everything.
func (m *Manager) Open(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.isClosed {
		return fmt.Errorf("jobs: open: %w", store.ErrClosed)
	}
	if m.opened {
		return errors.New("jobs: open: already open")
	}
	if err := m.st.Ping(ctx); err != nil {
		return fmt.Errorf("jobs: open: %w", err)
	}
	m.opened = true
	m.leaseCtx, m.leaseStop = context.WithCancel(context.WithoutCancel(ctx))
	m.workCtx, m.workStop = context.WithCancel(context.WithoutCancel(ctx))

	m.reconcileLocked(true)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.supervise(m.leaseCtx)
	}()
	return nil
}

// Stats reports every job class, sorted by name.
func (m *Manager) Stats() []JobStat {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]JobStat, 0, len(m.classes))
	for _, jc := range m.classes {
		var pids []int
		for _, w := range jc.workers {
			if pid := w.pid.Load(); pid > 0 {
				pids = append(pids, int(pid))
			}
		}
		out = append(out, JobStat{
			Name:      jc.name,
			Processes: m.opts.Process != nil,
			Pids:      pids,
			Started:   jc.started,
			Wanted:    jc.want,
			Running:   int(jc.running.Load()),
			Processed: jc.processed.Load(),
			Errors:    jc.errors.Load(),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// WorkCounters are the original's "!stats" queue counters, ProcManager's
// work_queue_for_<job> and work_sent_to_<job>, for each queue whose rows
// this tracker's workers have been handed: replicate, delete, fsck and
// rebalance (which the replicate workers work), as the job master named
// them. work_sent_to_ counts the rows leased. work_queue_for_ is the work
// waiting between the job master and a worker, always 0 here: workers
// lease rows straight from the database, so nothing waits in the tracker.
// As in the original, a queue shows up once it has had work.
func (m *Manager) WorkCounters() map[string]int64 {
	out := map[string]int64{}
	for q, n := range m.sent {
		if v := n.Load(); v > 0 {
			out["work_queue_for_"+q.String()] = 0
			out["work_sent_to_"+q.String()] = v
		}
	}
	return out
}

// Namespace is the namespace cache the workers read through (Options.Namespace
// or their own): the tracker shares it, so that its changes and
// clear_cache reach the workers at once.
func (m *Manager) Namespace() *cluster.Cache { return m.ns }

// Observe is the monitor's view of a device, as the cluster model's
// predicates take it.
func (m *Manager) Observe(devid int) cluster.Observation {
	o := m.obs.observe(devid)
	if v, ok := m.opts.FakeIOUtil[devid]; ok && m.opts.Testing {
		o.Utilization, o.UtilizationOK = v, true
	}
	return o
}

// retryDelay is how long a failed replication waits: the back-off, or 1 s
// under TESTING, as in the original.
func (m *Manager) retryDelay(failcount int) time.Duration {
	if m.opts.Testing {
		return time.Second
	}
	return replicateBackoff(failcount)
}

// Observed is the monitor's view of a device: "writeable", "readable" or
// "unreachable" (a device on an unreachable host is unreachable). ok is
// false before the monitor has looked at it.
func (m *Manager) Observed(devid int) (state string, ok bool) {
	o := m.obs.observe(devid)
	return o.State, o.State != ""
}

// Close stops leasing, gives in-flight items CloseGrace to finish, then
// cancels them; each worker hands its item back due now and releases its
// locks before returning. Close waits for every goroutine. A second Close
// returns nil.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.isClosed {
		m.mu.Unlock()
		return nil
	}
	m.isClosed = true
	if !m.opened {
		m.mu.Unlock()
		return nil
	}
	m.leaseStop()
	for _, jc := range m.classes {
		jc.workers, jc.dying = nil, nil
	}
	m.mu.Unlock()

	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	t := time.NewTimer(m.opts.CloseGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		m.log.Info("close: grace over, handing back in-flight items")
	}
	m.workStop()
	<-done
	if m.ownHTTP {
		m.nodes.CloseIdleConnections()
	}
	return nil
}

// cleanupCtx is for work that must happen even while shutting down:
// handing a row back, releasing a lock.
func cleanupCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// isCtxErr reports errors that only mean "we are stopping".
func isCtxErr(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// release frees a named lock even when ctx is done.
func (m *Manager) release(l store.Lock) {
	ctx, cancel := cleanupCtx()
	defer cancel()
	if err := l.Release(ctx); err != nil && !errors.Is(err, store.ErrLockLost) {
		m.log.Warn("release lock", "lock", l.Name(), "err", err)
	}
}

// queueWorker is the skeleton of replicate, delete and fsck workers: lease
// one due row at a time while stop is live, handle it under the work
// context, and poll every QueuePoll when the queues are empty. handle
// returns false when it found nothing to do in any of its queues.
func (m *Manager) queueWorker(stop context.Context, name string, queues []store.Queue,
	handle func(ctx context.Context, it store.QueueItem) error) {
	jc := m.classes[name]
	log := m.log.With("job", name)
	if !m.waitMonitor(stop) {
		return
	}
	t := time.NewTicker(m.opts.QueuePoll)
	defer t.Stop()
	for {
		worked := false
		for _, q := range queues {
			if stop.Err() != nil {
				return
			}
			// Lease under the work context: a lease granted while a stop
			// interrupts the call would hide the row until it expires.
			lctx, cancel := context.WithTimeout(m.workCtx, m.opts.PassTimeout)
			items, err := m.st.Lease(lctx, q, 1, m.opts.Lease)
			cancel()
			m.sent[q].Add(int64(len(items)))
			if err != nil {
				if !isCtxErr(m.workCtx, err) {
					jc.errors.Add(1)
					log.Error("lease", "queue", q, "err", err)
				}
				break
			}
			for _, it := range items {
				worked = true
				// An item may take as long as its lease hides it from other
				// trackers, no longer: after that another tracker may work
				// it too.
				ictx, cancel := context.WithTimeout(m.workCtx, m.opts.Lease)
				err := handle(ictx, it)
				cancel()
				jc.processed.Add(1)
				if err != nil {
					// Whatever the error says, an item cut short by Close
					// goes back due now rather than waiting out its lease.
					if m.workCtx.Err() != nil {
						m.handBack(it)
						continue
					}
					jc.errors.Add(1)
					log.Warn("item failed", "queue", q, "fid", it.Fid, "err", err)
				}
			}
		}
		if worked {
			continue
		}
		select {
		case <-stop.Done():
			return
		case <-t.C:
		case <-wakeOf(stop):
		}
	}
}

// handBack makes an abandoned row due now so another tracker (or this one
// after a restart) takes it at once instead of after the lease.
func (m *Manager) handBack(it store.QueueItem) {
	ctx, cancel := cleanupCtx()
	defer cancel()
	if err := m.st.Reschedule(ctx, it.Queue, it.Fid, 0, false); err != nil && !errors.Is(err, store.ErrNotFound) {
		m.log.Warn("hand back", "queue", it.Queue, "fid", it.Fid, "err", err)
	}
}

// waitMonitor blocks until the monitor's first pass or ctx's end.
func (m *Manager) waitMonitor(ctx context.Context) bool {
	select {
	case <-m.obs.firstPass:
		return true
	case <-ctx.Done():
		return false
	}
}
