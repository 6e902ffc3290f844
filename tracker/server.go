package tracker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Version is what "!version" reports.
const Version = "2.73-gomogile"

// Jobs is the background-worker manager as the tracker sees it
// (package tracker/jobs provides one). Observed reports the monitor's last
// view of a device: "writeable", "readable" or "unreachable"; ok is false
// until the monitor has seen it, and the tracker then judges by the
// database state alone.
type Jobs interface {
	Open(ctx context.Context) error
	Close() error
	SetWant(jobclass string, n int) error
	Observed(devid int) (state string, ok bool)
}

// JobStatus is one line group of "!jobs".
type JobStatus struct {
	Job     string
	Count   int
	Desired int
}

// JobStatter is implemented by Jobs managers that can report their worker
// counts for "!jobs"; without it only the query workers are listed.
type JobStatter interface {
	JobStatus() []JobStatus
}

// DeviceStatter is implemented by Jobs managers whose monitor also measures
// what get_devices reports beside the observed state: a device's I/O
// utilisation, verbatim as its storage node streams it, and whether its
// node refuses a body that does not match its Content-MD5. ok is false
// while unknown; get_devices then leaves the field empty.
type DeviceStatter interface {
	Utilization(devid int) (util string, ok bool)
	RejectBadMD5(devid int) (reject, ok bool)
}

// JobMessenger is implemented by Jobs managers that accept "!to" messages.
type JobMessenger interface {
	SendTo(jobclass, message string) (int, error)
}

// Options are New's optional dependencies; nil means all defaults.
type Options struct {
	// Logger is the parent logger; the tracker logs under component=tracker.
	Logger *slog.Logger
	// Jobs is started by Open and closed by Close. Nil runs no background
	// work (and devices are then judged by their database state alone).
	Jobs Jobs
	// HTTPClient talks to storage nodes (MKCOL, HEAD, GET). Default: one
	// built from conn_timeout, node_timeout and conn_pool_size.
	HTTPClient *http.Client
	// Hostname is written to fsck_host and rebal_host. Default os.Hostname.
	Hostname string
	// Shutdown is called by the "!shutdown" admin command; nil refuses it.
	Shutdown func()
}

// Tracker serves the MogileFS protocol on its listen addresses.
type Tracker struct {
	cfg    Config
	st     store.Store
	jobs   Jobs
	log    *slog.Logger
	http   *http.Client
	host   string
	onStop func()

	ns      nsCache
	mkcols  mkcolCache
	limiter *limiter
	watch   *watchers
	perAddr perAddr

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[*conn]struct{}
	opened    bool
	closing   bool
	jobsOpen  bool
	started   time.Time
	connSlots chan struct{}

	reqCtx    context.Context // cancelled when Close gives up waiting
	reqCancel context.CancelFunc
	wg        sync.WaitGroup // accept loops and connections

	stats struct {
		queries      atomic.Int64
		inProgress   atomic.Int64
		pending      atomic.Int64
		outOfWorkers atomic.Int64
		connsRefused atomic.Int64
	}
	recent recentQueries
}

// New checks cfg and prepares a tracker on st. It does not listen; Open does.
// The tracker does not own st: Close leaves it open.
func New(cfg Config, st store.Store, opts *Options) (*Tracker, error) {
	if st == nil {
		return nil, errors.New("tracker: nil store")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tracker: config: %w", err)
	}
	if opts == nil {
		opts = &Options{}
	}
	parent := opts.Logger
	if parent == nil {
		parent = slog.Default()
	}
	w := newWatchers()
	t := &Tracker{
		cfg:     cfg,
		st:      st,
		jobs:    opts.Jobs,
		host:    opts.Hostname,
		onStop:  opts.Shutdown,
		http:    opts.HTTPClient,
		limiter: newLimiter(cfg.QueryJobs),
		watch:   w,
		conns:   map[*conn]struct{}{},
		perAddr: perAddr{max: cfg.MaxConnsPerIP},
	}
	t.log = slog.New(newLogHandler(parent.Handler(), w)).With("component", "tracker")
	if t.host == "" {
		t.host, _ = os.Hostname()
	}
	if t.http == nil {
		t.http = newStorageClient(cfg)
	}
	if cfg.MaxConns > 0 {
		t.connSlots = make(chan struct{}, cfg.MaxConns)
	}
	t.ns.ttl = cfg.CacheTTL
	t.ns.st = st
	t.reqCtx, t.reqCancel = context.WithCancel(context.Background())
	return t, nil
}

