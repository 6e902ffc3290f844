//go:build !unix

package testdb

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// lockFile takes path by creating it exclusively, waiting up to ten
// minutes (a container start) for another binary to remove it.
func lockFile(path string) (func(), error) {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) || time.Now().After(deadline) {
			return nil, fmt.Errorf("testdb: lock %s: %w", path, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processAlive: on Windows FindProcess opens the process, and fails when
// it is gone.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
