package query

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

// The slot table's decisions, with the database's answer as a value: an
// expired slot is freed only when its row is gone, one whose row is still
// there is asked about again a sweepEvery later, and a named fid made again
// frees the slot of its earlier upload.
func TestUploadSlots_Decisions(t *testing.T) {
	present := map[int64]bool{}
	asked := 0
	cfg := Config{}
	cfg.MaxOpenUploadsPerIP, cfg.MaxOpenUploads, cfg.TempFileTTL = 2, 3, time.Nanosecond
	u := newUploads(cfg, func(_ context.Context, fid int64) (bool, error) {
		asked++
		return !present[fid], nil
	})
	ctx := context.Background()
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	take := func(addr netip.Addr) *upload {
		t.Helper()
		s, err := u.take(ctx, addr)
		if err != nil {
			t.Fatalf("take for %s: %v", addr, err)
		}
		return s
	}

	s1, s2 := take(a), take(a)
	u.opened(s1, 1)
	u.opened(s2, 2)
	present[1], present[2] = true, true
	if _, err := u.take(ctx, a); err == nil {
		t.Fatal("third slot for one address granted; want max_open_uploads_per_ip")
	}
	if asked != 2 {
		t.Errorf("the refusal asked about %d rows; want the 2 expired ones", asked)
	}
	// Rows still there: asked about again only a sweepEvery later.
	if _, err := u.take(ctx, a); err == nil || asked != 2 {
		t.Errorf("second refusal: %v after %d questions; want a refusal and no new question", err, asked)
	}
	delete(present, 1)
	u.nextSweep = time.Time{}
	for _, s := range u.due {
		s.check = time.Time{}
	}
	s3 := take(a) // fid 1's row went: its slot came back
	if got := u.open(); got != 2 {
		t.Errorf("open = %d; want 2", got)
	}

	// A failed create_open gives back its slot; a second cancel is nothing.
	u.cancel(s3)
	u.cancel(s3)
	if got := u.open(); got != 1 {
		t.Errorf("open after cancel = %d; want 1", got)
	}

	// ended frees only the fid's own slot, and only once.
	u.ended(99)
	sb := take(b)
	u.opened(sb, 3)
	u.ended(3)
	u.ended(3)
	if got := u.open(); got != 1 || u.byAddr[a] != 1 || u.byAddr[b] != 0 {
		t.Errorf("open = %d, per address %v; want 1, a: 1", got, u.byAddr)
	}

	// fid 2 made again (by name, after its row went unseen): the earlier
	// upload's slot is freed, the new one counts.
	s4 := take(b)
	u.opened(s4, 2)
	if got := u.open(); got != 1 || u.byAddr[a] != 0 || u.byAddr[b] != 1 || u.byFid[2] != s4 {
		t.Errorf("after fid 2 was made again: open %d, per address %v; want 1, b: 1", got, u.byAddr)
	}
}

// With neither limit set, nothing is counted or refused.
func TestUploadSlots_NoLimits(t *testing.T) {
	cfg := Config{}
	cfg.MaxOpenUploadsPerIP, cfg.MaxOpenUploads = 0, 0
	u := newUploads(cfg, nil)
	for range 10 {
		s, err := u.take(context.Background(), netip.Addr{})
		if err != nil || s != nil {
			t.Fatalf("take = %v, %v; want no slot and no error", s, err)
		}
		u.opened(s, 1)
		u.cancel(s)
	}
	if got := u.open(); got != 0 {
		t.Errorf("open = %d; want 0", got)
	}
}
