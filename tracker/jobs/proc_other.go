//go:build !unix

package jobs

import (
	"errors"
	"net"
	"os"
)

// ProcessesSupported reports whether Options.Process can run workers in
// processes of their own here: not on this system, which has no
// socketpairs to pass a worker its connection; workers are goroutines.
const ProcessesSupported = false

func socketpair() (net.Conn, *os.File, error) {
	return nil, nil, errors.New("jobs: worker processes need a Unix system")
}
