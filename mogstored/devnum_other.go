//go:build !linux

package mogstored

// devNumber is only implemented on Linux, where /proc/diskstats exists too.
func devNumber(path string) (major, minor uint64, ok bool) { return 0, 0, false }
