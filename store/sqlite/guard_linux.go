package sqlite

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockHolder names the process holding the flock on the file, from
// /proc/locks, so the refusal says which process to look at.
func lockHolder(info os.FileInfo) string {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return "another process"
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return "another process"
	}
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for _, l := range strings.Split(string(b), "\n") {
		// 1: FLOCK  ADVISORY  WRITE 2150 fd:00:1053712 0 EOF
		f := strings.Fields(l)
		if len(f) >= 6 && f[1] == "FLOCK" && f[3] == "WRITE" && f[5] == id && f[4] != fmt.Sprint(os.Getpid()) {
			return "pid " + f[4]
		}
	}
	return "another process"
}
