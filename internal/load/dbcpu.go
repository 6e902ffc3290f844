package load

import (
	"bytes"
	"os"
	"path/filepath"
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

// procCPU is the CPU time, user and system, that the processes named
// names have used: their own, and that of children they have reaped
// (PostgreSQL's postmaster reaps its backends, so a backend that exits
// during a cell still counts). ok is false when /proc cannot tell (not
// Linux, or no such process).
func procCPU(names []string) (_ time.Duration, ok bool) {
	if len(names) == 0 {
		return 0, false
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open {
			continue
		}
		comm := string(b[open+1 : end])
		found := false
		for _, n := range names {
			found = found || comm == n
		}
		if !found {
			continue
		}
		// After "comm) ": state is field 3; utime, stime, cutime and
		// cstime are fields 14 to 17 (proc(5)).
		f := strings.Fields(string(b[end+1:]))
		if len(f) < 15 {
			continue
		}
		for _, s := range f[11:15] {
			n, _ := strconv.ParseInt(s, 10, 64)
			ticks += n
		}
		ok = true
	}
	return time.Duration(ticks) * clockTick, ok
}

// startCPU reads the database server's CPU time now; the function it
// returns gives what was spent since, per iteration of ops, or -1.
func startCPU(backend string) func(ops int) time.Duration {
	names := dbProcs(backend)
	before, ok := procCPU(names)
	return func(ops int) time.Duration {
		after, ok2 := procCPU(names)
		if !ok || !ok2 || ops <= 0 || after < before {
			// after < before: a server process ended meanwhile without
			// a counted parent reaping it (another test's private
			// instance); nothing can be said.
			return -1
		}
		return (after - before) / time.Duration(ops)
	}
}
