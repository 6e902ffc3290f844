//go:build darwin || freebsd

package mogstored

import "syscall"

type fsStats struct {
	blockSize, blocks, free, avail uint64
}

func statFS(dir string) (fsStats, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fsStats{}, err
	}
	return fsStats{
		blockSize: uint64(st.Bsize),
		blocks:    uint64(st.Blocks),
		free:      uint64(st.Bfree),
		avail:     uint64(st.Bavail),
	}, nil
}

// mountOf is only implemented from /proc on Linux.
func mountOf(dir string) (device, mountPoint string) { return "-", "" }
