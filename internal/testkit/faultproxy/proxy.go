// Package faultproxy is an in-process TCP proxy that sits between a Store
// and its database server and makes the network faults the torture program
// and the backends' regression tests need: cutting every connection, a
// partition that sends no FIN or RST (blackhole), added latency, and an
// ambiguous commit — a COMMIT the server applies whose reply the client
// never sees.
//
// The proxy understands just enough of the PostgreSQL and MySQL wire
// protocols to recognise a COMMIT and the end of its reply; with
// Protocol None it forwards bytes blindly and DropCommitReplies has no
// effect. A connection that switches to TLS or to MySQL's compressed
// protocol is forwarded blindly from then on (its commits are not seen):
// use sslmode=disable, or set Options.DenyTLS, for PostgreSQL tests that
// drop commit replies.
//
// It is test and tool infrastructure: it depends on no store backend.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Protocol names the wire protocol a Proxy parses to find COMMITs.
type Protocol int

const (
	None     Protocol = iota // plain TCP: bytes are forwarded, nothing parsed
	Postgres                 // PostgreSQL frontend/backend protocol 3.0
	MySQL                    // MySQL/MariaDB client/server protocol
)

func (p Protocol) String() string {
	switch p {
	case None:
		return "none"
	case Postgres:
		return "postgres"
	case MySQL:
		return "mysql"
	}
	return fmt.Sprintf("Protocol(%d)", int(p))
}

// Options configure a Proxy. The zero value is a plain TCP proxy.
type Options struct {
	Protocol Protocol
	// Logf, if set, receives one line per fault the proxy makes and per
	// connection it cannot serve (e.g. t.Logf).
	Logf func(format string, args ...any)
	// DenyTLS makes the proxy answer a PostgreSQL SSLRequest or
	// GSSENCRequest with 'N' itself instead of passing it to the server,
	// so a client with sslmode=prefer stays in plain text and its commits
	// can be seen. With DenyTLS false the request goes to the server; if
	// the server accepts, that connection is forwarded blindly.
	DenyTLS bool
	// DialTimeout bounds the connection to the target; 0 means 10s.
	DialTimeout time.Duration
}

// Stats are counters since Start.
type Stats struct {
	Accepted             int64 // client connections accepted
	Active               int   // connections open now
	Cuts                 int64 // connections closed by Cut
	CommitsSeen          int64 // COMMITs recognised (Postgres/MySQL)
	DroppedCommitReplies int64 // COMMIT replies discarded (connection cut after)
	PendingDrops         int64 // COMMIT replies still to drop (DropCommitReplies)
	DialErrors           int64 // failed connections to the target
	BytesUp, BytesDown   int64 // bytes forwarded client→server, server→client
	// RoundTrips counts the requests clients sent after connecting, each
	// answered before the client goes on (Postgres/MySQL): PostgreSQL
	// Query, Sync and FunctionCall messages (each ends with a
	// ReadyForQuery), MySQL command packets. It is what a statement costs
	// on the wire, however the driver batches its messages.
	RoundTrips int64
	Blackholed bool          // Blackhole is on
	Delay      time.Duration // current SetDelay
}

// Proxy is a running fault proxy. Its methods are safe for concurrent use.
type Proxy struct {
	target string
	o      Options
	ln     net.Listener
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	conns     map[*conn]struct{}
	blackhole bool
	healed    chan struct{} // closed while no blackhole is on

	delay   atomic.Int64 // time.Duration
	drops   atomic.Int64 // commit replies still to drop
	nAcc    atomic.Int64
	nCuts   atomic.Int64
	nCommit atomic.Int64
	nDrop   atomic.Int64
	nDialE  atomic.Int64
	bytesUp atomic.Int64
	bytesDn atomic.Int64
	nRT     atomic.Int64
}

// Start listens on 127.0.0.1 on a free port and forwards every connection
// it accepts to target (host:port).
func Start(target string, o Options) (*Proxy, error) {
	if o.Protocol < None || o.Protocol > MySQL {
		return nil, fmt.Errorf("faultproxy: unknown protocol %d", int(o.Protocol))
	}
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: %w", target, err)
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	healed := make(chan struct{})
	close(healed)
	p := &Proxy{
		target: target,
		o:      o,
		ln:     ln,
		done:   make(chan struct{}),
		conns:  map[*conn]struct{}{},
		healed: healed,
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address clients connect to, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address new connections are forwarded to.
func (p *Proxy) Target() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target
}

// SetTarget points new connections at addr (host:port), as a service
// address is moved to a promoted standby; connections already made keep
// their server (Cut ends them).
func (p *Proxy) SetTarget(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("faultproxy: target %q: %w", addr, err)
	}
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
	p.logf("target now %s", addr)
	return nil
}

