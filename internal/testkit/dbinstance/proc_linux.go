package dbinstance

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// procID names a process by pid and start time, which a reused pid does
// not share.
type procID struct {
	pid   int
	start uint64
}

// stat reads a process's state, parent and start time from /proc.
func stat(pid int) (state byte, ppid int, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	// pid (comm) state ppid … field 22 is the start time; comm may hold
	// spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	pp, err1 := strconv.Atoi(string(f[1]))
	st, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	return f[0][0], pp, st, true
}

// descendants lists every process below pid, from /proc.
func descendants(pid int) []procID {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	children := map[int][]procID{}
	for _, d := range dirs {
		c, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if _, pp, start, ok := stat(c); ok {
			children[pp] = append(children[pp], procID{c, start})
		}
	}
	var out []procID
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// alive reports whether k is still running (a zombie has exited).
func (k procID) alive() bool {
	state, _, start, ok := stat(k.pid)
	return ok && start == k.start && state != 'Z' && state != 'X'
}

// kill sends SIGKILL to k if its pid still names it.
func (k procID) kill() {
	if k.alive() {
		syscall.Kill(k.pid, syscall.SIGKILL)
	}
}

// alive reports whether pid names a process that has not exited.
func alive(pid int) bool {
	state, _, _, ok := stat(pid)
	return ok && state != 'Z' && state != 'X'
}

// dieWithParent makes the kernel SIGKILL a server when this process dies
// without cleaning up (a test binary killed at its timeout), so no private
// server outlives its owner. PostgreSQL's backends then exit on their own:
// they watch for the postmaster's death.
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
