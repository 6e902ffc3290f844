//go:build unix

package client

import (
	"errors"
	"net"
	"syscall"
)

// connAlive peeks at an idle connection without blocking: EOF means the
// tracker closed it while idle, and data means it is out of step. Either
// way the connection must not carry the next command — which matters for
// commands that are not safe to send twice, since after a failed send the
// client could not tell whether the tracker ran them.
func connAlive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	rerr := rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, err := syscall.Read(int(fd), b[:])
		switch {
		case n > 0, n == 0 && err == nil:
			alive = false
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK):
			alive = true
		default:
			alive = false
		}
		// true: done, do not wait for readability.
		return true
	})
	return rerr == nil && alive
}