// Config returns the tracker's configuration.
func (t *Tracker) Config() Config { return t.cfg }

// Open listens on every configured address, then starts the jobs manager.
// On error nothing stays open.
func (t *Tracker) Open(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.opened {
		return errors.New("tracker: already open")
	}
	if err := t.st.Ping(ctx); err != nil {
		return fmt.Errorf("tracker: database: %w", err)
	}
	var lc net.ListenConfig
	for _, a := range t.cfg.ListenAddrs() {
		ln, err := lc.Listen(ctx, "tcp", a)
		if err != nil {
			for _, l := range t.listeners {
				l.Close()
			}
			t.listeners = nil
			return fmt.Errorf("tracker: listen %s: %w", a, err)
		}
		t.listeners = append(t.listeners, ln)
	}
	if t.jobs != nil {
		if err := t.jobs.Open(ctx); err != nil {
			for _, l := range t.listeners {
				l.Close()
			}
			t.listeners = nil
			return fmt.Errorf("tracker: start jobs: %w", err)
		}
		t.jobsOpen = true
	}
	t.opened = true
	t.started = time.Now()
	for _, ln := range t.listeners {
		t.log.Info("listening", "addr", ln.Addr().String())
		t.wg.Add(1)
		go t.acceptLoop(ln)
	}
	return nil
}

// Addrs returns the bound listen addresses (useful with port 0).
func (t *Tracker) Addrs() []net.Addr {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]net.Addr, len(t.listeners))
	for i, l := range t.listeners {
		out[i] = l.Addr()
	}
	return out
}

// Close stops accepting, lets requests in flight finish (at most
// ShutdownTimeout, after which their contexts are cancelled and their
// connections closed), closes idle connections, then closes the jobs
// manager so it hands back its leases and locks. The store stays open.
func (t *Tracker) Close() error {
	t.mu.Lock()
	if t.closing {
		t.mu.Unlock()
		return nil
	}
	t.closing = true
	for _, l := range t.listeners {
		l.Close()
	}
	for c := range t.conns {
		c.shutdown()
	}
	t.mu.Unlock()

	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(t.cfg.ShutdownTimeout):
		t.log.Warn("requests still running at shutdown deadline; abandoning them", "timeout", t.cfg.ShutdownTimeout)
		t.reqCancel()
		t.mu.Lock()
		for c := range t.conns {
			c.nc.Close()
		}
		t.mu.Unlock()
		<-done
	}
	t.reqCancel()
	var err error
	if t.jobsOpen {
		if e := t.jobs.Close(); e != nil {
			err = fmt.Errorf("tracker: close jobs: %w", e)
		}
	}
	t.log.Info("stopped")
	return err
}

func (t *Tracker) acceptLoop(ln net.Listener) {
	defer t.wg.Done()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and kin: back off rather than spin.
			if delay == 0 {
				delay = 5 * time.Millisecond
			} else if delay < time.Second {
				delay *= 2
			}
			t.log.Error("accept", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		if t.connSlots != nil {
			select {
			case t.connSlots <- struct{}{}:
			default:
				t.stats.connsRefused.Add(1)
				nc.SetWriteDeadline(time.Now().Add(time.Second))
				io.WriteString(nc, errLine("too_many_connections", "Too many client connections", nil))
				nc.Close()
				continue
			}
		}
		if !t.admit(nc) {
			t.releaseSlot()
			continue
		}
		c := &conn{t: t, nc: nc}
		t.mu.Lock()
		if t.closing {
			t.mu.Unlock()
			t.perAddr.release(nc)
			nc.Close()
			t.releaseSlot()
			continue
		}
		t.conns[c] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go c.serve()
	}
}

func (t *Tracker) releaseSlot() {
	if t.connSlots != nil {
		<-t.connSlots
	}
}

