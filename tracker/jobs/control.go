package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Job control follows the original's process model with goroutines in
// place of forked children: every job class has a desired count (!want)
// and as many workers as that count, each worker has a mailbox for !to
// messages, and the queue workers (replicate, delete, fsck) run only while
// a job master is wanted. A worker that a message shuts down is replaced
// by the supervisor, as the original's parent respawned a child that
// exited; the lines the original's parent logged on either event are
// logged the same, and from the same place: the supervisor's loop, after
// the request that caused them, never inside it.

// worker is one running goroutine of a job class.
type worker struct {
	stop    context.CancelFunc
	wake    chan struct{} // :wake_up; buffered 1, so a wake is never lost
	done    chan struct{} // closed when its goroutine has returned
	stopped time.Time     // when a :shutdown stopped it
	// pid is its process's id when workers are processes (0 until it
	// started, and for goroutines); status is how that process ended
	// (waitStatus), set before done closes.
	pid, status atomic.Int64
}

// superviseEvery is how often the supervisor looks for workers that a
// :shutdown ended, as the original's parent ran its loop once a second.
// reapAfter is the least time between a worker's stop and the lines that
// report it: the original's parent noticed a child's death in that loop,
// never within the request that caused it, so a watcher that connects
// around the request (a script's "!watch" just before its "!to … :shutdown"
// on another connection) still sees "Child N (job) died" and "Job X has
// only 0, wants 1" — logged inside the request, they came before it.
const (
	superviseEvery = 250 * time.Millisecond
	reapAfter      = 500 * time.Millisecond
)

// supervise reaps the workers a :shutdown stopped once they have returned,
// logging each death, and replaces them, until ctx ends.
func (m *Manager) supervise(ctx context.Context) {
	t := time.NewTicker(superviseEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.mu.Lock()
		if !m.isClosed {
			m.reapLocked(time.Now())
		}
		m.mu.Unlock()
	}
}

// reapLocked logs and forgets the dying workers that have returned and
// were stopped at least reapAfter before now, then starts their
// replacements. m.mu is held.
func (m *Manager) reapLocked(now time.Time) {
	reaped := false
	for _, name := range []string{JobMonitor, JobReaper, JobMaster, JobReplicate, JobDelete, JobFsck} {
		jc := m.classes[name]
		left := jc.dying[:0]
		for _, w := range jc.dying {
			select {
			case <-w.done:
				if now.Sub(w.stopped) >= reapAfter {
					m.logDeath(jc, w)
					reaped = true
					continue
				}
			default:
			}
			left = append(left, w)
		}
		jc.dying = left
		// A worker process that ended unasked (killed, the watchdog,
		// crashed) is replaced, as 2.73's parent replaced a dead child.
		alive := jc.workers[:0]
		for _, w := range jc.workers {
			select {
			case <-w.done:
				m.logDeath(jc, w)
				reaped = true
				continue
			default:
			}
			alive = append(alive, w)
		}
		jc.workers = alive
	}
	if reaped {
		m.reconcileLocked(false)
	}
}

// logDeath logs a worker's end with 2.73's line: its pid (a goroutine has
// none of its own; the tracker's stands in) and its exit status as Perl's
// $? reads (the killing signal, or the exit code times 256).
func (m *Manager) logDeath(jc *jobClass, w *worker) {
	pid := int(w.pid.Load())
	if pid == 0 {
		pid = os.Getpid()
	}
	m.log.Warn(fmt.Sprintf("Child %d (%s) died: %d (UNEXPECTED)", pid, jc.name, w.status.Load()))
}

type workerKey struct{}

// wakeOf is the channel a worker's idle wait also watches: a !to ":wake_up"
// ends the wait early, as it ended the original worker's sleep. Nil (never
// ready) for code not running as a worker.
func wakeOf(ctx context.Context) <-chan struct{} {
	if w, ok := ctx.Value(workerKey{}).(*worker); ok {
		return w.wake
	}
	return nil
}

// effectiveLocked is how many workers jc should have now.
func (m *Manager) effectiveLocked(jc *jobClass) int {
	if jc.needsMaster && m.opts.only == "" && m.classes[JobMaster].want == 0 {
		return 0
	}
	return jc.want
}

// reconcileLocked starts or stops workers of every class to match their
// effective counts. A stopped worker finishes its current item first.
// m.mu is held and the Manager is open. Each class short of workers is
// logged with the original's "Job X has only N, wants M" line, as after a
// worker died or !want raised a count, unless atOpen: starting the workers
// asked for is no shortfall, and Open used to log six such warnings every
// start.
func (m *Manager) reconcileLocked(atOpen bool) {
	// The monitor first, then the others, as the original starts the rest
	// after the monitor; the job master before the workers it gates.
	for _, name := range []string{JobMonitor, JobReaper, JobMaster, JobReplicate, JobDelete, JobFsck} {
		jc := m.classes[name]
		want := m.effectiveLocked(jc)
		// A worker a :shutdown stopped counts until the supervisor has
		// seen it gone, as the original's parent counted a child until
		// it reaped it.
		have := len(jc.workers) + len(jc.dying)
		if need := want - have; need > 0 && !atOpen {
			m.log.Warn(fmt.Sprintf("Job %s has only %d, wants %d, making %d.", jc.name, have, want, need))
		}
		for ; have < want; have++ {
			m.startWorkerLocked(jc)
		}
		for ; have > want && len(jc.workers) > 0; have-- {
			last := len(jc.workers) - 1
			jc.workers[last].stop()
			jc.workers = jc.workers[:last]
		}
	}
}

