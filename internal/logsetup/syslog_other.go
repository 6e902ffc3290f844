//go:build !unix

package logsetup

import (
	"errors"
	"io"
)

// OpenSyslog: there is no syslog to reach on this platform.
var OpenSyslog = func(tag string) (io.WriteCloser, error) {
	return nil, errors.New("no syslog on this platform")
}