// conn is one client connection. Requests on it run one at a time, in
// order, as the original processed a client's pipelined lines.
type conn struct {
	t  *Tracker
	nc net.Conn

	wmu sync.Mutex // replies and watcher lines interleave whole

	mu      sync.Mutex
	busy    bool
	closing bool
}

func (c *conn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	if !c.busy {
		// Unblock the read; serve sees closing and returns.
		c.nc.SetReadDeadline(time.Now())
	}
}

// idle marks the connection idle and arms the idle timeout, under the same
// lock shutdown takes, so a shutdown cannot slip between the two and be
// overridden by the longer deadline. It reports false when closing.
func (c *conn) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy = false
	if c.closing {
		return false
	}
	if d := c.t.cfg.IdleTimeout; d > 0 {
		c.nc.SetReadDeadline(time.Now().Add(d))
	} else {
		c.nc.SetReadDeadline(time.Time{})
	}
	return true
}

func (c *conn) setBusy(b bool) (closing bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy = b
	return c.closing
}

func (c *conn) write(s string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.t.cfg.WriteTimeout > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(c.t.cfg.WriteTimeout))
	}
	_, err := io.WriteString(c.nc, s)
	return err
}

func (c *conn) serve() {
	t := c.t
	defer func() {
		t.watch.remove(c)
		c.nc.Close()
		t.mu.Lock()
		delete(t.conns, c)
		t.mu.Unlock()
		t.perAddr.release(c.nc)
		t.releaseSlot()
		t.wg.Done()
	}()
	br := bufio.NewReaderSize(c.nc, 4096)
	for {
		if !c.idle() {
			return
		}
		if c.awaitLine(br) != nil {
			return // EOF, idle timeout, reset, or shutdown
		}
		line, err := readLine(br, MaxLineBytes)
		// A line read before shutdown is in flight: answer it, then stop.
		closing := c.setBusy(true)
		if errors.Is(err, ErrLineTooLong) {
			c.write(errLine("line_too_long", fmt.Sprintf("Request line longer than %d bytes", MaxLineBytes), nil))
			return
		}
		if err != nil {
			return // EOF, idle timeout, reset, or shutdown
		}
		c.nc.SetReadDeadline(time.Time{})
		reply, quit := t.handleLine(c, line)
		if reply != "" {
			if err := c.write(reply); err != nil {
				return
			}
		}
		if quit || closing {
			return
		}
	}
}

// readLine reads through '\n', returning the line without "\r\n"/"\n".
// A line longer than max fails with ErrLineTooLong once max is passed,
// without buffering the rest.
func readLine(br *bufio.Reader, max int) (string, error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > max+2 {
			return "", ErrLineTooLong
		}
		buf = append(buf, frag...)
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return "", err
	}
	buf = buf[:len(buf)-1]
	if n := len(buf); n > 0 && buf[n-1] == '\r' {
		buf = buf[:n-1]
	}
	if len(buf) > max {
		return "", ErrLineTooLong
	}
	return string(buf), nil
}

