package mogstored

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// errSlowBody ends an upload whose body stopped or trickles below
// MinBodyRate: such a client holds a connection slot and an open temporary
// file for as long as it likes otherwise.
var errSlowBody = errors.New("upload body too slow")

// pacedBody reads a PUT body, giving each read BodyTimeout to bring a byte
// and, once BodyTimeout has passed since the start, requiring an average of
// MinBodyRate bytes per second. It notes whether it read the body to its
// end.
type pacedBody struct {
	r       io.Reader
	rc      *http.ResponseController
	stall   time.Duration // <= 0: none
	minRate int64         // <= 0: none
	start   time.Time
	n       int64
	eof     bool
}

func (s *Server) pacedBody(w http.ResponseWriter, r *http.Request) *pacedBody {
	return &pacedBody{r: r.Body, rc: http.NewResponseController(w), stall: s.cfg.BodyTimeout,
		minRate: s.cfg.MinBodyRate, start: time.Now()}
}

func (b *pacedBody) Read(p []byte) (int, error) {
	if b.minRate > 0 {
		grace := b.stall
		if grace <= 0 {
			grace = DefaultBodyTimeout
		}
		if el := time.Since(b.start); el > grace && float64(b.n) < float64(b.minRate)*el.Seconds() {
			return 0, errSlowBody
		}
	}
	if b.stall > 0 {
		// Not every ResponseWriter supports deadlines (an embedder's
		// wrapper); then only the rate applies.
		_ = b.rc.SetReadDeadline(time.Now().Add(b.stall))
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		err = errSlowBody
	}
	b.eof = err == io.EOF
	return n, err
}

// A request the node answers without reading its body (any refusal, and
// GET, DELETE or MKCOL sent with a body) must not hold its connection.
// After the handler returns, net/http reads what is left of an unread body
// (up to 256 KiB), to keep the connection for the next request, and unless
// the answer says "Connection: close" it does so before it even sends the
// answer. It sets no deadline for that read: a client trickling its body
// got no answer and kept the connection for as long as it trickled. So the
// answer to a request with a body closes the connection unless put read
// the whole body, and every read of a body ends within BodyTimeout: of the
// request's arrival, or of put's last read. net/http still reads what the
// client sends meanwhile, so a client still sending sees the answer rather
// than a reset, but no longer. (A body declared larger than 256 KiB it
// does not read at all: it sends the answer and a FIN and closes soon
// after.)

// guardBody arms that for the request ServeHTTP is about to handle.
func (s *Server) guardBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	w.Header().Set("Connection", "close") // put deletes it once the body is read
	if d := s.cfg.BodyTimeout; d > 0 {
		// Also when mounted in another server, without armBodyRead. A
		// ResponseWriter without deadlines (an embedder's wrapper) leaves
		// this to the embedder's server.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
	}
}

// armBodyRead is the HTTP server's ConnState hook: once a request has
// arrived, reads on its connection end within BodyTimeout. That bounds the
// one body read no handler of ours sees: net/http answers an Expect other
// than 100-continue with 417 itself and then reads the body as above.
// Before a handler runs, net/http lifts the deadline for a request without
// a body (its background read, which notices a client going away, must not
// time out) and guardBody re-arms it for one with a body.
func (s *Server) armBodyRead(c net.Conn, st http.ConnState) {
	if d := s.cfg.BodyTimeout; st == http.StateActive && d > 0 {
		c.SetReadDeadline(time.Now().Add(d))
	}
}

// perAddr counts open HTTP connections by remote address, for
// MaxConnsPerIP: one peer must not take every connection slot.
type perAddr struct {
	max int // <= 0: no bound
	log *slog.Logger
	mu  sync.Mutex
	n   map[netip.Addr]int
}

// acquire counts c against its address; over the bound it answers 503,
// closes c and reports false.
func (p *perAddr) acquire(c net.Conn) (netip.Addr, bool) {
	if p.max <= 0 {
		return netip.Addr{}, true
	}
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}, true
	}
	a := ap.Addr().Unmap()
	p.mu.Lock()
	if p.n == nil {
		p.n = map[netip.Addr]int{}
	}
	if p.n[a] >= p.max {
		p.mu.Unlock()
		p.log.Warn("http connection refused: maxconnsperip reached", "remote", c.RemoteAddr().String(), "maxconnsperip", p.max)
		c.SetWriteDeadline(time.Now().Add(time.Second))
		// Content-Length, so that a client sees the whole answer even when
		// closing with its request unread resets the connection.
		const msg = "too many connections from your address\n"
		io.WriteString(c, "HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: "+strconv.Itoa(len(msg))+"\r\n\r\n"+msg)
		c.Close()
		return netip.Addr{}, false
	}
	p.n[a]++
	p.mu.Unlock()
	return a, true
}

func (p *perAddr) release(a netip.Addr) {
	if p.max <= 0 || !a.IsValid() {
		return
	}
	p.mu.Lock()
	if p.n[a]--; p.n[a] <= 0 {
		delete(p.n, a)
	}
	p.mu.Unlock()
}

// admitMgmt applies MgmtMaxConns to a new management connection; called
// with s.mu held. A refused connection gets an error line and is closed.
func (s *Server) admitMgmt(c net.Conn) bool {
	if s.cfg.MgmtMaxConns <= 0 || len(s.conns) < s.cfg.MgmtMaxConns {
		return true
	}
	s.log.Warn("management connection refused: mgmtmaxconns reached", "remote", c.RemoteAddr().String(), "mgmtmaxconns", s.cfg.MgmtMaxConns)
	c.SetWriteDeadline(time.Now().Add(time.Second))
	io.WriteString(c, "ERROR: too many connections\r\n")
	c.Close()
	return false
}

// mgmtIdle arms the idle timeout before a management command is read.
func (s *Server) mgmtIdle(c net.Conn) {
	if d := s.cfg.MgmtIdleTimeout; d > 0 {
		c.SetReadDeadline(time.Now().Add(d))
	}
}
