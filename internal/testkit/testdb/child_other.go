//go:build !unix

package testdb

import "os"

// resume: no process is stopped where there is no SIGSTOP.
func resume(*os.Process) {}