// handleLine answers one line; an empty reply sends nothing.
func (t *Tracker) handleLine(c *conn, line string) (reply string, quit bool) {
	if line == "" {
		return "", false // Client.pm skips empty lines
	}
	req, err := ParseRequest(line)
	if req.Admin {
		if refused := t.adminRefused(c, req); refused != "" {
			return refused, false
		}
		return t.admin(c, req), false
	}
	var callid *string
	if v, ok := req.Args["callid"]; ok {
		callid = &v
	}
	switch {
	case errors.Is(err, ErrBadCommand), errors.Is(err, ErrEmptyLine):
		return errLine("unknown_command", "", nil), false
	case errors.Is(err, ErrBadEncoding):
		return errLine("bad_params", "Invalid URL encoding in arguments", callid), false
	case err != nil:
		return errLine("bad_params", err.Error(), callid), false
	}
	h, ok := commands[req.Cmd]
	if !ok {
		return errLine("unknown_command", "", callid), false
	}
	clientIP := ""
	if ta, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		clientIP = ta.IP.String()
	}

	t.stats.pending.Add(1)
	if !t.limiter.tryAcquire() {
		t.stats.outOfWorkers.Add(1)
		if err := t.limiter.acquire(t.reqCtx); err != nil {
			t.stats.pending.Add(-1)
			return errLine("failure", "Tracker shutting down", callid), true
		}
	}
	t.stats.pending.Add(-1)
	t.stats.inProgress.Add(1)
	t.stats.queries.Add(1)
	start := time.Now()
	r := &request{Request: req, clientIP: clientIP, altZone: req.Args.Get("zone") == "alt"}
	res, herr := t.run(h, r)
	t.stats.inProgress.Add(-1)
	t.limiter.release()
	t.recent.add(fmt.Sprintf("%s %s %s %.4f", clientIP, req.Cmd, truncate(req.Raw, maxLogValue), time.Since(start).Seconds()))

	if herr != nil {
		var pe *protoError
		if errors.As(herr, &pe) {
			return errLine(pe.code, pe.text, callid), false
		}
		if errors.Is(herr, store.ErrDuplicate) {
			return errLine("dup", "", callid), false
		}
		if errors.Is(herr, store.ErrInvalid) {
			return errLine("bad_params", "", callid), false // the store's text is not for clients
		}
		t.log.Error("command failed", "cmd", req.Cmd, "err", herr)
		return errLine("failure", "", callid), false
	}
	return okLine(res, callid), false
}

// run calls a handler, turning a panic into an error: one bad request must
// not take the tracker down.
func (t *Tracker) run(h handler, r *request) (res *Reply, err error) {
	defer func() {
		if p := recover(); p != nil {
			t.log.Error("command panicked", "cmd", r.Cmd, "panic", p)
			res, err = nil, fmt.Errorf("internal error in %s", r.Cmd)
		}
	}()
	return h(t, t.reqCtx, r)
}

// limiter bounds concurrent requests (query_jobs) and can be resized by
// "!want N queryworker".
type limiter struct {
	mu     sync.Mutex
	limit  int
	active int
	wake   chan struct{}
}

func newLimiter(n int) *limiter { return &limiter{limit: n, wake: make(chan struct{})} }

func (l *limiter) tryAcquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active < l.limit {
		l.active++
		return true
	}
	return false
}

func (l *limiter) acquire(ctx context.Context) error {
	for {
		l.mu.Lock()
		if l.active < l.limit {
			l.active++
			l.mu.Unlock()
			return nil
		}
		w := l.wake
		l.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *limiter) release() {
	l.mu.Lock()
	l.active--
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
}

func (l *limiter) set(n int) {
	l.mu.Lock()
	l.limit = n
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
}

func (l *limiter) get() (limit, active int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit, l.active
}

// recentQueries keeps the last 50 requests for "!recent".
type recentQueries struct {
	mu   sync.Mutex
	list []string
}

func (r *recentQueries) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, s)
	if len(r.list) > 50 {
		r.list = r.list[len(r.list)-50:]
	}
}

func (r *recentQueries) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.list...)
}

