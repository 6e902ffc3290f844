package mogstored

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// errSlowBody ends an upload whose body stopped or trickles below
// MinBodyRate: such a client holds a connection slot and an open temporary
// file for as long as it likes otherwise.
var errSlowBody = errors.New("upload body too slow")

// pacedBody reads a PUT body, giving each read BodyTimeout to bring a byte
// and, once BodyTimeout has passed since the start, requiring an average of
// MinBodyRate bytes per second.
type pacedBody struct {
	r       io.Reader
	rc      *http.ResponseController
	stall   time.Duration // <= 0: none
	minRate int64         // <= 0: none
	start   time.Time
	n       int64
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
	return n, err
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
		io.WriteString(c, "HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\ntoo many connections from your address\n")
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
