//go:build !unix

package postgres_test

import (
	"os"
	"syscall"
)

// Without SIGSTOP the pause faults cannot run: sending these fails with
// an error the tests report (os.Kill, the only other signal, would not
// pause but end the process, so it is not used).
var sigStop, sigCont os.Signal = syscall.Signal(-1), syscall.Signal(-1)
