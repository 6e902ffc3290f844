package mysql

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"syscall"
)

// The lock pool dials through a dialer that remembers each connection's
// socket under the connection id the server announces in its greeting, so
// a lock's watcher can wait on the socket itself and fire Lost within
// milliseconds of the server ending the session, instead of at its next
// ping. The server shuts a killed session's socket down before it frees
// that session's locks, but a waiting session's grant can still reach its
// client first (measured: up to 0.6ms earlier), so this makes Lost prompt,
// not earlier than the next grant; the watcher's pings cover what the
// socket does not show.

// dialer dials lock sessions and indexes them by connection id.
type dialer struct {
	mu    sync.Mutex
	conns map[uint32]*trackedConn
}

func newDialer() *dialer { return &dialer{conns: make(map[uint32]*trackedConn)} }

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &trackedConn{Conn: c, d: d}, nil
}

// take removes and returns the socket of connection id, if it was seen.
func (d *dialer) take(id uint64) net.Conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.conns[uint32(id)]
	if !ok {
		return nil
	}
	delete(d.conns, uint32(id))
	return c.Conn
}

// trackedConn reads the server's greeting as it passes to learn the
// connection id: protocol version byte 10, a NUL-terminated server
// version, then the id as four little-endian bytes.
type trackedConn struct {
	net.Conn
	d        *dialer
	greeting []byte
	done     bool   // greeting parsed or given up on
	id       uint32 // guarded by d.mu
	known    bool   // guarded by d.mu
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done && n > 0 {
		c.sniff(p[:n])
	}
	return n, err
}

func (c *trackedConn) sniff(b []byte) {
	const maxGreeting = 512
	c.greeting = append(c.greeting, b...)
	g := c.greeting
	if len(g) < 5 {
		return
	}
	if g[4] != 10 {
		c.done, c.greeting = true, nil
		return
	}
	for i := 5; i < len(g); i++ {
		if g[i] == 0 {
			if len(g) < i+5 {
				return
			}
			c.done, c.greeting = true, nil
			// Close may run on the driver's cancel goroutine: id and known
			// are guarded by the dialer's mutex.
			c.d.mu.Lock()
			c.id, c.known = binary.LittleEndian.Uint32(g[i+1:i+5]), true
			c.d.conns[c.id] = c
			c.d.mu.Unlock()
			return
		}
	}
	if len(g) > maxGreeting {
		c.done, c.greeting = true, nil
	}
}

func (c *trackedConn) Close() error {
	c.d.mu.Lock()
	if c.known && c.d.conns[c.id] == c {
		delete(c.d.conns, c.id)
	}
	c.d.mu.Unlock()
	return c.Conn.Close()
}

// SyscallConn keeps the driver's liveness check of reused connections.
func (c *trackedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, syscall.EINVAL
	}
	return sc.SyscallConn()
}
