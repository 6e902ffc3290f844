//go:build !unix

package sqlite

import "os"

// guardPath is the side file whose lock marks the database as owned:
// locking the database itself would be a mandatory lock here, blocking
// SQLite's own reads of it.
func guardPath(db string) string { return db + GuardSuffix }

func describeFile(path string, _ os.FileInfo) string { return path }

func lockHolder(os.FileInfo) string { return "another process" }
