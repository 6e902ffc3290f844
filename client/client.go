package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultDialTimeout   = 3 * time.Second
	DefaultTimeout       = 30 * time.Second
	DefaultMaxReplyBytes = 4 << 20
	DefaultDeadRetry     = 5 * time.Second
	DefaultTrackerPort   = "7001"
)

// Options configure a Client. A nil *Options means all defaults.
type Options struct {
	// Domain is used by the file methods when their domain argument is "".
	Domain string
	// DialTimeout bounds connecting to one tracker (DefaultDialTimeout).
	DialTimeout time.Duration
	// Timeout bounds one command on one tracker, from sending the request
	// to reading the reply (DefaultTimeout). A ctx deadline that comes
	// sooner wins. Query.pm's own watchdog kills a query after 30s.
	Timeout time.Duration
	// HTTPClient talks to the storage nodes (http.DefaultClient if nil).
	// Requests carry the caller's ctx, so its Timeout may stay zero.
	HTTPClient *http.Client
	// Logger receives failover and retry notes at Debug/Warn level
	// (discarded if nil).
	Logger *slog.Logger
	// MaxReplyBytes caps one reply line, so a broken or hostile tracker
	// cannot make the client allocate without bound
	// (DefaultMaxReplyBytes; list_keys with 1000 long keys needs ~1 MiB).
	MaxReplyBytes int
	// DeadRetry is how long a tracker that could not be reached is tried
	// only after the others (DefaultDeadRetry).
	DeadRetry time.Duration
}

// Client talks to one or more MogileFS trackers. It is safe for concurrent
// use. Each tracker keeps one idle connection that is reused by the next
// command; concurrent commands open extra connections, which are closed
// when done.
type Client struct {
	opts     Options
	log      *slog.Logger
	http     *http.Client
	trackers []*tracker
	next     atomic.Uint64
	closed   atomic.Bool
}

type tracker struct {
	addr string

	mu        sync.Mutex
	idle      *conn
	deadUntil time.Time
}

type conn struct {
	nc net.Conn
	br *bufio.Reader
}

// New returns a Client for the given tracker addresses ("host:port"; a
// bare host gets port 7001). It does not connect: the first command does.
func New(trackers []string, opts *Options) (*Client, error) {
	if len(trackers) == 0 {
		return nil, errors.New("mogilefs client: no tracker addresses")
	}
	c := &Client{}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.DialTimeout <= 0 {
		c.opts.DialTimeout = DefaultDialTimeout
	}
	if c.opts.Timeout <= 0 {
		c.opts.Timeout = DefaultTimeout
	}
	if c.opts.MaxReplyBytes <= 0 {
		c.opts.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if c.opts.DeadRetry <= 0 {
		c.opts.DeadRetry = DefaultDeadRetry
	}
	c.log = c.opts.Logger
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.http = c.opts.HTTPClient
	if c.http == nil {
		c.http = http.DefaultClient
	}
	for _, a := range trackers {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			a = net.JoinHostPort(strings.Trim(a, "[]"), DefaultTrackerPort)
		}
		c.trackers = append(c.trackers, &tracker{addr: a})
	}
	if len(c.trackers) == 0 {
		return nil, errors.New("mogilefs client: no tracker addresses")
	}
	return c, nil
}

// ParseTrackers splits a comma- or space-separated tracker list, as found
// in configuration files and MOGTOOL_TRACKERS.
func ParseTrackers(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
}

// Trackers returns the tracker addresses in use.
func (c *Client) Trackers() []string {
	out := make([]string, len(c.trackers))
	for i, t := range c.trackers {
		out[i] = t.addr
	}
	return out
}

// Close closes idle tracker connections; commands after Close fail with
// ErrClosed. Commands in flight finish and close their connections.
func (c *Client) Close() error {
	c.closed.Store(true)
	for _, t := range c.trackers {
		t.mu.Lock()
		cn := t.idle
		t.idle = nil
		t.mu.Unlock()
		if cn != nil {
			cn.nc.Close()
		}
	}
	return nil
}

