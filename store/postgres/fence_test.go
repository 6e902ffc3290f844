package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/postgres"
)

// A fenced write's share lock on the token row orders it before a
// concurrent grant: the grant's bump waits for the write's COMMIT, so Lock
// does not return while a write under the old token can still land.
func TestFence_WriteInFlightHoldsBackNextGrant(t *testing.T) {
	ctx := t.Context()
	h := newHarness(t)
	if err := h.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := store.Open(ctx, h.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := store.Open(ctx, h.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	l, err := a.Lock(ctx, "fence-order", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The check a fenced write makes first in its transaction (the
	// dialect's own locking read), left open as a write paused after it
	// would be.
	conn, err := adminConn(ctx, h.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var tok int64
	if err := tx.QueryRow(ctx, "SELECT token FROM gomogile_fence WHERE name = $1"+postgres.Dialect{}.Fencing().ShareLock, []byte("fence-order")).Scan(&tok); err != nil {
		t.Fatal(err)
	}
	if tok != l.Token() {
		t.Fatalf("token row = %d; want the grant's %d", tok, l.Token())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan store.Lock, 1)
	go func() {
		lb, err := b.Lock(ctx, "fence-order", 10*time.Second)
		if err != nil {
			t.Errorf("Lock by the next holder: %v", err)
		}
		got <- lb
	}()
	select {
	case <-got:
		t.Fatal("the next grant returned while a write under the old token was still open")
	case <-time.After(500 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case lb := <-got:
		if lb != nil && lb.Token() <= tok {
			t.Errorf("next grant's token %d; want more than %d", lb.Token(), tok)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the next grant did not return after the write committed")
	}
}

// fenceEpoch reads the fencing epoch counter and whether the floor row is
// there.
func fenceEpoch(t *testing.T, dsn string) (epoch int64, floor bool) {
	t.Helper()
	conn, err := adminConn(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(t.Context(), "SELECT COALESCE((SELECT epoch FROM gomogile_fence_epoch), 0), EXISTS (SELECT 1 FROM gomogile_fence WHERE name = ''::bytea)").Scan(&epoch, &floor); err != nil {
		t.Fatal(err)
	}
	return epoch, floor
}

// The token table is UNLOGGED, so crash recovery and a standby's promotion
// empty it. The grants after either must still get tokens above every
// grant's before (a new epoch), and a write under a token from before must
// be refused. The tokens are taken on several names, one of them granted
// many times, so that the old rows were well above a fresh table's 1.
func TestFence_TokensGrowAcrossCrashAndPromotion(t *testing.T) {
	const lease = time.Second
	primary := privatePostgres(t)
	dsn := withParams(primary.DSN("test"), "lock_lease="+lease.String())
	names := []string{"fence/a", "fence/b", "fence/hot"}

	// grants takes each name once (fence/hot 20 times) on s and returns
	// the largest token and the last grant of fence/a, released.
	grants := func(s *store.Store) (max int64, a store.Lock) {
		for _, n := range names {
			times := 1
			if n == "fence/hot" {
				times = 20
			}
			var last int64
			for range times {
				l, _ := grab(t, s, n, 10*lease)
				if l.Token() <= last {
					t.Fatalf("%s: token %d after %d", n, l.Token(), last)
				}
				last = l.Token()
				max = builtinMax(max, last)
				if n == "fence/a" {
					a = l
				}
				if err := l.Release(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
		}
		return max, a
	}
	// fencedWrite is a write under a's fence: refused once a newer grant
	// of fence/a exists, or its token row went.
	fencedWrite := func(s *store.Store, a store.Lock, domain string) error {
		_, err := s.CreateDomain(store.WithFence(t.Context(), a), domain)
		return err
	}

	s := open(t, dsn)
	before, oldA := grants(s)
	epoch0, floor := fenceEpoch(t, dsn)
	if epoch0 < 1 || !floor {
		t.Errorf("after the first grants: epoch %d, floor row %v; want an epoch and its floor", epoch0, floor)
	}
	if before < 1<<40 {
		t.Errorf("largest token %d is below the first epoch's floor %d", before, int64(1)<<40)
	}
	s.Close()

	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := primary.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, floor := fenceEpoch(t, dsn); floor {
		t.Fatal("the floor row survived crash recovery: the table is not UNLOGGED, and this test proves nothing")
	}
	s = open(t, dsn)
	if min := firstToken(t, s, names[0]); min <= before {
		t.Errorf("after the crash a grant got token %d; want above every token before it (largest %d)", min, before)
	}
	afterCrash, newA := grants(s)
	if epoch, _ := fenceEpoch(t, dsn); epoch != epoch0+1 {
		t.Errorf("epoch after the crash = %d; want %d", epoch, epoch0+1)
	}
	if err := fencedWrite(s, oldA, "under-a-pre-crash-grant"); !errors.Is(err, store.ErrFenced) {
		t.Errorf("write under a pre-crash grant: %v; want ErrFenced", err)
	}
	if err := fencedWrite(s, newA, "under-the-last-grant"); err != nil {
		// Released, but nothing was granted since: still current.
		t.Errorf("write under the newest grant: %v", err)
	}
	s.Close()

	// A standby that streamed everything so far is promoted: its copy of
	// the table is empty, its epoch counter the primary's.
	standby, err := primary.StartStandby(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { standby.Cleanup() })
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	sdsn := withParams(standby.DSN("test"), "lock_lease="+lease.String())
	s = open(t, sdsn)
	if min := firstToken(t, s, names[0]); min <= afterCrash {
		t.Errorf("on the promoted standby a grant got token %d; want above every token on the primary (largest %d)", min, afterCrash)
	}
	if err := fencedWrite(s, newA, "under-a-pre-failover-grant"); !errors.Is(err, store.ErrFenced) {
		t.Errorf("write under a grant made on the old primary: %v; want ErrFenced", err)
	}
}

// firstToken takes name on s (after a restart, once the lock epoch is
// open) and returns its token, released.
func firstToken(t *testing.T, s *store.Store, name string) int64 {
	t.Helper()
	l, _ := grab(t, s, name, 30*time.Second)
	defer l.Release(t.Context())
	return l.Token()
}

func builtinMax(a, b int64) int64 { return max(a, b) }
