//go:build unix

package jobs

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// ProcessesSupported reports whether Options.Process can run workers in
// processes of their own here: on Unix systems, which have socketpairs
// to pass a worker its connection as fd 3.
const ProcessesSupported = true

// socketpair is a connected pair: ours, and the file the worker process
// gets as its fd 3. Both ends are close-on-exec (the child's fd 3 is a
// dup exec.Cmd makes), set under ForkLock so that no process another
// goroutine starts meanwhile inherits them.
func socketpair() (net.Conn, *os.File, error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("jobs: socketpair: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "worker")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("jobs: socketpair: %w", err)
	}
	return c, os.NewFile(uintptr(fds[1]), "tracker"), nil
}
