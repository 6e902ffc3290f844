//go:build unix

package postgres_test

import "syscall"

// The pause faults stop and resume a process; only Unix has the signals.
var sigStop, sigCont = syscall.SIGSTOP, syscall.SIGCONT
