//go:build unix && !linux

package dbinstance

import "syscall"

// descendants is only known on Linux; elsewhere Kill reaches the process
// group.
func descendants(int) []int { return nil }

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }
