package mysql_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// faultProxy is a TCP proxy between Stores and the real server for the
// faults that internal/testkit/faultproxy makes only for all connections at once:
// here each client connection is a link, found by the client's port (a
// lock session's local port), and faulted alone, so the Store's other
// pool stays healthy: a link whose replies are lost, one partitioned with
// no FIN or RST, one cut right after a given statement was delivered.
type faultProxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu       sync.Mutex
	links    map[int]*link
	cutAfter []byte // cut the next link that sends these bytes, after delivering them
	cuts     chan int
}

type link struct {
	client, server net.Conn

	mu         sync.Mutex
	dropDown   bool          // drop server→client bytes; client→server (and its FIN) still pass
	partition  bool          // drop both ways and pass no close either way
	clientGone chan struct{} // closed when the client closed its socket
	goneOnce   sync.Once
}

func newFaultProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &faultProxy{t: t, ln: ln, target: target, links: map[int]*link{}, cuts: make(chan int, 16)}
	done := make(chan struct{})
	go p.accept(done)
	t.Cleanup(func() {
		ln.Close()
		<-done
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range p.links {
			l.client.Close()
			l.server.Close()
		}
	})
	return p
}

// dsn is base with its host and port replaced by the proxy's.
func (p *faultProxy) dsn(t testing.TB, base string) string {
	return withHost(t, base, p.ln.Addr().String())
}

// withHost is the URL DSN base with its host:port replaced by addr.
func withHost(t testing.TB, base, addr string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("DSN %q: %v", base, err)
	}
	u.Host = addr
	return u.String()
}

func (p *faultProxy) accept(done chan struct{}) {
	defer close(done)
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		l := &link{client: c, server: s, clientGone: make(chan struct{})}
		p.mu.Lock()
		p.links[c.RemoteAddr().(*net.TCPAddr).Port] = l
		p.mu.Unlock()
		go p.pump(l, true)
		go p.pump(l, false)
	}
}

// link is the link of the client whose socket has local address a.
func (p *faultProxy) link(t testing.TB, a net.Addr) *link {
	t.Helper()
	port := a.(*net.TCPAddr).Port
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.links[port]
	if l == nil {
		t.Fatalf("proxy: no link from port %d", port)
	}
	return l
}

// cutAfterBytes makes the proxy cut, both ways, the next link on which the
// client sends b, right after delivering those bytes to the server: the
// statement runs, its reply is lost, the client sees its connection fail.
// The cut link's client port arrives on p.cuts.
func (p *faultProxy) cutAfterBytes(b string) {
	p.mu.Lock()
	p.cutAfter = []byte(b)
	p.mu.Unlock()
}

func (l *link) set(f func(l *link)) {
	l.mu.Lock()
	f(l)
	l.mu.Unlock()
}

func (p *faultProxy) pump(l *link, up bool) {
	src, dst := l.server, l.client
	if up {
		src, dst = l.client, l.server
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			l.mu.Lock()
			drop := l.partition || (!up && l.dropDown)
			l.mu.Unlock()
			cut := false
			if up && !drop {
				p.mu.Lock()
				if p.cutAfter != nil && bytes.Contains(chunk, p.cutAfter) {
					p.cutAfter, cut = nil, true
				}
				p.mu.Unlock()
			}
			if cut {
				// No reply may reach the client, however fast the server.
				l.set(func(l *link) { l.dropDown = true })
			}
			if !drop {
				if _, werr := dst.Write(chunk); werr != nil {
					src.Close()
					return
				}
			}
			if cut {
				l.server.Close()
				l.client.Close()
				p.cuts <- l.client.RemoteAddr().(*net.TCPAddr).Port
				return
			}
		}
		if err != nil {
			if up && (errors.Is(err, io.EOF) || isReset(err)) {
				l.goneOnce.Do(func() { close(l.clientGone) })
			}
			l.mu.Lock()
			hold := l.partition
			l.mu.Unlock()
			if !hold {
				dst.Close()
			}
			return
		}
	}
}

func isReset(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && !errors.Is(err, net.ErrClosed)
}

// targetOf is the host:port a DSN of the shared server names.
func targetOf(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("DSN %q: %v", dsn, err)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = strconv.Itoa(3306)
	}
	return net.JoinHostPort(host, port)
}

// waitClosed waits up to d for ch.
func waitClosed(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
