//go:build unix

package sqlite

import (
	"fmt"
	"os"
	"syscall"
)

// guardPath is the file whose flock marks the database as owned: the
// database itself, so that every path to it meets one lock.
func guardPath(db string) string { return db }

// describeFile names the database and its identity, since a hard link may
// reach it under another name.
func describeFile(path string, info os.FileInfo) string {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%s (device %d, inode %d)", path, st.Dev, st.Ino)
	}
	return path
}
