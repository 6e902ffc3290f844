package load

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// dbProcs names the processes (their /proc comm) of a backend's database
// server: the CPU they spend per upload is what a database server's cores
// cap an installation at, however many trackers it has. SQLite runs in the
// trackers' process and has none.
func dbProcs(backend string) []string {
	switch strings.TrimSuffix(strings.SplitN(backend, "/", 2)[0], "-pgbouncer") {
	case "mysql", "mariadb", "galera":
		return []string{"mariadbd", "mysqld"}
	case "postgres":
		return []string{"postgres"}
	}
	return nil
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time, user and system, that each process named
// names has used, by pid: its own, and that of children it has reaped
// (PostgreSQL's postmaster reaps its backends, so a backend that exits
// during a cell still counts). ok is false when /proc cannot tell (not
// Linux, or no such process).
func procCPU(names []string) (_ map[int]time.Duration, ok bool) {
	if len(names) == 0 {
		return nil, false
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	cpu := make(map[int]time.Duration)
	for _, p := range stats {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open {
			continue
		}
		if !slices.Contains(names, string(b[open+1:end])) {
			continue
		}
		// After "comm) ": state is field 3; utime, stime, cutime and
		// cstime are fields 14 to 17 (proc(5)).
		f := strings.Fields(string(b[end+1:]))
		if len(f) < 15 {
			continue
		}
		var ticks int64
		for _, s := range f[11:15] {
			n, _ := strconv.ParseInt(s, 10, 64)
			ticks += n
		}
		cpu[pid] = time.Duration(ticks) * clockTick
	}
	return cpu, len(cpu) > 0
}

// startCPU reads the database server's CPU time now; the function it
// returns gives what was spent since, per iteration of ops, or -1.
//
// It counts per process: what each process alive at both reads spent
// between them, and all of what a process started since has spent. A
// process that ended meanwhile without a counted parent reaping it
// (another test's private instance, stopped while this cell ran) drops
// out instead of making the sum go backwards.
func startCPU(backend string) func(ops int) time.Duration {
	names := dbProcs(backend)
	before, ok := procCPU(names)
	return func(ops int) time.Duration {
		after, ok2 := procCPU(names)
		if !ok || !ok2 || ops <= 0 {
			return -1
		}
		return cpuSince(before, after) / time.Duration(ops)
	}
}

// cpuSince is the CPU time spent between two readings of procCPU.
func cpuSince(before, after map[int]time.Duration) time.Duration {
	var spent time.Duration
	for pid, a := range after {
		b := before[pid]
		if a < b {
			// The pid was reused by a new process: all of its time is new.
			b = 0
		}
		spent += a - b
	}
	return spent
}
