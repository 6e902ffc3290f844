//go:build unix

package testdb

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on path; the kernel drops it if the
// process dies, so a killed test binary never wedges the next one.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("testdb: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("testdb: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
