package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/storerpc"
)

// workerArg is how a worker process is named on its command line:
// "[replicate]", as 2.73's children showed in ps ("mogilefsd [replicate]").
var workerArg = regexp.MustCompile(`^\[([a-z_]+)\]$`)

// WorkerArgs are the arguments the tracker's binary is started with to run
// one worker of jobClass (Options.Process builds its command with them).
func WorkerArgs(jobClass string) []string { return []string{"[" + jobClass + "]"} }

// IsWorker reports whether args (a command line without the program name)
// start a worker process, and of which job class.
func IsWorker(args []string) (jobClass string, ok bool) {
	if len(args) != 1 {
		return "", false
	}
	m := workerArg.FindStringSubmatch(args[0])
	if m == nil {
		return "", false
	}
	if _, known := watchdogTimeouts[m[1]]; !known {
		return "", false
	}
	return m[1], true
}

// RunWorker is a worker process's main: the tracker that started it is on
// fd 3. It runs one worker of the job class the tracker names, over the
// tracker's Store, until the tracker asks it to stop or goes away, and
// logs to stderr only what it cannot send the tracker.
func RunWorker(ctx context.Context, stderr *os.File) error {
	f := os.NewFile(3, "tracker")
	if f == nil {
		return errNoTracker
	}
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%w: %v", errNoTracker, err)
	}
	// The reading goroutine never waits for this one: it also delivers
	// the answers to store calls, which a Close in progress here waits
	// for.
	box := &mailbox{sig: make(chan struct{}, 1)}
	conn := storerpc.New(nc, nil, func(kind string, body json.RawMessage) { box.put(workerMsg{kind, body}) })
	defer conn.Close()

	var hello workerHello
	var first []workerMsg
	timeout := time.After(30 * time.Second)
	for len(first) == 0 {
		select {
		case <-box.sig:
			first = box.take()
		case <-conn.Done():
			return fmt.Errorf("jobs: worker: the tracker went away before saying hello: %v", conn.Err())
		case <-timeout:
			return fmt.Errorf("jobs: worker: no hello from the tracker within 30 s")
		}
	}
	if first[0].kind != "hello" || json.Unmarshal(first[0].body, &hello) != nil {
		return fmt.Errorf("jobs: worker: the tracker's first message is %q, not hello", first[0].kind)
	}
	box.putBack(first[1:])
	opts := hello.Opts
	opts.Logger = slog.New(&relayHandler{conn: conn, debug: hello.Debug})
	opts.only = hello.Class
	opts.Process = nil
	// The tracker's Store, across the connection: its deadlines, checks
	// and errors are the tracker's, so this end adds no deadline.
	m := New(store.New(conn.Store(hello.Caps), &store.Options{OpTimeout: -1}), opts)
	if hello.Obs != nil {
		m.obs.load(*hello.Obs)
	}
	if hello.Class == JobMonitor {
		m.publish = func(kind string) { _ = conn.Send(kind, m.obs.snapshot()) }
		go publishChanges(ctx, conn, m)
	}
	if err := m.Open(ctx); err != nil {
		return err
	}
	go heartbeat(ctx, conn, m, hello.Class)
	for {
		select {
		case <-ctx.Done():
			return m.Close()
		case <-conn.Done():
			// The tracker is gone, and with it the database and every
			// lock this worker held: nothing it does now can be
			// recorded, so it stops at once rather than finishing items
			// (Close's grace) nobody will know of.
			return nil
		case <-box.sig:
			for _, msg := range box.take() {
				switch msg.kind {
				case "shutdown":
					// Asked: in-flight items finish within the grace, the
					// rest are handed back, as a tracker's Close does.
					return m.Close()
				case "wake":
					m.Message(hello.Class, ":wake_up")
				case "invalidate":
					m.ns.Invalidate()
				case "obs":
					var s obsSnapshot
					if json.Unmarshal(msg.body, &s) == nil {
						m.obs.load(s)
					}
				}
			}
		}
	}
}

type workerMsg struct {
	kind string
	body json.RawMessage
}

// mailbox queues the tracker's messages for the worker's loop without
// ever making the connection's reader wait.
type mailbox struct {
	mu  sync.Mutex
	q   []workerMsg
	sig chan struct{} // buffered 1: something is queued
}

func (b *mailbox) put(m workerMsg) {
	b.mu.Lock()
	b.q = append(b.q, m)
	b.mu.Unlock()
	select {
	case b.sig <- struct{}{}:
	default:
	}
}

// putBack queues ms again ahead of anything newer.
func (b *mailbox) putBack(ms []workerMsg) {
	if len(ms) == 0 {
		return
	}
	b.mu.Lock()
	b.q = append(append([]workerMsg(nil), ms...), b.q...)
	b.mu.Unlock()
	select {
	case b.sig <- struct{}{}:
	default:
	}
}

func (b *mailbox) take() []workerMsg {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.q
	b.q = nil
	return q
}

// heartbeat tells the tracker, every heartbeatEvery, that this worker is
// alive and what it has done.
func heartbeat(ctx context.Context, conn *storerpc.Conn, m *Manager, class string) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	jc := m.classes[class]
	for {
		b := beat{Processed: jc.processed.Load(), Errors: jc.errors.Load(), Sent: map[store.Queue]int64{}}
		for q, n := range m.sent {
			b.Sent[q] = n.Load()
		}
		if conn.Send("beat", b) != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-conn.Done():
			return
		case <-t.C:
		}
	}
}

// publishChanges sends the monitor's observations whenever they changed
// between passes (the watch stream's utilisation figures), at most every
// quarter second.
func publishChanges(ctx context.Context, conn *storerpc.Conn, m *Manager) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var last []byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-conn.Done():
			return
		case <-t.C:
		}
		s := m.obs.snapshot()
		b, err := json.Marshal(s)
		if err != nil || bytes.Equal(b, last) {
			continue
		}
		last = b
		_ = conn.Send("obs", json.RawMessage(b)) // marshalled once, above
	}
}

// relayHandler sends a worker's log records to the tracker, which logs
// them as its own.
type relayHandler struct {
	conn  *storerpc.Conn
	debug bool
	attrs [][2]string
	group string
}

func (h *relayHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.debug
}

func (h *relayHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Msg: r.Message, Attrs: append([][2]string(nil), h.attrs...)}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs = append(rec.Attrs, [2]string{h.group + a.Key, a.Value.String()})
		return true
	})
	return h.conn.Send("log", rec)
}

func (h *relayHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append([][2]string(nil), h.attrs...)
	for _, a := range as {
		n.attrs = append(n.attrs, [2]string{h.group + a.Key, a.Value.String()})
	}
	return &n
}

func (h *relayHandler) WithGroup(name string) slog.Handler {
	n := *h
	n.group = h.group + name + "."
	return &n
}
