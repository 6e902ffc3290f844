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
	// Block counts are in fragment units on Linux; df uses f_frsize too.
	bs := uint64(st.Frsize)
	if bs == 0 {
		bs = uint64(st.Bsize)
	}
	return fsStats{blockSize: bs, blocks: st.Blocks, free: st.Bfree, avail: st.Bavail}, nil
}
