package mogstored

import (
	"os"
	"syscall"
)

// devNumber is the major/minor of the filesystem holding path (glibc's
// gnu_dev_major/minor split of st_dev).
func devNumber(path string) (major, minor uint64, ok bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	dev := st.Dev
	major = (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor = dev&0xff | (dev>>12)&^0xff
	return major, minor, true
}
