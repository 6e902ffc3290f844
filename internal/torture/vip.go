package torture

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// vip is a service address for a failover pair, as a virtual IP or an
// HAProxy in front of the primary would be: it forwards each connection to
// the current primary, and on failover points at the promoted standby and
// closes every connection to the old one. (store/postgres takes a single
// host; a multi-host DSN with target_session_attrs=read-write, pgx's form,
// is refused as an unknown parameter.)
type vip struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func startVIP(target string) (*vip, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("vip: %w", err)
	}
	v := &vip{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	v.wg.Add(1)
	go v.accept()
	return v, nil
}

func (v *vip) Addr() string { return v.ln.Addr().String() }

func (v *vip) accept() {
	defer v.wg.Done()
	for {
		c, err := v.ln.Accept()
		if err != nil {
			return
		}
		v.mu.Lock()
		target := v.target
		v.mu.Unlock()
		up, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		v.mu.Lock()
		v.conns[c], v.conns[up] = struct{}{}, struct{}{}
		v.mu.Unlock()
		v.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer v.wg.Done()
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
			v.mu.Lock()
			delete(v.conns, dst)
			delete(v.conns, src)
			v.mu.Unlock()
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

// switchTo points new connections at target and closes the current ones.
func (v *vip) switchTo(target string) {
	v.mu.Lock()
	v.target = target
	cs := make([]net.Conn, 0, len(v.conns))
	for c := range v.conns {
		cs = append(cs, c)
	}
	v.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

func (v *vip) close() {
	v.ln.Close()
	v.switchTo("")
	v.wg.Wait()
}
