package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/storerpc"
)

// Worker processes (Options.Process): each worker runs in a process of its
// own, as 2.73's children did, so that an operator who kills or stops the
// pid "!jobs" lists stops that worker and not the tracker. The tracker end
// is here; the worker's end is RunWorker (worker.go).
//
// The tracker starts the process with one end of a socketpair as its fd 3,
// serves its Store on it (package storerpc: the worker holds no database
// connection of its own, which SQLite's one-process design requires), and
// on the same connection sends the worker its options, the monitor's
// observations, namespace invalidations and !to messages, and receives its
// log records (logged here, so "!watch" and the status page see them), its
// heartbeats and counters, and, from the monitor, its observations. A
// worker silent for longer than its job's watchdog timeout (2.73's, per
// job) is killed; a worker that exits or is killed is replaced by the
// supervisor's loop. The locks a worker holds are released when its
// connection ends, which is when its process has exited.

// heartbeatEvery is how often a worker process says it is alive.
const heartbeatEvery = time.Second

// watchdogTimeouts are 2.73's watchdog_timeout per job: how long a worker
// may be silent before the tracker kills it.
var watchdogTimeouts = map[string]time.Duration{
	JobReplicate: 90 * time.Second,
	JobDelete:    120 * time.Second,
	JobFsck:      120 * time.Second,
	JobMaster:    120 * time.Second,
	JobMonitor:   30 * time.Second,
	JobReaper:    240 * time.Second,
}

// workerHello is the first message a worker process gets.
type workerHello struct {
	Class string             `json:"class"`
	Opts  Options            `json:"opts"`
	Caps  store.Capabilities `json:"caps"`
	Debug bool               `json:"debug"` // relay debug records too
	Obs   *obsSnapshot       `json:"obs,omitempty"`
}

// beat is a worker's heartbeat: its class's counters so far.
type beat struct {
	Processed int64                 `json:"processed"`
	Errors    int64                 `json:"errors"`
	Sent      map[store.Queue]int64 `json:"sent,omitempty"`
}

// logRecord is one of a worker's log records.
type logRecord struct {
	Level slog.Level  `json:"level"`
	Msg   string      `json:"msg"`
	Attrs [][2]string `json:"attrs,omitempty"`
}

// proc is the tracker's view of one worker process.
type proc struct {
	jc   *jobClass
	pid  int
	conn *storerpc.Conn

	lastBeat atomic.Int64 // Unix ns
	mu       sync.Mutex
	counted  beat // the counters already added to the class
}

func (m *Manager) addProc(p *proc) {
	m.procMu.Lock()
	m.procs[p] = struct{}{}
	m.procMu.Unlock()
}

func (m *Manager) dropProc(p *proc) {
	m.procMu.Lock()
	delete(m.procs, p)
	m.procMu.Unlock()
}

// broadcast sends a message to every worker process but except.
func (m *Manager) broadcast(kind string, body any, except *proc) {
	m.procMu.Lock()
	defer m.procMu.Unlock()
	for p := range m.procs {
		if p != except {
			_ = p.conn.Send(kind, body)
		}
	}
}

// runProcess is a worker's body when workers are processes: start one,
// serve it, and return when it has exited (after stop, asked to; else on
// its own, killed, or by the watchdog).
func (m *Manager) runProcess(stop context.Context, jc *jobClass) {
	w, _ := stop.Value(workerKey{}).(*worker)
	ours, theirs, err := socketpair()
	if err != nil {
		m.procFailed(stop, jc, err)
		return
	}
	cmd := m.opts.Process(jc.name)
	cmd.ExtraFiles = []*os.File{theirs}
	started := time.Now()
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		ours.Close()
		m.procFailed(stop, jc, err)
		return
	}
	p := &proc{jc: jc, pid: cmd.Process.Pid}
	p.lastBeat.Store(time.Now().UnixNano())
	if w != nil {
		w.pid.Store(int64(p.pid))
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		if w != nil {
			w.status.Store(int64(waitStatus(cmd.ProcessState)))
		}
		close(exited)
	}()
	p.conn = storerpc.New(ours, m.st, func(kind string, body json.RawMessage) { m.fromProc(p, kind, body) })
	hello := workerHello{Class: jc.name, Opts: m.opts, Caps: m.st.Capabilities(),
		Debug: m.log.Enabled(context.Background(), slog.LevelDebug)}
	if s := m.obs.snapshot(); s.Passed && jc.name != JobMonitor {
		hello.Obs = &s
	}
	_ = p.conn.Send("hello", hello)
	m.addProc(p)
	stopInvalidate := m.ns.OnInvalidate(func() { _ = p.conn.Send("invalidate", nil) })

	m.superviseProc(stop, p, cmd, exited)

	stopInvalidate()
	m.dropProc(p)
	// The process is gone: its connection ends, and with it its locks.
	p.conn.Close()
	p.conn.Wait()
	// One that dies as it starts is replaced at most once a second, as
	// 2.73's parent respawned from its once-a-second loop.
	if left := time.Until(started.Add(minLife)); left > 0 && stop.Err() == nil {
		select {
		case <-stop.Done():
		case <-time.After(left):
		}
	}
}

