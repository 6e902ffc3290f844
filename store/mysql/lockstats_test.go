package mysql_test

import (
	"testing"
	"time"
)

// Each held lock pins one session, and LockStats.Pinned says how many are
// pinned now (what storemetrics exports as gomogile_lock_sessions_pinned).
func TestLockStats_CountsPinnedSessions(t *testing.T) {
	h := newHarness(t)
	s := h.open(t)
	ls := s
	pinned := func() int64 { return ls.LockStats().Pinned }
	if got := pinned(); got != 0 {
		t.Fatalf("Pinned with no lock = %d; want 0", got)
	}
	a := mustLock(t, s, "pin/a", 0)
	b := mustLock(t, s, "pin/b", time.Second)
	if got := pinned(); got != 2 {
		t.Errorf("Pinned holding two locks = %d; want 2", got)
	}
	mustRelease(t, a)
	if got := pinned(); got != 1 {
		t.Errorf("Pinned after one release = %d; want 1", got)
	}
	mustRelease(t, b)
	if got := pinned(); got != 0 || ls.LockStats().Reaped != 0 {
		t.Errorf("LockStats after both releases = %+v; want zero", ls.LockStats())
	}
}
