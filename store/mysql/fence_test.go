package mysql_test

import (
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
	"github.com/gomogile/gomogile/store/sqlstore"
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
	tx, err := h.admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var tok int64
	if err := tx.QueryRowContext(ctx, "SELECT token FROM gomogile_fence WHERE name = ?"+mustDialect(t, a).Fencing().ShareLock, []byte("fence-order")).Scan(&tok); err != nil {
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
	if err := tx.Commit(); err != nil {
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

func mustDialect(t *testing.T, s store.Store) sqlstore.Dialect {
	t.Helper()
	d, err := mysql.StoreDialect(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
