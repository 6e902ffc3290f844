//go:build !unix

package torture

import "syscall"

// Elsewhere there is no SIGSTOP: the program builds, but its private
// servers (internal/testkit/dbinstance) and pause faults need a Unix system, so a
// run there fails at the start. These values are never delivered.
const (
	sigStop = syscall.Signal(0x13)
	sigCont = syscall.Signal(0x12)
)
