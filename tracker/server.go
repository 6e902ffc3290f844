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
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gomogile/gomogile/internal/buildinfo"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
	"github.com/gomogile/gomogile/tracker/jobs"
	"github.com/gomogile/gomogile/tracker/query"
)

// Version is what "!version" reports: the MogileFS release whose protocol
// the tracker speaks, which clients may parse, then this build (module
// version and VCS revision, from the binary's build info).
var Version = "2.73-gomogile-" + buildinfo.Read().Short()

// JobStatus is one line group of "!jobs".
type JobStatus struct {
	Job     string
	Count   int
	Desired int
	Started bool // the job has had workers; !jobs lists only those
	// Processes says the workers are processes (jobs.Options.Process),
	// whose ids Pids are; for goroutine workers "!jobs" lists the
	// tracker's pid instead.
	Processes bool
	Pids      []int
}

// Options are New's optional dependencies; nil means all defaults.
type Options struct {
	// Logger is the parent logger; the tracker logs under component=tracker.
	Logger *slog.Logger
	// Jobs are the background workers (package tracker/jobs; NewJobs
	// builds them from a Config), started by Open and closed by Close.
	// The tracker and the workers read the namespace through one cache,
	// so the tracker's own changes and clear_cache reach both at once, and
	// the workers log through the tracker's logger, so that their
	// warnings reach "!watch". Nil runs no background work (and devices
	// are then judged by their database state alone).
	Jobs *jobs.Manager
	// HTTPClient talks to storage nodes (MKCOL, HEAD, GET). Default: one
	// built from conn_timeout, node_timeout and conn_pool_size.
	HTTPClient *http.Client
	// Hostname is written to fsck_host and rebal_host. Default os.Hostname.
	Hostname string
	// Shutdown is called by the "!shutdown" admin command; nil refuses it.
	Shutdown func()
	// Registry receives the tracker's metrics and is what status_listen
	// serves on /metrics (see status.go); nil = a NewRegistry of its own.
	Registry *prometheus.Registry
}

// ErrMoveUnfinished is Open's refusal of a database that a move between
// backends (mogtool migrate) has not finished copying and checking: it
// may hold part of an installation only (store.MoveSetting).
var ErrMoveUnfinished = errors.New("the database is the target of an unfinished move between backends")

// Tracker serves the MogileFS protocol on its listen addresses.
type Tracker struct {
	pendq  pendingQueries // requests waiting for a query slot, for !queue
	cfg    Config
	log    *slog.Logger
	onStop func()

	// q is what the query commands run against (package query): the
	// store, the namespace cache, the storage-node client, the workers.
	q       *query.Env
	limiter *limiter
	watch   *watchers
	perAddr perAddr
	files   fileCounts // the status page's file counts (statuscounts.go)

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[*conn]struct{}
	opened    bool
	closing   bool
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
	status statusState // the status listener and metrics (status.go)
}