func (p *Proxy) logf(format string, args ...any) {
	if p.o.Logf != nil {
		p.o.Logf("faultproxy %s→%s: "+format, append([]any{p.Addr(), p.Target()}, args...)...)
	}
}

// Cut closes every current connection now, on both sides, as a network
// reset would; the client sees its connection end. New connections work
// as before (unless a blackhole is on).
func (p *Proxy) Cut() { p.cut(false) }

// Reset is Cut with a TCP reset (RST) in place of the orderly close, as a
// rebooted peer or a firewall answers: drivers report it differently
// ("connection reset by peer" rather than EOF), and both must be mapped.
func (p *Proxy) Reset() { p.cut(true) }

func (p *Proxy) cut(rst bool) {
	p.mu.Lock()
	cs := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	for _, c := range cs {
		if rst {
			c.lingerZero()
		}
		if c.close() {
			p.nCuts.Add(1)
		}
	}
	if len(cs) > 0 {
		p.logf("cut %d connections (reset %v)", len(cs), rst)
	}
}

// Blackhole turns a partition on or off. While on, no byte is forwarded in
// either direction and no FIN or RST is sent: sockets stay open, data and
// closes are held (as TCP retransmission would hold them), and new
// connections are accepted but not connected to the target. Turning it
// off delivers what was held, as a healed partition does; a client that
// gave up in the meantime has closed its side, and that close is passed on.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	if on == p.blackhole {
		p.mu.Unlock()
		return
	}
	p.blackhole = on
	if on {
		p.healed = make(chan struct{})
	} else {
		close(p.healed)
	}
	p.mu.Unlock()
	p.logf("blackhole %v", on)
}

// gate returns a channel that is closed when no blackhole is on.
func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.healed
}

// SetDelay adds d of latency to every chunk of bytes forwarded, in both
// directions (a request and its reply take 2d longer). Chunks keep their
// order; d applies from the time a chunk is read, so a stream is delayed,
// not slowed to one chunk per d. 0 turns the delay off.
func (p *Proxy) SetDelay(d time.Duration) {
	if d < 0 {
		d = 0
	}
	p.delay.Store(int64(d))
	p.logf("delay %v", d)
}

// DropCommitReplies makes the next n COMMITs an ambiguous commit: each is
// forwarded to the server, the proxy waits for the server's complete reply
// (PostgreSQL: up to its ReadyForQuery; MySQL: the OK or ERR packet),
// discards it and cuts that connection. The commit has applied; the client
// sees its connection fail and cannot know. n replaces any count still
// pending; n <= 0 cancels. Only Postgres and MySQL proxies see commits.
func (p *Proxy) DropCommitReplies(n int) {
	if n < 0 {
		n = 0
	}
	p.drops.Store(int64(n))
	p.logf("drop the next %d commit replies", n)
}

