package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// A fenced write's share lock on its name's stripe row orders it before a
// concurrent grant: the grant's token write waits for the write's COMMIT,
// so Lock does not return while a write under the old token can still
// land.
func TestFence_WriteInFlightHoldsBackNextGrant(t *testing.T) {
	ctx := t.Context()
	h := emptyHarness(t)
	a, b := h.open(t), h.open(t)
	l, err := a.Lock(ctx, "fence-order", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The check a fenced write makes first in its transaction (the lock
	// backend's locking read, then the token), left open as a write paused
	// after it would be.
	tx, read, key := openFencedWrite(t, h, a, "fence-order")
	var tok int64
	if err := tx.QueryRowContext(ctx, read, key).Scan(&tok); err != nil {
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

// A try that GET_LOCK refuses takes no stripe row: the grant's claim goes
// in the same query as GET_LOCK, and were its locking read not skipped on
// a refusal, a try on a name whose holder has a fenced write open would
// wait for that write (innodb_lock_wait_timeout, 50 s by default) instead
// of being refused at once.
func TestFence_RefusedTryTakesNoStripe(t *testing.T) {
	ctx := t.Context()
	h := emptyHarness(t)
	a, b := h.open(t), h.open(t)
	l, err := a.Lock(ctx, "fence-try", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	openFencedWrite(t, h, a, "fence-try")
	// Generous, and only there so a regression fails instead of hanging.
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for range 3 {
		if _, err := b.Lock(tctx, "fence-try", 0); !errors.Is(err, store.ErrLockTimeout) {
			t.Fatalf("a try on a held name = %v; want ErrLockTimeout", err)
		}
	}
}

// emptyHarness is newHarness with every row of its database deleted.
func emptyHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	if err := h.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	return h
}

// openFencedWrite opens, on h's own pool, a transaction that has taken
// the lock a fenced write under name's lock takes first (the shared
// check's Order, with s's dialect), and leaves it open (rolled back at the
// test's end); read and key are the check's read that follows.
func openFencedWrite(t *testing.T, h *harness, s *store.Store, name string) (tx *sql.Tx, read string, key any) {
	t.Helper()
	order, read, key := mustDialect(t, s).Fencing().OwnCheck(name)
	if order == "" {
		t.Fatal("no Order in MySQL's fencing: nothing orders a fenced write against the next grant")
	}
	tx, err := h.admin.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	if _, err := tx.ExecContext(t.Context(), order, key); err != nil {
		t.Fatal(err)
	}
	return tx, read, key
}

func mustDialect(t *testing.T, s *store.Store) sqlstore.Dialect {
	t.Helper()
	d, err := mysql.StoreDialect(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A database whose lock holder table an older gomogile made (no token
// column, a sentinel from before epochs) and whose tokens went to the
// durable gomogile_fence table: a Store opened on it migrates the table,
// and its grants' tokens are above every token handed out before.
func TestFence_TokensFromBeforeEpochs(t *testing.T) {
	ctx := t.Context()
	h := newHarness(t)
	s, err := store.Open(ctx, h.DSN()) // the schema
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS gomogile_fence (name VARBINARY(255) NOT NULL PRIMARY KEY, token BIGINT NOT NULL) ENGINE=InnoDB",
		"DROP TABLE gomogile_lock_holder",
		"CREATE TABLE gomogile_lock_holder (name VARBINARY(64) NOT NULL PRIMARY KEY, conn BIGINT UNSIGNED NOT NULL, seen_free DOUBLE NULL) ENGINE=MEMORY",
		"INSERT INTO gomogile_lock_holder (name, conn) VALUES ('', 0)",
		"INSERT INTO gomogile_fence (name, token) VALUES ('old', 500) ON DUPLICATE KEY UPDATE token = 500",
	} {
		if _, err := h.admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s = h.open(t)
	l, err := s.Lock(ctx, "old", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Token() < 1<<sqlstore.FenceEpochShift {
		t.Errorf("first grant after the migration: token %d; want at least the first epoch's floor %d (older tokens went up to 500)", l.Token(), int64(1)<<sqlstore.FenceEpochShift)
	}
	if err := s.SetServerSetting(store.WithFence(ctx, l), "fenced", "1"); err != nil {
		t.Errorf("write under the new grant: %v", err)
	}
	if err := s.SetServerSetting(store.WithFence(ctx, fakeLock{"old", 500}), "fenced", "2"); !errors.Is(err, store.ErrFenced) {
		t.Errorf("write under a token of before the migration: %v; want ErrFenced", err)
	}
}

// Once a grant's token is in the upper half of its epoch's range, the
// next grants start from a new epoch, so the range never runs out.
func TestFence_NewEpochAtHalfRange(t *testing.T) {
	ctx := t.Context()
	h := emptyHarness(t)
	s := h.open(t)
	l, err := s.Lock(ctx, "half", 0)
	if err != nil {
		t.Fatal(err)
	}
	first := l.Token()
	l.Release(ctx)
	epoch := first >> sqlstore.FenceEpochShift
	half := epoch<<sqlstore.FenceEpochShift | 1<<(sqlstore.FenceEpochShift-1)
	if _, err := h.admin.ExecContext(ctx, "UPDATE gomogile_lock_holder SET token = ? WHERE name = ''", half); err != nil {
		t.Fatal(err)
	}
	l, err = s.Lock(ctx, "half", 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() != half+1 {
		t.Errorf("grant at half the range: token %d; want %d", l.Token(), half+1)
	}
	l.Release(ctx)
	l, err = s.Lock(ctx, "half", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if want := (epoch+1)<<sqlstore.FenceEpochShift + 1; l.Token() != want {
		t.Errorf("grant after it: token %d; want the next epoch's first, %d", l.Token(), want)
	}
}

// fakeLock stands for a grant of an earlier gomogile: only its fence
// matters.
type fakeLock struct {
	name  string
	token int64
}

func (l fakeLock) Name() string                  { return l.name }
func (l fakeLock) Token() int64                  { return l.token }
func (l fakeLock) Lost() <-chan struct{}         { return nil }
func (l fakeLock) Release(context.Context) error { return nil }

// The grants of MySQL's own locks keep their tokens in the lock holder
// table: Open creates no gomogile_fence table that nothing would read.
func TestFence_NoUnreadTable(t *testing.T) {
	ctx := t.Context()
	h := newHarness(t)
	if _, err := h.admin.ExecContext(ctx, "DROP TABLE IF EXISTS gomogile_fence"); err != nil {
		t.Fatal(err)
	}
	s := h.open(t)
	l, err := s.Lock(ctx, "no-unread", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	var n int
	if err := h.admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'gomogile_fence'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("Open created gomogile_fence, which MySQL's own locks never read")
	}
}
