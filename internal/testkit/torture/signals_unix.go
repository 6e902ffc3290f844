//go:build unix

package torture

import "syscall"

// The pause fault's signals.
const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)