// claimDrop takes one pending commit-reply drop, if any.
func (p *Proxy) claimDrop() bool {
	for {
		n := p.drops.Load()
		if n <= 0 {
			return false
		}
		if p.drops.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// Stats returns the counters so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	active, bh := len(p.conns), p.blackhole
	p.mu.Unlock()
	return Stats{
		Accepted:             p.nAcc.Load(),
		Active:               active,
		Cuts:                 p.nCuts.Load(),
		CommitsSeen:          p.nCommit.Load(),
		DroppedCommitReplies: p.nDrop.Load(),
		PendingDrops:         p.drops.Load(),
		DialErrors:           p.nDialE.Load(),
		BytesUp:              p.bytesUp.Load(),
		BytesDown:            p.bytesDn.Load(),
		RoundTrips:           p.nRT.Load(),
		Blackholed:           bh,
		Delay:                time.Duration(p.delay.Load()),
	}
}

// Close stops listening, closes every connection and returns when every
// goroutine of the proxy has ended. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	close(p.done)
	cs := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range cs {
		c.close()
	}
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		cc, err := p.ln.Accept()
		if err != nil {
			select {
			case <-p.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			p.logf("accept: %v", err)
			select {
			case <-p.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.nAcc.Add(1)
		c := &conn{p: p, client: cc, done: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			cc.Close()
			return
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go c.serve()
	}
}

// conn is one client connection and its connection to the target.
type conn struct {
	p      *Proxy
	client net.Conn
	done   chan struct{} // closed by close

	closeOnce sync.Once
	smu       sync.Mutex // guards server
	server    net.Conn

	halfDone atomic.Int32 // directions that ended cleanly

	st protoState // shared by both directions of the protocol parser
}

// lingerZero makes the next close of both sides send a RST.
func (c *conn) lingerZero() {
	if tc, ok := c.client.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.smu.Lock()
	if tc, ok := c.server.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.smu.Unlock()
}

// close closes both sides once; it reports whether this call did it.
func (c *conn) close() bool {
	did := false
	c.closeOnce.Do(func() {
		did = true
		close(c.done)
		c.client.Close()
		c.smu.Lock()
		if c.server != nil {
			c.server.Close()
		}
		c.smu.Unlock()
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	})
	return did
}

func (c *conn) serve() {
	defer c.p.wg.Done()
	// A connection accepted during a partition waits for it to heal.
	select {
	case <-c.p.gate():
	case <-c.done:
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.p.o.DialTimeout)
	go func() { // Cut or Close abandons a dial in progress
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var d net.Dialer
	sc, err := d.DialContext(ctx, "tcp", c.p.Target())
	cancel()
	if err != nil {
		c.p.nDialE.Add(1)
		c.p.logf("dial: %v", err)
		c.close()
		return
	}
	c.smu.Lock()
	select {
	case <-c.done:
		c.smu.Unlock()
		sc.Close()
		return
	default:
	}
	c.server = sc
	c.smu.Unlock()

	up := &direction{c: c, from: c.client, to: sc, up: true, bytes: &c.p.bytesUp}
	down := &direction{c: c, from: sc, to: c.client, bytes: &c.p.bytesDn}
	up.inspect, down.inspect = c.st.inspectors(c, c.p.o.Protocol)
	c.p.wg.Add(4)
	go up.read()
	go up.write()
	go down.read()
	go down.write()
}

// chunk is bytes read from one side, stamped with the time they arrived.
type chunk struct {
	b  []byte
	at time.Time
	// cut after this chunk is written (or instead of writing it, if b is
	// empty): the reply of a dropped commit has been seen.
	cut bool
}

// direction forwards one way: a reader that parses and queues chunks and a
// writer that delays, holds (blackhole) and writes them.
type direction struct {
	c       *conn
	from    net.Conn
	to      net.Conn
	up      bool // client→server
	bytes   *atomic.Int64
	q       chan chunk
	inspect func(b []byte) (fwd []byte, cut bool)
	once    sync.Once
}

func (d *direction) queue() chan chunk {
	d.once.Do(func() { d.q = make(chan chunk, 64) })
	return d.q
}

func (d *direction) read() {
	defer d.c.p.wg.Done()
	q := d.queue()
	defer close(q)
	buf := make([]byte, 32<<10)
	for {
		n, err := d.from.Read(buf)
		if n > 0 {
			// The chunk outlives buf's next Read: it gets its own bytes.
			ch := chunk{at: time.Now()}
			if d.inspect != nil {
				ch.b, ch.cut = d.inspect(buf[:n])
			} else {
				ch.b = append([]byte(nil), buf[:n]...)
			}
			select {
			case q <- ch:
			case <-d.c.done:
				return
			}
			if ch.cut {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				// A reset or a local close: the whole connection is over.
				d.c.close()
			}
			return
		}
	}
}

func (d *direction) write() {
	defer d.c.p.wg.Done()
	q := d.queue()
	for {
		var ch chunk
		var ok bool
		select {
		case ch, ok = <-q:
		case <-d.c.done:
			return
		}
		if ok {
			if delay := time.Duration(d.c.p.delay.Load()); delay > 0 {
				if wait := time.Until(ch.at.Add(delay)); wait > 0 {
					t := time.NewTimer(wait)
					select {
					case <-t.C:
					case <-d.c.done:
						t.Stop()
						return
					}
				}
			}
		}
		// Hold everything, the end of the stream included, while
		// partitioned.
		select {
		case <-d.c.p.gate():
		case <-d.c.done:
			return
		}
		if !ok {
			// The sender closed its side cleanly: pass the FIN on and
			// end the connection once both directions have.
			if tc, isTCP := d.to.(*net.TCPConn); isTCP {
				tc.CloseWrite()
			}
			if d.c.halfDone.Add(1) == 2 {
				d.c.close()
			}
			return
		}
		if len(ch.b) > 0 {
			if _, err := d.to.Write(ch.b); err != nil {
				d.c.close()
				return
			}
			d.bytes.Add(int64(len(ch.b)))
		}
		if ch.cut {
			d.c.p.nDrop.Add(1)
			d.c.p.logf("dropped a commit reply; cut the connection from %s", d.c.client.RemoteAddr())
			d.c.close()
			return
		}
	}
}