// admin answers the ProcManager "!" commands; the reply always ends ".\r\n".
// Commands match by prefix, as the original's regexes did.
func (t *Tracker) admin(c *conn, req Request) string {
	var out []string
	cmd, args := req.Cmd, req.Raw
	switch {
	case cmd == "stats":
		limit, active := t.limiter.get()
		out = append(out,
			fmt.Sprintf("uptime %d", int64(time.Since(t.started).Seconds())),
			fmt.Sprintf("pending_queries %d", t.stats.pending.Load()),
			fmt.Sprintf("processing_queries %d", t.stats.inProgress.Load()),
			fmt.Sprintf("bored_queryworkers %d", max(limit-active, 0)),
		)
		st := map[string]int64{
			"queries":               t.stats.queries.Load(),
			"times_out_of_qworkers": t.stats.outOfWorkers.Load(),
			"connections_refused":   t.stats.connsRefused.Load(),
		}
		t.mu.Lock()
		st["connections"] = int64(len(t.conns))
		t.mu.Unlock()
		keys := make([]string, 0, len(st))
		for k := range st {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, fmt.Sprintf("%s %d", k, st[k]))
		}
	case strings.HasPrefix(cmd, "shutdown"):
		if t.onStop == nil {
			out = append(out, "ERROR: shutdown is not enabled on this tracker")
		} else {
			t.log.Warn("user requested shutdown", "args", args)
			t.onStop()
		}
	case strings.HasPrefix(cmd, "jobs"):
		limit, _ := t.limiter.get()
		jobs := []JobStatus{{Job: "queryworker", Count: limit, Desired: limit}}
		if js, ok := t.jobs.(JobStatter); ok && t.jobsOpen {
			jobs = append(jobs, js.JobStatus()...)
		}
		sort.Slice(jobs, func(i, j int) bool { return jobs[i].Job < jobs[j].Job })
		for _, j := range jobs {
			// Goroutines have no pids; the tracker's own pid stands in.
			out = append(out, fmt.Sprintf("%s count %d", j.Job, j.Count),
				fmt.Sprintf("%s desired %d", j.Job, j.Desired),
				fmt.Sprintf("%s pids %d", j.Job, os.Getpid()))
		}
	case strings.HasPrefix(cmd, "want"):
		f := strings.Fields(args)
		n, err := 0, error(nil)
		if len(f) >= 2 {
			n, err = strconv.Atoi(f[0])
		}
		if len(f) < 2 || err != nil || n < 0 {
			out = append(out, "ERROR: usage: !want <count> <jobclass>")
			break
		}
		n = min(n, 500)
		job := f[1]
		switch {
		case job == "queryworker":
			if n < 1 {
				n = 1 // a tracker with no query slots could never answer again
			}
			t.limiter.set(n)
			out = append(out, fmt.Sprintf("Now desiring %d children doing '%s'.", n, job))
		case t.jobs != nil && t.jobsOpen:
			if err := t.jobs.SetWant(job, n); err != nil {
				out = append(out, fmt.Sprintf("ERROR: Invalid class '%s': %v", job, err))
			} else {
				out = append(out, fmt.Sprintf("Now desiring %d children doing '%s'.", n, job))
			}
		default:
			out = append(out, fmt.Sprintf("ERROR: Invalid class '%s'.  Valid classes: queryworker", job))
		}
	case strings.HasPrefix(cmd, "to"):
		job, msg, ok := strings.Cut(strings.TrimSpace(args), " ")
		if !ok || strings.TrimSpace(msg) == "" {
			out = append(out, "ERROR: usage: !to <jobclass> <message>")
			break
		}
		n := 0
		if m, ok := t.jobs.(JobMessenger); ok && t.jobsOpen {
			n, _ = m.SendTo(job, strings.TrimSpace(msg))
		}
		out = append(out, fmt.Sprintf("Message sent to %d children.", n))
	case strings.HasPrefix(cmd, "queue"), strings.HasPrefix(cmd, "pend"):
		// Requests wait for a query slot inside their own connection; there
		// is no shared pending list to print, only its length.
		if n := t.stats.pending.Load(); n > 0 {
			out = append(out, fmt.Sprintf("%d queries waiting for a query worker", n))
		}
	case strings.HasPrefix(cmd, "watch"):
		if t.watch.toggle(c) {
			out = append(out, "Added you to watcher list.")
		} else {
			out = append(out, "Removed you from watcher list.")
		}
	case strings.HasPrefix(cmd, "recent"):
		out = append(out, t.recent.all()...)
	case strings.HasPrefix(cmd, "version"):
		out = append(out, Version)
	default:
		return adminHelp + ".\r\n"
	}
	out = append(out, ".", "")
	return strings.Join(out, "\r\n")
}

const adminHelp = `Mogilefsd admin commands:

    !version    Server version
    !recent     Recently executed queries and how long they took.
    !queue      Queries that are pending execution.
    !stats      General stats on what we're up to.
    !watch      Observe errors/messages from children.
    !jobs       Outstanding job counts, desired level, and pids.
    !shutdown   Immediately kill all of mogilefsd.

    !to <job class> <message>
                Send <message> to all workers of <job class>.
                Mostly used for debugging.

    !want <count> <job class>
                Alter the level of workers of this class desired.
                Example: !want 20 queryworker, !want 3 replicate.
                See !jobs for what jobs are available.

`
