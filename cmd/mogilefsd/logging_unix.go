//go:build unix

package main

import (
	"io"
	"log/syslog"
)

// openSyslog connects to the local syslog daemon; one log record is one
// message, tagged mogilefsd, facility daemon. (The record's own level=
// field carries the severity; the syslog priority is info for all.)
var openSyslog = func() (io.WriteCloser, error) {
	return syslog.New(syslog.LOG_INFO|syslog.LOG_DAEMON, "mogilefsd")
}
