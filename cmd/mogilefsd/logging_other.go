//go:build !unix

package main

import (
	"errors"
	"io"
)

var openSyslog = func() (io.WriteCloser, error) {
	return nil, errors.New("no syslog on this platform")
}
