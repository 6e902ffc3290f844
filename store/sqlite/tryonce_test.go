package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
)

// A try-once Lock of a free name is granted by a process the machine held
// back (testdb.TryOnceAfterPause); the database file is the child's alone.
func TestLock_TryOnceAfterPause(t *testing.T) {
	testdb.TryOnceAfterPause(t, "sqlite://"+filepath.Join(t.TempDir(), "tryonce.db"), 1500*time.Millisecond)
}
