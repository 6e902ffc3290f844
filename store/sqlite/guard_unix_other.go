//go:build unix && !linux

package sqlite

import "os"

func lockHolder(os.FileInfo) string { return "another process" }