// idempotent lists the commands that only read (or whose repetition is
// harmless), so they may be re-sent to another tracker when a connection
// breaks after the request went out. Everything else is retried only when
// it certainly never reached a tracker.
var idempotent = map[string]bool{
	"noop": true, "test": true, "get_paths": true, "file_info": true,
	"file_debug": true, "list_keys": true, "list_fids": true,
	"get_domains": true, "get_hosts": true, "get_devices": true,
	"server_setting": true, "server_settings": true, "fsck_status": true,
	"fsck_getlog": true, "rebalance_status": true, "rebalance_test": true,
	"clear_cache": true, "do_monitor_round": true,
}

// Do sends one command with its arguments and returns the decoded reply
// arguments.
//
// An ERR reply is returned as a *Error (see the Err* sentinels). A tracker
// that cannot be reached is skipped for the next; if a connection breaks
// after the request was sent, read-only commands are retried on another
// tracker (or a fresh connection to the same one), while any other command
// fails with ErrUnknownOutcome, since the tracker may have run it.
// ctx cancels the whole call, including a wait for a reply; its deadline
// is applied to the socket.
func (c *Client) Do(ctx context.Context, cmd string, args url.Values) (url.Values, error) {
	reply, err := c.do(ctx, cmd, args)
	if err != nil {
		return nil, fmt.Errorf("mogilefs %s: %w", cmd, err)
	}
	return reply, nil
}

// do is Do without the command name in its errors, for the methods that
// name the command and its object themselves.
func (c *Client) do(ctx context.Context, cmd string, args url.Values) (url.Values, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if !validCommand(cmd) {
		return nil, fmt.Errorf("%w: %q", ErrBadCommand, cmd)
	}
	line := requestLine(cmd, args)
	idem := idempotent[strings.ToLower(cmd)]

	var errs []error
	for _, t := range c.order() {
		for attempt := 0; attempt < 2; attempt++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			reply, st, err := c.roundTrip(ctx, t, line)
			if err == nil {
				return reply, nil
			}
			var te *Error
			if errors.As(err, &te) {
				return nil, err
			}
			if ctxErr := ctxDone(ctx); ctxErr != nil {
				return nil, fmt.Errorf("%s: %w (%w)", t.addr, ctxErr, err)
			}
			if errors.Is(err, ErrProtocol) || errors.Is(err, ErrReplyTooLong) {
				// The tracker answered, badly; another would
				// most likely answer the same, and a repeat
				// of a write could apply twice.
				return nil, fmt.Errorf("%s: %w", t.addr, err)
			}
			if st.sent && !idem {
				return nil, fmt.Errorf("%s: %w: %w", t.addr, ErrUnknownOutcome, err)
			}
			errs = append(errs, fmt.Errorf("%s: %w", t.addr, err))
			if !st.connected {
				t.markDead(c.opts.DeadRetry)
				c.log.Warn("mogilefs tracker unreachable", "tracker", t.addr, "err", err)
				break
			}
			if !st.reused {
				break
			}
			// A reused connection may have been closed by the
			// tracker while idle; one fresh connection settles it.
			c.log.Debug("mogilefs retry on fresh connection", "tracker", t.addr, "cmd", cmd, "err", err)
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrNoTracker, errors.Join(errs...))
}

// ctxDone is ctx.Err, also when the socket deadline (set from ctx's)
// fired a moment before ctx's own timer did.
func ctxDone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// order returns the trackers starting at the next in round-robin order,
// those recently unreachable moved to the end.
func (c *Client) order() []*tracker {
	n := len(c.trackers)
	// Modulo in uint64: int(counter) would go negative on 32-bit hosts.
	start := int((c.next.Add(1) - 1) % uint64(n))
	now := time.Now()
	live := make([]*tracker, 0, n)
	var dead []*tracker
	for i := 0; i < n; i++ {
		t := c.trackers[(start+i)%n]
		t.mu.Lock()
		d := now.Before(t.deadUntil)
		t.mu.Unlock()
		if d {
			dead = append(dead, t)
		} else {
			live = append(live, t)
		}
	}
	return append(live, dead...)
}

