package mogstored

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// mountOf finds the filesystem holding dir from /proc/self/mountinfo: its
// source (what df prints as "Filesystem") and its mount point. "-" and ""
// when it cannot tell.
func mountOf(dir string) (device, mountPoint string) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "-", ""
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "-", ""
	}
	defer f.Close()
	return mountFromInfo(f, real)
}

// mountFromInfo picks the longest mount point containing path; later
// entries win ties because they are mounted on top.
func mountFromInfo(r io.Reader, path string) (device, mountPoint string) {
	device = "-"
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || len(fields) < sep+3 {
			continue
		}
		mp := unescapeMount(fields[4])
		if !within(mp, path) || len(mp) < len(mountPoint) {
			continue
		}
		mountPoint, device = mp, unescapeMount(fields[sep+2])
	}
	return device, mountPoint
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
