//go:build !unix

package main

import (
	"errors"
	"time"
)

func daemonize([]string, time.Duration) error {
	return errors.New("--daemonize is not supported on this platform; run mogilefsd under a service manager")
}

func setUser(uid, gid int) error {
	return errors.New("--user is not supported on this platform")
}