func (m *Manager) startWorkerLocked(jc *jobClass) {
	stopCtx, stop := context.WithCancel(m.leaseCtx)
	w := &worker{stop: stop, wake: make(chan struct{}, 1), done: make(chan struct{})}
	stopCtx = context.WithValue(stopCtx, workerKey{}, w)
	jc.workers = append(jc.workers, w)
	jc.started = true
	jc.running.Add(1)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(w.done)
		defer jc.running.Add(-1)
		jc.run(stopCtx)
	}()
}

// SetWant sets how many workers of a job class run (!want). Every class
// can be set, 0 included; monitor and job_master take at most 1, as in the
// original, whose request_job_process ignores more (ErrInvalid here, and
// nothing changes). Setting job_master to 0 stops the replicate, delete
// and fsck workers too; setting it back to 1 starts them again.
func (m *Manager) SetWant(jobClass string, n int) error {
	if n < 0 {
		return fmt.Errorf("jobs: want %s %d: %w", jobClass, n, store.ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	jc, ok := m.classes[jobClass]
	if !ok {
		return fmt.Errorf("jobs: want %q: not a job class: %w", jobClass, store.ErrInvalid)
	}
	if jc.most > 0 && n > jc.most {
		return fmt.Errorf("jobs: want %d %s: at most %d: %w", n, jobClass, jc.most, store.ErrInvalid)
	}
	if m.isClosed {
		return fmt.Errorf("jobs: want %s: %w", jobClass, store.ErrClosed)
	}
	jc.want = n
	if m.opened {
		m.reconcileLocked(false)
	}
	return nil
}

// Classes are the job class names, sorted, as the original's !want lists
// them in its error.
func (m *Manager) Classes() []string {
	return []string{JobDelete, JobFsck, JobMaster, JobMonitor, JobReaper, JobReplicate}
}

// Message delivers a !to message to every running worker of jobClass and
// returns how many it reached, as the original's ImmediateSendToChildrenByJob.
// ":shutdown" ends each worker (after its current item), and a new one
// takes its place, as the original respawned a child that exited on it;
// ":wake_up" ends a worker's idle wait so that it looks for work now. The
// original's other worker messages are internal to its process model and
// change nothing here.
func (m *Manager) Message(jobClass, msg string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	jc, ok := m.classes[jobClass]
	if !ok || !m.opened || m.isClosed {
		return 0
	}
	n := len(jc.workers)
	switch {
	case strings.HasPrefix(msg, ":shutdown"):
		now := time.Now()
		for _, w := range jc.workers {
			w.stop()
			w.stopped = now
		}
		jc.dying = append(jc.dying, jc.workers...)
		jc.workers = nil
	case strings.HasPrefix(msg, ":wake_up"):
		for _, w := range jc.workers {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	return n
}

// SetLogger replaces the logger given in Options; it must be called before
// Open. The tracker passes the logger whose warnings reach "!watch".
func (m *Manager) SetLogger(l *slog.Logger) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opened {
		return
	}
	m.opts.Logger = l
	m.log = l.With("component", "jobs")
	if m.watch != nil {
		m.watch.log = m.log.With("job", JobMonitor)
	}
}

// MonitorRound is clear_cache and do_monitor_round: it drops the workers'
// namespace cache, makes the monitor start a pass now, and returns once a
// pass that started after the call has completed, so that every worker sees
// what the database said at the time of the call (class hash types, device
// states) and the monitor's view of every device is fresh, as the original
// answers only after its monitor ran. It waits at most until ctx ends (the
// request's deadline): with no monitor running (!want 0 monitor) that is
// how it ends, where the original waited for ever. Before Open or after
// Close it only drops the cache.
func (m *Manager) MonitorRound(ctx context.Context) error {
	m.ns.Invalidate()
	m.obs.mu.Lock()
	target := m.obs.started + 1 // read before the wake: that pass starts after this call
	m.obs.mu.Unlock()
	m.mu.Lock()
	if !m.opened || m.isClosed {
		m.mu.Unlock()
		return nil
	}
	for _, w := range m.classes[JobMonitor].workers {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	m.mu.Unlock()
	for {
		m.obs.mu.Lock()
		done, ch := m.obs.completed >= target, m.obs.passDone
		m.obs.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("jobs: monitor round: %w", ctx.Err())
		}
	}
}