// New checks cfg and prepares a tracker on st. It does not listen; Open does.
// The tracker does not own st: Close leaves it open.
func New(cfg Config, st *store.Store, opts *Options) (*Tracker, error) {
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
		onStop:  opts.Shutdown,
		limiter: newLimiter(cfg.QueryJobs),
		watch:   w,
		conns:   map[*conn]struct{}{},
		perAddr: perAddr{max: cfg.MaxConnsPerIP},
	}
	watched := slog.New(newLogHandler(parent.Handler(), w))
	t.log = watched.With("component", "tracker")
	ns := cluster.NewCache(st, cfg.NamespaceCacheTTL)
	if opts.Jobs != nil {
		ns = opts.Jobs.Namespace()
		// The workers' warnings and errors reach !watch too, as the
		// original's children's errors did.
		opts.Jobs.SetLogger(watched)
	}
	host := opts.Hostname
	if host == "" {
		host, _ = os.Hostname()
	}
	qc := cfg.queryConfig()
	t.q = &query.Env{
		Store:   st,
		NS:      ns,
		Nodes:   cluster.NewNodes(cfg.nodeConfig(), opts.HTTPClient),
		Log:     t.log,
		Config:  qc,
		Jobs:    opts.Jobs,
		Host:    host,
		Uploads: query.NewUploads(qc, st),
	}
	if cfg.MaxConns > 0 {
		t.connSlots = make(chan struct{}, cfg.MaxConns)
	}
	t.reqCtx, t.reqCancel = context.WithCancel(context.Background())
	if err := t.initStatus(opts.Registry); err != nil {
		return nil, err
	}
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
	if err := t.q.Store.Ping(ctx); err != nil {
		return fmt.Errorf("tracker: database: %w", err)
	}
	switch v, err := t.q.Store.ServerSetting(ctx, store.MoveSetting); {
	case err == nil:
		return fmt.Errorf("tracker: %w (%s): run the same mogtool migrate again to finish it", ErrMoveUnfinished, v)
	case !errors.Is(err, store.ErrNotFound):
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
	if err := t.openStatus(ctx); err != nil {
		for _, l := range t.listeners {
			l.Close()
		}
		t.listeners = nil
		return err
	}
	if t.q.Jobs != nil {
		if err := t.q.Jobs.Open(ctx); err != nil {
			t.closeStatus()
			for _, l := range t.listeners {
				l.Close()
			}
			t.listeners = nil
			return fmt.Errorf("tracker: start jobs: %w", err)
		}
		t.q.JobsStarted()
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
	t.closeStatus()
	var err error
	if t.q.JobsRunning() {
		if e := t.q.Jobs.Close(); e != nil {
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
	br *bufio.Reader // read only by serve, and by watchGone while serve waits

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
	c.br = bufio.NewReaderSize(c.nc, 4096)
	for {
		if !c.idle() {
			return
		}
		if c.awaitLine(c.br) != nil {
			return // EOF, idle timeout, reset, or shutdown
		}
		line, err := readLine(c.br, MaxLineBytes)
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
	cmd, ok := query.Lookup(req.Cmd)
	if !ok {
		return errLine("unknown_command", "", callid), false
	}
	// Refused before it waits for a query slot: a peer shut out holds none.
	if refused := t.queryRefused(c, req.Cmd, cmd.Cat, callid); refused != "" {
		return refused, false
	}
	clientIP := ""
	if ta, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		clientIP = ta.IP.String()
	}

	// The request's own context: its deadline covers waiting for a query
	// slot too, and it ends when the client hangs up, so that a hung
	// database or storage node holds neither a slot nor the client's
	// connection past request_timeout.
	// bulk is the same minus the deadline, for transfers whose length
	// depends on a blob's size (see query.Request.Bulk).
	bulk, cancelBulk := context.WithCancel(t.reqCtx)
	defer cancelBulk()
	ctx, cancel := context.WithTimeout(bulk, t.cfg.RequestTimeout)
	defer cancel()
	stopWatch := c.watchGone(cancelBulk)
	defer stopWatch()

	t.stats.pending.Add(1)
	if !t.limiter.tryAcquire() {
		t.stats.outOfWorkers.Add(1)
		line := clientIP + " " + req.Cmd
		if req.Raw != "" {
			line += " " + req.Raw
		}
		done := t.pendq.add(line)
		err := t.limiter.acquire(ctx)
		done()
		if err != nil {
			t.stats.pending.Add(-1)
			if t.reqCtx.Err() != nil {
				return errLine("failure", "Tracker shutting down", callid), true
			}
			return errLine("failure", fmt.Sprintf("No query worker free within request_timeout (%v)", t.cfg.RequestTimeout), callid), false
		}
	}
	t.stats.pending.Add(-1)
	t.stats.inProgress.Add(1)
	t.stats.queries.Add(1)
	start := time.Now()
	r := &query.Request{Cmd: req.Cmd, Args: req.Args, ClientIP: clientIP, AltZone: req.Args.Get("zone") == "alt", Bulk: bulk}
	res, herr := t.run(ctx, cmd.Run, r)
	t.observeRequest(req.Cmd, time.Since(start), herr)
	t.stats.inProgress.Add(-1)
	t.limiter.release()
	t.recent.add(fmt.Sprintf("%s %s %s %.4f", clientIP, req.Cmd, truncate(req.Raw, maxLogValue), time.Since(start).Seconds()))

	if herr != nil {
		var pe *query.ProtoError
		if errors.As(herr, &pe) {
			return errLine(pe.Code, pe.Text, callid), false
		}
		if errors.Is(herr, store.ErrDuplicate) {
			return errLine("dup", "", callid), false
		}
		if errors.Is(herr, store.ErrInvalid) {
			return errLine("bad_params", "", callid), false // the store's text is not for clients
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && t.reqCtx.Err() == nil {
			t.log.Warn("request timed out", "cmd", req.Cmd, "timeout", t.cfg.RequestTimeout, "err", herr)
			return errLine("failure", fmt.Sprintf("Request took longer than request_timeout (%v)", t.cfg.RequestTimeout), callid), false
		}
		t.log.Error("command failed", "cmd", req.Cmd, "err", herr)
		return errLine("failure", "", callid), false
	}
	return okLine(res, callid), false
}

// run calls a handler, turning a panic into an error: one bad request must
// not take the tracker down.
func (t *Tracker) run(ctx context.Context, h query.Handler, r *query.Request) (res *Reply, err error) {
	defer func() {
		if p := recover(); p != nil {
			t.log.Error("command panicked", "cmd", r.Cmd, "panic", p)
			res, err = nil, fmt.Errorf("internal error in %s", r.Cmd)
		}
	}()
	return h(t.q, ctx, r)
}

// watchGone cancels a request when its client hangs up while it runs, by
// waiting for the connection to become readable. A client that already
// sent its next request is still there: nothing is watched then (and a
// hangup is noticed at the next read). The returned stop ends the watch
// before serve reads again.
func (c *conn) watchGone(cancel context.CancelFunc) (stop func()) {
	if c.br == nil || c.br.Buffered() > 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := c.br.Peek(1); err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				cancel() // EOF or reset: nobody waits for the answer
			}
		}
	}()
	return func() {
		c.nc.SetReadDeadline(time.Now()) // wake the Peek
		<-done
		c.nc.SetReadDeadline(time.Time{})
		if c.br.Buffered() == 0 {
			// Drop the error the Peek may have stored (our own timeout
			// above); a real EOF or reset is met again at the next read.
			c.br.Reset(c.nc)
		}
	}
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
