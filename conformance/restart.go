package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// RestartHarness is a Harness whose database server the suite may restart:
// a private instance the test started, never a shared one.
type RestartHarness interface {
	Harness
	// RestartServer stops the database server and starts it again on the
	// same data, returning once it accepts connections. The suite has
	// closed every Store it opened before calling it (an embedded backend
	// may therefore do nothing but check the file is free), and opens new
	// ones after.
	RestartServer(ctx context.Context) error
}

// RunRestart runs the cases that need a server restart, as subtests with
// fixed names, none skipped.
func RunRestart(t *testing.T, h RestartHarness) {
	tests := []struct {
		name string
		fn   func(*testing.T, RestartHarness)
	}{
		{"FenceTokensAcrossRestart", testFenceTokensAcrossRestart},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := h.Reset(t.Context()); err != nil {
				t.Fatalf("Reset: %v", err)
			}
			tc.fn(t, h)
		})
	}
}

// A grant's token is larger than every token handed out before a server
// restart, and a fence taken before the restart is refused once the lock
// was granted again after it.
func testFenceTokensAcrossRestart(t *testing.T, h RestartHarness) {
	ctx := t.Context()
	name := lockName(t, "")
	open := func() *store.Store {
		t.Helper()
		s, err := store.Open(ctx, h.DSN())
		ok(t, err, "store.Open")
		return s
	}
	s := open()
	var prev int64
	for range 3 {
		l, err := s.Lock(ctx, name, 0)
		ok(t, err, "Lock before the restart")
		prev = tokenAfter(t, l, prev, "grant before the restart")
		ok(t, l.Release(ctx), "Release")
	}
	held, err := s.Lock(ctx, name, 0)
	ok(t, err, "Lock held across the restart")
	before := tokenAfter(t, held, prev, "grant held across the restart")
	stale := store.WithFence(ctx, held)
	ok(t, s.SetServerSetting(stale, "fenced_setting", "before"), "fenced write before the restart")
	// The holder's Store goes with its server; the grant's fence is all
	// that survives of it.
	s.Close()

	ok(t, h.RestartServer(ctx), "RestartServer")

	s = open()
	defer s.Close()
	// A restart ends every holding underneath its holder, who may not yet
	// know (cut off, say): a grant right after it may wait until such a
	// holder must have seen its Lost, which DeadOwnerBound bounds.
	l, err := s.Lock(ctx, name, s.Capabilities().DeadOwnerBound+5*time.Second)
	ok(t, err, "Lock after the restart")
	tokenAfter(t, l, before, "grant after the restart")
	isErr(t, s.SetServerSetting(stale, "fenced_setting", "stale"), store.ErrFenced,
		"fenced write of the pre-restart grant after a post-restart grant")
	if v, err := s.ServerSetting(ctx, "fenced_setting"); err != nil || v != "before" {
		t.Errorf("setting after the refused write = %q, %v; want \"before\"", v, err)
	}
	ok(t, s.SetServerSetting(store.WithFence(ctx, l), "fenced_setting", "after"), "fenced write of the post-restart grant")
	ok(t, l.Release(ctx), "Release")
}
