//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package mysql

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// peerWatch waits on a duplicate of a session's socket for the server to
// close it, peeking so the driver's bytes are never consumed.
type peerWatch struct {
	f  *os.File
	rc syscall.RawConn
}

// newPeerWatch returns nil when the socket cannot be watched (then the
// watcher relies on pings alone).
func newPeerWatch(c net.Conn) *peerWatch {
	fc, ok := c.(interface{ File() (*os.File, error) })
	if !ok {
		return nil
	}
	f, err := fc.File()
	if err != nil {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		// Not pollable: a wait could neither block nor time out.
		f.Close()
		return nil
	}
	return &peerWatch{f: f, rc: rc}
}

type peerEvent int

const (
	peerQuiet  peerEvent = iota // d passed, or interrupted
	peerData                    // unsolicited bytes: the server is saying goodbye
	peerClosed                  // the server closed the connection
)

// wait blocks for up to d until something happens on the socket, or stop
// is closed and interrupt called.
func (p *peerWatch) wait(d time.Duration, stop <-chan struct{}) peerEvent {
	if err := p.f.SetReadDeadline(time.Now().Add(d)); err != nil {
		// Cannot happen on a descriptor that took a deadline before; if it
		// does, wait out the period like a watcher without a socket.
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-stop:
		}
		return peerQuiet
	}
	// interrupt may have run before the deadline above replaced its own.
	select {
	case <-stop:
		return peerQuiet
	default:
	}
	ev := peerQuiet
	err := p.rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		switch {
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EINTR):
			return false
		case err != nil, n == 0:
			ev = peerClosed
		default:
			ev = peerData
		}
		return true
	})
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return peerClosed
	}
	return ev
}

// interrupt ends a wait in progress at once.
func (p *peerWatch) interrupt() { _ = p.f.SetReadDeadline(time.Unix(1, 0)) }

// close shuts the socket down, for the driver's descriptor too, and closes
// the duplicate: a lock session given up on must end on the server now, not
// when the last descriptor someone forgot goes.
func (p *peerWatch) close() {
	_ = p.rc.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
	_ = p.f.Close()
}
