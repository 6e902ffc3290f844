package tracker

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"
)

// isTimeout reports a deadline that passed (as opposed to a closed or reset
// connection).
func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// perAddr counts open connections by remote address, for
// max_conns_per_ip: one peer must not take every connection slot.
type perAddr struct {
	max int // 0 = no bound
	mu  sync.Mutex
	n   map[netip.Addr]int
}

// acquire counts nc against its address, reporting false (and counting
// nothing) when the address is at its bound.
func (p *perAddr) acquire(nc net.Conn) bool {
	if p.max <= 0 {
		return true
	}
	a, ok := remoteAddr(nc)
	if !ok {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == nil {
		p.n = map[netip.Addr]int{}
	}
	if p.n[a] >= p.max {
		return false
	}
	p.n[a]++
	return true
}

func (p *perAddr) release(nc net.Conn) {
	if p.max <= 0 {
		return
	}
	a, ok := remoteAddr(nc)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, counted := p.n[a]; !counted {
		return
	}
	if p.n[a]--; p.n[a] <= 0 {
		delete(p.n, a)
	}
}

// admit applies max_conns_per_ip to a new connection; a refused one gets
// the original's error line and is closed.
func (t *Tracker) admit(nc net.Conn) bool {
	if t.perAddr.acquire(nc) {
		return true
	}
	t.stats.connsRefused.Add(1)
	t.log.Warn("connection refused: too many from one address", "remote", nc.RemoteAddr().String(), "max_conns_per_ip", t.cfg.MaxConnsPerIP)
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	io.WriteString(nc, errLine("too_many_connections", "Too many client connections from your address", nil))
	nc.Close()
	return false
}

// awaitLine waits for the first byte of the next request (as long as
// idle_timeout allows, or forever), then gives the rest of the line
// line_timeout to arrive: a peer cannot hold a connection and its line
// buffer by sending a partial line and stopping.
func (c *conn) awaitLine(br *bufio.Reader) error {
	if _, err := br.Peek(1); err != nil {
		return err
	}
	d := c.t.cfg.LineTimeout
	if d <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return net.ErrClosed
	}
	c.nc.SetReadDeadline(time.Now().Add(d))
	return nil
}
