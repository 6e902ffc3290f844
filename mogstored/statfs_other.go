//go:build !(linux || darwin || freebsd)

package mogstored

import "errors"

type fsStats struct {
	blockSize, blocks, free, avail uint64
}

func statFS(dir string) (fsStats, error) {
	return fsStats{}, errors.ErrUnsupported
}

func mountOf(dir string) (device, mountPoint string) { return "-", "" }
