package postgres_test

import (
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store/postgres"
)

// The reaper's frees are counted in LockStats.Reaped of the Store whose
// reap freed them (what storemetrics exports as gomogile_lock_reaped_total).
func TestLockStats_CountsReapedLocks(t *testing.T) {
	dsn := testdb.Postgres(t)
	dead, other := open(t, dsn), open(t, dsn)
	ls := other
	if got := ls.LockStats(); got.Reaped != 0 || got.Pinned != 0 || got.Woken != 0 || got.Owner == 0 {
		t.Fatalf("LockStats before any reap = %+v; want zero counts and a registered owner", got)
	}
	lock(t, dead, "dead/1", 0)
	lock(t, dead, "dead/2", 0)
	if err := postgres.CrashLocks(dead); err != nil {
		t.Fatal(err)
	}
	bound := other.Capabilities().DeadOwnerBound
	lock(t, other, "dead/1", bound+lease)
	if !waitFor(bound+lease, func() bool { return ls.LockStats().Reaped >= 2 }) {
		t.Errorf("LockStats after the dead owner's two locks were reaped = %+v; want Reaped 2", ls.LockStats())
	}
	if got := ls.LockStats().Pinned; got != 0 {
		t.Errorf("Pinned = %d on the lease mechanism; want 0", got)
	}
}
