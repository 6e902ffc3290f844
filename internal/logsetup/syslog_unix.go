//go:build unix

package logsetup

import (
	"io"
	"log/syslog"
)

// OpenSyslog connects to the local syslog daemon; one log record is one
// message, tagged tag, facility daemon. (The record's own level= field
// carries the severity; the syslog priority is info for all.) A variable,
// so that a daemon's tests can stand in for a syslog daemon.
var OpenSyslog = func(tag string) (io.WriteCloser, error) {
	return syslog.New(syslog.LOG_INFO|syslog.LOG_DAEMON, tag)
}
