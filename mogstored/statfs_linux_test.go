package mogstored

import (
	"syscall"
	"testing"
)

// kernelKiB asks the kernel directly for the available and total KiB of
// dir's filesystem, to check statFS against.
func kernelKiB(t *testing.T, dir string) (avail, total uint64, ok bool) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail = st.Bavail * uint64(st.Frsize) / 1024
	total = avail + (st.Blocks-st.Bfree)*uint64(st.Frsize)/1024
	return avail, total, true
}
