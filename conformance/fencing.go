package conformance

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/gomogile/gomogile/store"
)

// Fencing tokens (store.Lock.Token, store.WithFence). A fence is only a
// name and a token carried by a context, so a stale holder's writes are
// played through any Store: on an embedded backend KillLockSession closes
// the holder's own Store, and what is checked is the database's refusal,
// not which connection the write took.

// token reads l's token and checks it against the previous grant's.
func tokenAfter(t *testing.T, l store.Lock, prev int64, what string) int64 {
	t.Helper()
	tok := l.Token()
	if tok <= prev {
		t.Fatalf("%s: Token() = %d; want more than the earlier grant's %d", what, tok, prev)
	}
	return tok
}

func testFenceTokensIncrease(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	a, b := e.open(t), e.open(t)
	var prev int64
	for i, s := range []*store.Store{a, b, a, a, b} {
		l := mustLock(t, s, name, e.deadBound())
		prev = tokenAfter(t, l, prev, fmt.Sprintf("grant %d", i+1))
		mustRelease(t, l)
	}
}

// fencedFixture is the state the fenced writes of one case try to change.
type fencedFixture struct {
	dmid    int
	devs    []int
	file    store.File // committed, on devs[0]
	tempFid int64      // reserved, not committed
}

func mkFencedFixture(t *testing.T, s *store.Store) fencedFixture {
	t.Helper()
	d := mkDomain(t, s, "fenced")
	devs := mkDevices(t, s, 2)
	f := mkFile(t, s, d.ID, "kept", devs[0])
	fid, err := s.CreateTempFile(t.Context(), store.TempFile{DomainID: d.ID, Key: "pending", DevIDs: devs})
	ok(t, err, "CreateTempFile")
	ok(t, s.SetServerSetting(t.Context(), "fenced_setting", "before"), "SetServerSetting")
	return fencedFixture{dmid: d.ID, devs: devs, file: f, tempFid: fid}
}

// snapshot is what a refused write must leave as it was.
type fencedSnapshot struct {
	Setting   string
	File      store.File
	FileOn    []int
	TempFile  bool
	Replicate int64
	Delete    int64
	Fsck      int64
}

func takeSnapshot(t *testing.T, s *store.Store, fx fencedFixture) fencedSnapshot {
	t.Helper()
	ctx := t.Context()
	var sn fencedSnapshot
	var err error
	sn.Setting, err = s.ServerSetting(ctx, "fenced_setting")
	ok(t, err, "ServerSetting")
	sn.File, err = s.File(ctx, fx.file.Fid)
	ok(t, err, "File")
	sn.FileOn, err = s.FileOn(ctx, fx.file.Fid)
	ok(t, err, "FileOn")
	_, err = s.TempFile(ctx, fx.tempFid)
	sn.TempFile = err == nil
	for q, p := range map[store.Queue]*int64{store.QueueReplicate: &sn.Replicate, store.QueueDelete: &sn.Delete, store.QueueFsck: &sn.Fsck} {
		*p, err = s.QueueLength(ctx, q)
		ok(t, err, "QueueLength(%s)", q)
	}
	return sn
}

// fencedWrites are the writes a lock guards in a tracker, each made under
// ctx through s.
func fencedWrites(s *store.Store, fx fencedFixture) []struct {
	name string
	do   func(ctx context.Context) error
} {
	return []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"SetServerSetting", func(ctx context.Context) error { return s.SetServerSetting(ctx, "fenced_setting", "after") }},
		{"IncrServerSetting", func(ctx context.Context) error {
			_, err := s.IncrServerSetting(ctx, "fenced_counter", 1)
			return err
		}},
		{"AddFileOn", func(ctx context.Context) error {
			_, err := s.AddFileOn(ctx, fx.file.Fid, fx.devs[1])
			return err
		}},
		{"SyncDevCount", func(ctx context.Context) error {
			_, err := s.SyncDevCount(ctx, fx.file.Fid)
			return err
		}},
		{"Enqueue", func(ctx context.Context) error {
			return s.Enqueue(ctx, store.QueueFsck, store.QueueEntry{Fid: fx.file.Fid})
		}},
		{"CommitFile", func(ctx context.Context) error {
			_, err := s.CommitFile(ctx, store.Commit{Fid: fx.tempFid, DomainID: fx.dmid, Key: "pending", Length: 1, DevIDs: fx.devs, Replicate: true})
			return err
		}},
		{"DeleteFile", func(ctx context.Context) error { return s.DeleteFile(ctx, fx.file.Fid) }},
	}
}

