package postgres_test

import (
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
)

// A try-once Lock of a free name is granted by a process the machine held
// back past its lease (testdb.TryOnceAfterPause): it waits for its own
// lease's renewal rather than report the name taken.
func TestLocks_TryOnceAfterPause(t *testing.T) {
	testdb.TryOnceAfterPause(t, testdb.Postgres(t), lease+lease/2)
}

// The same with the locks in etcd (lock_dsn), paused past the session's
// TTL: a Store whose etcd session lapsed waits for its new one.
func TestLocks_TryOnceAfterPauseEtcd(t *testing.T) {
	locks := testdb.Etcd(t)
	testdb.TryOnceAfterPause(t, testdb.WithLockDSN(testdb.Postgres(t), locks), 2500*time.Millisecond)
}
