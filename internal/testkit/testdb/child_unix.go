//go:build unix

package testdb

import (
	"os"
	"syscall"
)

// resume continues p should a test have stopped it (SIGSTOP).
func resume(p *os.Process) { p.Signal(syscall.SIGCONT) }
