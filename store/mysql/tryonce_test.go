package mysql_test

import (
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
)

// A try-once Lock of a free name is granted by a process the machine held
// back past its watcher's ping deadline (testdb.TryOnceAfterPause).
func TestLock_TryOnceAfterPause(t *testing.T) {
	testdb.TryOnceAfterPause(t, testdb.MySQL(t), 1500*time.Millisecond)
}