// checkStaleRefused plays every fenced write under stale through s and
// checks each is refused with ErrFenced and changes nothing, and that
// reads under the stale fence still work.
func checkStaleRefused(t *testing.T, s *store.Store, stale context.Context, fx fencedFixture) {
	t.Helper()
	before := takeSnapshot(t, s, fx)
	for _, w := range fencedWrites(s, fx) {
		isErr(t, w.do(stale), store.ErrFenced, "%s under a stale fence", w.name)
	}
	if _, err := s.ServerSetting(t.Context(), "fenced_counter"); err == nil {
		t.Errorf("IncrServerSetting under a stale fence created its setting")
	}
	if after := takeSnapshot(t, s, fx); !reflect.DeepEqual(after, before) {
		t.Errorf("state after refused fenced writes = %+v; want unchanged %+v", after, before)
	}
	if _, err := s.File(stale, fx.file.Fid); err != nil {
		t.Errorf("File under a stale fence: %v; want reads to ignore fences", err)
	}
}

// checkCurrentApplies plays every fenced write under cur through s and
// checks each applied.
func checkCurrentApplies(t *testing.T, s *store.Store, cur context.Context, fx fencedFixture) {
	t.Helper()
	for _, w := range fencedWrites(s, fx) {
		ok(t, w.do(cur), "%s under the current holder's fence", w.name)
	}
	ctx := t.Context()
	if v, err := s.ServerSetting(ctx, "fenced_setting"); err != nil || v != "after" {
		t.Errorf("setting after the current holder's write = %q, %v; want \"after\"", v, err)
	}
	if _, err := s.File(ctx, fx.file.Fid); err == nil {
		t.Errorf("file %d still there after the current holder's DeleteFile", fx.file.Fid)
	}
	if _, err := s.File(ctx, fx.tempFid); err != nil {
		t.Errorf("fid %d not committed by the current holder's CommitFile: %v", fx.tempFid, err)
	}
}

func testFenceStaleAfterKill(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	a, b, c := e.open(t), e.open(t), e.open(t)
	fx := mkFencedFixture(t, c)
	la := mustLock(t, a, name, 0)
	stale := store.WithFence(t.Context(), la)
	// The holder is paused, not told: its session is killed behind its
	// back, and another Store is granted the lock.
	e.kill(t, a, la)
	lb, err := b.Lock(t.Context(), name, e.deadBound())
	ok(t, err, "Lock by another Store after the holder's session was killed")
	tokenAfter(t, lb, la.Token(), "grant after the kill")
	checkStaleRefused(t, c, stale, fx)
	checkCurrentApplies(t, b, store.WithFence(t.Context(), lb), fx)
	mustRelease(t, lb)
}

func testFenceStaleAfterRelease(t *testing.T, e *env) {
	name, twin, other := lockName(t, "/x"), lockName(t, "/X"), lockName(t, "/other")
	e.expectFree(t, name, twin, other)
	a, b := e.open(t), e.open(t)
	fx := mkFencedFixture(t, a)
	lo := mustLock(t, a, other, 0)
	la := mustLock(t, a, name, 0)
	// Two fences on one ctx: the write needs both to be current.
	stale := store.WithFence(store.WithFence(t.Context(), lo), la)
	ok(t, a.SetServerSetting(stale, "fenced_setting", "before"), "fenced write of the current holder")
	mustRelease(t, la)
	lb := mustLock(t, b, name, 0)
	checkStaleRefused(t, a, stale, fx)
	checkStaleRefused(t, b, stale, fx)
	// Grants of a name differing only in case leave this one's fence
	// current: names are compared byte for byte.
	for range 2 {
		mustRelease(t, mustLock(t, a, twin, 0))
	}
	checkCurrentApplies(t, b, store.WithFence(store.WithFence(t.Context(), lo), lb), fx)
	mustRelease(t, lb)
	mustRelease(t, lo)
}
