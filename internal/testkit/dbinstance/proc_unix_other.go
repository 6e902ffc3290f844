//go:build unix && !linux

package dbinstance

import "syscall"

// procID names a process; outside Linux only its pid is known.
type procID struct{ pid int }

// descendants is only known on Linux; elsewhere Kill reaches the process
// group.
func descendants(int) []procID { return nil }

func (k procID) alive() bool { return alive(k.pid) }
func (k procID) kill()       {}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// dieWithParent has no portable equivalent outside Linux.
func dieWithParent(*syscall.SysProcAttr) {}