func (t *tracker) markDead(d time.Duration) {
	t.mu.Lock()
	t.deadUntil = time.Now().Add(d)
	t.mu.Unlock()
}

// trip records how far a round trip got, which decides whether it may be
// repeated.
type trip struct {
	connected bool // a connection was available
	reused    bool // it was an idle connection from an earlier command
	sent      bool // request bytes were handed to the kernel
}

// longAgo is a deadline in the past: setting it makes blocked I/O return.
var longAgo = time.Unix(1, 0)

func (c *Client) roundTrip(ctx context.Context, t *tracker, line string) (url.Values, trip, error) {
	var st trip
	cn, reused, err := c.getConn(ctx, t)
	if err != nil {
		return nil, st, err
	}
	st.connected, st.reused = true, reused

	deadline := time.Now().Add(c.opts.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := cn.nc.SetDeadline(deadline); err != nil {
		cn.nc.Close()
		return nil, st, err
	}
	// Cancellation without a deadline must also unblock the read.
	stop := context.AfterFunc(ctx, func() { cn.nc.SetDeadline(longAgo) })

	n, err := io.WriteString(cn.nc, line)
	if err != nil {
		stop()
		cn.nc.Close()
		st.sent = n > 0
		return nil, st, fmt.Errorf("send: %w", err)
	}
	st.sent = true
	raw, err := readLine(cn.br, c.opts.MaxReplyBytes)
	if err != nil {
		stop()
		cn.nc.Close()
		return nil, st, fmt.Errorf("read reply: %w", err)
	}
	reply, perr := ParseReply(raw)
	// If the AfterFunc already ran (or is running), the connection's
	// deadline is being set to the past: it cannot be handed on.
	if !stop() || errors.Is(perr, ErrProtocol) {
		cn.nc.Close()
	} else {
		c.putConn(t, cn)
	}
	return reply, st, perr
}

// getConn takes the tracker's idle connection if it is still open, or
// dials a new one.
func (c *Client) getConn(ctx context.Context, t *tracker) (*conn, bool, error) {
	t.mu.Lock()
	cn := t.idle
	t.idle = nil
	t.mu.Unlock()
	if cn != nil {
		if cn.br.Buffered() == 0 && connAlive(cn.nc) {
			return cn, true, nil
		}
		// Closed by the tracker while idle, or unsolicited bytes
		// that would be taken for the next reply.
		c.log.Debug("mogilefs dropping stale connection", "tracker", t.addr)
		cn.nc.Close()
	}
	d := net.Dialer{Timeout: c.opts.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, false, fmt.Errorf("dial: %w", err)
	}
	return &conn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}, false, nil
}

// putConn keeps cn as the tracker's idle connection. closed is read under
// t.mu, which Close also takes after setting it, so a connection returned
// during Close is either swept by Close or closed here.
func (c *Client) putConn(t *tracker, cn *conn) {
	t.mu.Lock()
	old := t.idle
	if c.closed.Load() {
		old, t.idle = cn, nil
	} else {
		t.idle = cn
	}
	t.deadUntil = time.Time{}
	t.mu.Unlock()
	if old != nil {
		old.nc.Close()
	}
}

// readLine reads up to and including '\n', refusing lines longer than max
// before buffering them.
func readLine(br *bufio.Reader, max int) (string, error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > max {
			return "", fmt.Errorf("%w: more than %d bytes", ErrReplyTooLong, max)
		}
		buf = append(buf, frag...)
		switch {
		case err == nil:
			return string(buf), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return "", io.ErrUnexpectedEOF
		default:
			return "", err
		}
	}
}

// domain picks the call's domain or the Client's default.
func (c *Client) domain(d string) string {
	if d == "" {
		return c.opts.Domain
	}
	return d
}