// minLife is the least time between the starts of a job's worker
// processes.
const minLife = time.Second

// superviseProc forwards !to wake-ups, watches the heartbeat and, on stop,
// asks the worker to finish; it returns once the process has exited.
func (m *Manager) superviseProc(stop context.Context, p *proc, cmd *exec.Cmd, exited <-chan struct{}) {
	timeout := m.opts.Watchdog
	if timeout <= 0 {
		timeout = watchdogTimeouts[p.jc.name]
	}
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	lastTick := time.Now()
	stopDone := stop.Done()
	var killAt <-chan time.Time
	killed := false
	for {
		select {
		case <-exited:
			return
		case <-wakeOf(stop):
			_ = p.conn.Send("wake", nil)
		case <-stopDone:
			_ = p.conn.Send("shutdown", nil)
			stopDone = nil
			t := time.NewTimer(m.opts.CloseGrace + 10*time.Second)
			defer t.Stop()
			killAt = t.C
		case <-killAt:
			m.log.Warn(fmt.Sprintf("Worker %d (%s) did not stop; killing it", p.pid, p.jc.name))
			_ = cmd.Process.Kill()
			killAt = nil
		case <-tick.C:
			now := time.Now() // not the tick's time: a stale tick waits in the channel
			// A tick far behind its time means this process was itself
			// stopped (kill -STOP of the tracker, a VM pause): the
			// worker's heartbeats wait unread in the socket, so its
			// silence is ours, not its own.
			if now.Sub(lastTick) > 3*heartbeatEvery {
				p.lastBeat.Store(now.UnixNano())
			}
			lastTick = now
			silent := time.Since(time.Unix(0, p.lastBeat.Load()))
			if !killed && silent > timeout {
				m.log.Error(fmt.Sprintf("Watchdog killing worker %d (%s)", p.pid, p.jc.name))
				_ = cmd.Process.Kill()
				killed = true
			}
		}
	}
}

// procFailed logs a worker process that could not start and waits a
// second (or until stop) before the supervisor tries again.
func (m *Manager) procFailed(stop context.Context, jc *jobClass, err error) {
	jc.errors.Add(1)
	m.log.Error(fmt.Sprintf("Cannot start a %s worker process", jc.name), "err", err)
	select {
	case <-stop.Done():
	case <-time.After(time.Second):
	}
}

// fromProc handles a message from a worker process.
func (m *Manager) fromProc(p *proc, kind string, body json.RawMessage) {
	p.lastBeat.Store(time.Now().UnixNano())
	switch kind {
	case "log":
		var r logRecord
		if json.Unmarshal(body, &r) != nil {
			return
		}
		attrs := make([]slog.Attr, 0, len(r.Attrs)+1)
		for _, a := range r.Attrs {
			attrs = append(attrs, slog.String(a[0], a[1]))
		}
		attrs = append(attrs, slog.Int("pid", p.pid))
		m.opts.Logger.LogAttrs(context.Background(), r.Level, r.Msg, attrs...)
	case "beat":
		var b beat
		if json.Unmarshal(body, &b) != nil {
			return
		}
		p.mu.Lock()
		p.jc.processed.Add(b.Processed - p.counted.Processed)
		p.jc.errors.Add(b.Errors - p.counted.Errors)
		for q, n := range b.Sent {
			if c := m.sent[q]; c != nil {
				c.Add(n - p.counted.Sent[q])
			}
		}
		p.counted = b
		p.mu.Unlock()
	case "pass_start":
		m.obs.mu.Lock()
		m.obs.started++
		m.obs.mu.Unlock()
	case "obs", "pass_done":
		var s obsSnapshot
		if json.Unmarshal(body, &s) != nil {
			return
		}
		m.obs.load(s)
		if kind == "pass_done" {
			m.obs.mu.Lock()
			m.obs.completed = m.obs.started
			close(m.obs.passDone)
			m.obs.passDone = make(chan struct{})
			m.obs.mu.Unlock()
		}
		m.broadcast("obs", s, p)
	}
}

// waitStatus is the exit status as 2.73 logged it ($?): the signal that
// killed the process, else the exit code times 256.
func waitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			return int(ws.Signal())
		}
		return ws.ExitStatus() << 8
	}
	return ps.ExitCode() << 8
}

var errNoTracker = errors.New("jobs: fd 3 is not a connection to a tracker (a worker process is started by the tracker, not by hand)")
