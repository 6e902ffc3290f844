package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
)

// open returns a Store (a tracker) on h's database, closed when t ends.
func (h *harness) open(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), h.dsn)
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func mustLock(t testing.TB, s *store.Store, name string, timeout time.Duration) store.Lock {
	t.Helper()
	l, err := s.Lock(context.Background(), name, timeout)
	if err != nil {
		t.Fatalf("Lock(%.20q, %v): %v", name, timeout, err)
	}
	return l
}

func mustRelease(t testing.TB, l store.Lock) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release(%.20q): %v", l.Name(), err)
	}
}

// usedBy is IS_USED_LOCK of name's server lock: the holding session, or 0.
func (h *harness) usedBy(t testing.TB, name string) uint64 {
	t.Helper()
	var id sql.NullInt64
	key := mysql.ServerLockName(h.database, name)
	if err := h.admin.QueryRow("SELECT IS_USED_LOCK(?)", key).Scan(&id); err != nil {
		t.Fatalf("IS_USED_LOCK: %v", err)
	}
	return uint64(id.Int64)
}

// holderRows counts name's rows in the lock holder table.
func (h *harness) holderRows(t testing.TB, name string) int {
	t.Helper()
	var n int
	key := mysql.ServerLockName(h.database, name)
	if err := h.admin.QueryRow("SELECT COUNT(*) FROM gomogile_lock_holder WHERE name = ?", key).Scan(&n); err != nil {
		t.Fatalf("count holder rows: %v", err)
	}
	return n
}

func (h *harness) kill(t testing.TB, id uint64) {
	t.Helper()
	if _, err := h.admin.Exec("KILL " + strconv.FormatUint(id, 10)); err != nil {
		t.Fatalf("KILL %d: %v", id, err)
	}
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestServerLockName(t *testing.T) {
	long := strings.Repeat("x", 254)
	prefix64 := strings.Repeat("p", 64)
	names := []string{
		long + "a", long + "b", // 255 bytes, differing in the last one
		"Lock", "lock", "LOCK", // case
		prefix64, prefix64 + "1", prefix64 + "2", // a shared 64-character prefix
		"a", "a ", "a\x00", "é", "e\u0301", // padding, NUL, Unicode normalisation
	}
	seen := map[string]string{}
	for _, db := range []string{"mogilefs", "mogilefs2", "Mogilefs"} {
		for _, n := range names {
			k := mysql.ServerLockName(db, n)
			if len(k) > 64 {
				t.Errorf("ServerLockName(%q, %.20q) is %d bytes; want at most 64", db, n, len(k))
			}
			if k != strings.ToLower(k) || strings.ContainsFunc(k, func(r rune) bool { return r > 127 }) {
				t.Errorf("ServerLockName(%q, %.20q) = %q; want lower-case ASCII, as servers that fold case compare it", db, n, k)
			}
			if prev, dup := seen[k]; dup {
				t.Errorf("ServerLockName(%q, %.20q) = %q, same as for %s", db, n, k, prev)
			}
			seen[k] = db + "/" + n
			if again := mysql.ServerLockName(db, n); again != k {
				t.Errorf("ServerLockName(%q, %.20q) not deterministic: %q then %q", db, n, k, again)
			}
		}
	}
	// The separator keeps (database, name) pairs apart that concatenate alike.
	if mysql.ServerLockName("ab", "c") == mysql.ServerLockName("a", "bc") {
		t.Errorf(`ServerLockName("ab", "c") == ServerLockName("a", "bc")`)
	}
}

// The server really holds the hashed name, on the lock's own session, and
// two names that only differ where a naive mapping would lose the
// difference are held at once by two Stores.
func TestLock_ServerNames(t *testing.T) {
	h := newHarness(t)
	a, b := h.open(t), h.open(t)
	long := strings.Repeat("n", 254)
	pairs := [][2]string{{long + "1", long + "2"}, {"Case", "case"}, {strings.Repeat("p", 64) + "x", strings.Repeat("p", 64) + "y"}}
	for _, p := range pairs {
		la := mustLock(t, a, p[0], 0)
		lb := mustLock(t, b, p[1], 0)
		id, err := mysql.LockSessionID(a, la)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.usedBy(t, p[0]); got != id {
			t.Errorf("IS_USED_LOCK(server name of %.20q) = %d; want the lock's session %d", p[0], got, id)
		}
		mustRelease(t, la)
		mustRelease(t, lb)
		if got := h.usedBy(t, p[0]); got != 0 {
			t.Errorf("IS_USED_LOCK after Release = %d; want free", got)
		}
	}
}

// The classic bug: a lock taken on a pooled connection is released, or
// granted again, by whatever else runs on that connection. Here the
// Store's own pool runs RELEASE_LOCK and GET_LOCK of the very server name
// on many connections while the lock is held: none may touch it.
func TestLock_PoolActivityCannotTouchIt(t *testing.T) {
	h := newHarness(t)
	a, b := h.open(t), h.open(t)
	l := mustLock(t, a, "pool", 0)
	id, err := mysql.LockSessionID(a, l)
	if err != nil {
		t.Fatal(err)
	}
	key := mysql.ServerLockName(h.database, "pool")
	pool, ok := sqlaccess.DB(a)
	if !ok {
		t.Fatalf("%T opens up no pool", a)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 16; i++ {
		wg.Go(func() {
			conn, err := pool.Conn(context.Background())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			for j := 0; j < 20; j++ {
				var rel, got sql.NullInt64
				if err := conn.QueryRowContext(context.Background(), "SELECT RELEASE_LOCK(?)", key).Scan(&rel); err != nil {
					errs <- err
					return
				}
				if rel.Valid && rel.Int64 == 1 {
					errs <- errors.New("RELEASE_LOCK on a pooled connection released the held lock")
				}
				if err := conn.QueryRowContext(context.Background(), "SELECT GET_LOCK(?, 0)", key).Scan(&got); err != nil {
					errs <- err
					return
				}
				if got.Int64 == 1 {
					errs <- errors.New("GET_LOCK on a pooled connection was granted the held lock")
					conn.ExecContext(context.Background(), "DO RELEASE_LOCK(?)", key)
				}
				if _, err := a.Domains(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := h.usedBy(t, "pool"); got != id {
		t.Errorf("after pool activity IS_USED_LOCK = %d; want the lock's session %d", got, id)
	}
	if _, err := b.Lock(context.Background(), "pool", 0); !errors.Is(err, store.ErrLockTimeout) {
		t.Errorf("Lock by another Store after pool activity: got %v; want %v", err, store.ErrLockTimeout)
	}
	if isClosed(l.Lost()) {
		t.Errorf("Lost fired on a lock nobody touched")
	}
	mustRelease(t, l)
}

// GET_LOCK's namespace is the whole server: two gomogile databases on it
// (two test runs, two clusters) must not exclude each other.
func TestLock_DatabasesDoNotShareNames(t *testing.T) {
	h1, h2 := newHarness(t), newHarness(t)
	a, b := h1.open(t), h2.open(t)
	la := mustLock(t, a, "replicate", 0)
	lb, err := b.Lock(context.Background(), "replicate", 0)
	if err != nil {
		t.Fatalf("Lock of the same name on another database: got %v; want it granted", err)
	}
	// And within one database they still exclude.
	if _, err := h1.open(t).Lock(context.Background(), "replicate", 0); !errors.Is(err, store.ErrLockTimeout) {
		t.Errorf("Lock on the first database while held: got %v; want %v", err, store.ErrLockTimeout)
	}
	mustRelease(t, la)
	mustRelease(t, lb)
}

func TestLock_LostAfterKill(t *testing.T) {
	h := newHarness(t)
	a, b := h.open(t), h.open(t)
	l := mustLock(t, a, "victim", 0)
	id, err := mysql.LockSessionID(a, l)
	if err != nil {
		t.Fatal(err)
	}
	// Hold a while first, so a pinging watcher would have pinged.
	time.Sleep(mysql.WatchEvery + 50*time.Millisecond)
	start := time.Now()
	h.kill(t, id)
	if !waitFor(mysql.DeadOwnerBound, func() bool { return isClosed(l.Lost()) }) {
		t.Fatalf("Lost not closed %v after KILL; want within %v", time.Since(start), mysql.DeadOwnerBound)
	}
	took := time.Since(start)
	t.Logf("Lost fired %v after KILL", took)
	if bound := mysql.WatchEvery + 100*time.Millisecond; took > bound {
		t.Errorf("Lost fired %v after KILL; want within %v", took, bound)
	}
	// The killed holder's row is deleted after Lost fires, off its
	// watcher; a grant that reads it first waits out the handoff grace,
	// which DeadOwnerBound covers.
	lb := mustLock(t, b, "victim", mysql.DeadOwnerBound)
	for i := 0; i < 2; i++ {
		if err := l.Release(context.Background()); !errors.Is(err, store.ErrLockLost) {
			t.Errorf("Release %d of the killed lock: got %v; want %v", i+1, err, store.ErrLockLost)
		}
	}
	if isClosed(lb.Lost()) {
		t.Errorf("the new holder's Lost fired")
	}
	mustRelease(t, lb)
}

// A timeout is kept to the millisecond although MySQL's GET_LOCK counts
// whole seconds: never early, and promptly after.
func TestLock_TimeoutPrecision(t *testing.T) {
	h := newHarness(t)
	a, b := h.open(t), h.open(t)
	l := mustLock(t, a, "busy", 0)
	defer mustRelease(t, l)
	for _, timeout := range []time.Duration{0, 300 * time.Millisecond, 1500 * time.Millisecond} {
		start := time.Now()
		_, err := b.Lock(context.Background(), "busy", timeout)
		took := time.Since(start)
		if !errors.Is(err, store.ErrLockTimeout) {
			t.Fatalf("Lock(%v) of a held name: got %v; want %v", timeout, err, store.ErrLockTimeout)
		}
		if took < timeout {
			t.Errorf("Lock(%v) gave up after %v; want no earlier than the timeout", timeout, took)
		}
		if late := took - timeout; late > 150*time.Millisecond {
			t.Errorf("Lock(%v) gave up %v late; want within 150ms", timeout, late)
		}
		t.Logf("timeout %v: gave up after %v", timeout, took)
	}
}

// A Lock cancelled while waiting leaves nothing held, even when the lock
// is granted at the instant of cancellation: its session is closed and
// KILLed, and the server frees what it had.
func TestLock_CancelRacingGrantLeavesNothing(t *testing.T) {
	h := newHarness(t)
	a, b := h.open(t), h.open(t)
	for i := 0; i < 15; i++ {
		l := mustLock(t, a, "race", 0)
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		var got store.Lock
		go func() {
			var err error
			got, err = b.Lock(ctx, "race", 10*time.Second)
			res <- err
		}()
		time.Sleep(20 * time.Millisecond) // b is waiting in GET_LOCK
		var wg sync.WaitGroup
		wg.Go(func() { time.Sleep(time.Duration(i%5) * time.Millisecond); cancel() })
		wg.Go(func() { mustRelease(t, l) })
		wg.Wait()
		start := time.Now()
		err := <-res
		if took := time.Since(start); took > time.Second {
			t.Errorf("round %d: cancelled Lock returned %v after the cancel; want promptly", i, took)
		}
		if err == nil {
			// It won the race fairly: a grant whose context ended as it
			// came back (the driver may have closed its session) is
			// given back, never handed out already lost.
			mustRelease(t, got)
		} else if !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: cancelled Lock: got %v; want %v or success", i, err, context.Canceled)
		}
		if !waitFor(3*time.Second, func() bool { return h.usedBy(t, "race") == 0 }) {
			t.Fatalf("round %d: lock still held by session %d after a cancelled Lock (err %v)", i, h.usedBy(t, "race"), err)
		}
		// Nor a holder row of the abandoned grant, which would make the
		// next grant wait out the handoff grace (a try-lock fail) for
		// nobody.
		if !waitFor(3*time.Second, func() bool { return h.holderRows(t, "race") == 0 }) {
			t.Fatalf("round %d: a holder row left after a cancelled Lock (err %v)", i, err)
		}
	}
}

// A session goes back on the free list only holding nothing, and a free
// session the server closed meanwhile is replaced, not reported.
func TestLock_SessionReuse(t *testing.T) {
	h := newHarness(t)
	a, b := h.open(t), h.open(t)
	mustRelease(t, mustLock(t, a, "first", 0))
	free, err := mysql.FreeSessionIDs(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(free) != 1 {
		t.Fatalf("free sessions after a release: %v; want 1", free)
	}
	l := mustLock(t, a, "second", 0) // on the reused session
	if id, _ := mysql.LockSessionID(a, l); id != free[0] {
		t.Errorf("second lock on session %d; want the free session %d reused", id, free[0])
	}
	mustRelease(t, mustLock(t, b, "first", 0)) // the reused session kept nothing
	mustRelease(t, l)

	free, _ = mysql.FreeSessionIDs(a)
	for _, id := range free {
		h.kill(t, id)
	}
	time.Sleep(50 * time.Millisecond)
	l = mustLock(t, a, "third", 0)
	if id, _ := mysql.LockSessionID(a, l); h.usedBy(t, "third") != id {
		t.Errorf("third lock not held by its session %d", id)
	}
	mustRelease(t, l)
}

// Close releases every lock, ends every lock session and stops every
// goroutine the Store started.
func TestLock_CloseLeavesNothing(t *testing.T) {
	h := newHarness(t)
	h.usedBy(t, "one") // the admin pool's connection (and its goroutine) exists before counting
	before := runtime.NumGoroutine()
	s, err := store.Open(context.Background(), h.dsn)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"one", "two", "three"}
	for _, n := range names {
		mustLock(t, s, n, 0)
	}
	mustRelease(t, mustLock(t, s, "four", 0)) // leaves a free session
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, n := range names {
		if id := h.usedBy(t, n); id != 0 {
			t.Errorf("lock %q still held by session %d after Close", n, id)
		}
	}
	sessions := func() int {
		var n int
		h.admin.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", h.database).Scan(&n)
		return n
	}
	if !waitFor(2*time.Second, func() bool { return sessions() == 0 }) {
		t.Errorf("%d sessions on the database after Close; want 0", sessions())
	}
	if !waitFor(2*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close; had %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
	}
}

func TestLock_CrashFreesLocks(t *testing.T) {
	h := newHarness(t)
	a, err := store.Open(context.Background(), h.dsn)
	if err != nil {
		t.Fatal(err)
	}
	b := h.open(t)
	mustLock(t, a, "held", 0)
	if err := mysql.Crash(a); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	l := mustLock(t, b, "held", mysql.DeadOwnerBound)
	t.Logf("lock free %v after the crash", time.Since(start))
	mustRelease(t, l)
	a.Close() // must not panic; its error does not matter
}

// A holder whose host vanished leaves a session that stays open but falls
// silent; the server ends it after the lock sessions' short wait_timeout
// and frees the lock, with no human action.
func TestLock_SilentHolderFreed(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the lock sessions' wait_timeout")
	}
	h := newHarness(t)
	a, b := h.open(t), h.open(t)
	mustLock(t, a, "silent", 0)
	if err := mysql.FreezeWatchers(a); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := b.Lock(context.Background(), "silent", time.Second); !errors.Is(err, store.ErrLockTimeout) {
		t.Fatalf("Lock 1s into the silence: got %v; want %v (the holder may merely be slow)", err, store.ErrLockTimeout)
	}
	// A silent holder is a dead one for all anyone can tell: its lock is
	// granted again within the bound Capabilities promise.
	l, err := b.Lock(context.Background(), "silent", mysql.DeadOwnerBound-time.Since(start))
	if err != nil {
		t.Fatalf("Lock of a silent holder's lock %v after its watcher stopped: %v; want granted within DeadOwnerBound (%v)", time.Since(start), err, mysql.DeadOwnerBound)
	}
	t.Logf("silent holder's lock freed %v after its watcher stopped", time.Since(start))
	mustRelease(t, l)
}

// Close ends a Lock still waiting, with ErrClosed, and the abandoned wait
// cannot later be granted the lock.
func TestLock_CloseDuringWait(t *testing.T) {
	h := newHarness(t)
	a := h.open(t)
	b, err := store.Open(context.Background(), h.dsn)
	if err != nil {
		t.Fatal(err)
	}
	l := mustLock(t, a, "wait", 0)
	res := make(chan error, 1)
	go func() {
		_, err := b.Lock(context.Background(), "wait", 30*time.Second)
		res <- err
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case err := <-res:
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("waiting Lock when its Store closed: got %v; want %v", err, store.ErrClosed)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiting Lock still blocked 5s after its Store closed")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close with a waiting Lock took %v; want promptly", took)
	}
	mustRelease(t, l)
	time.Sleep(100 * time.Millisecond)
	if id := h.usedBy(t, "wait"); id != 0 {
		t.Errorf("after release the lock is held by session %d; want free (the closed Store's wait was abandoned)", id)
	}
}

// Release with a context already done still releases: giving up half way
// would only close the session, and the caller would not learn the outcome.
func TestLock_ReleaseWithDoneContext(t *testing.T) {
	h := newHarness(t)
	a, b := h.open(t), h.open(t)
	l := mustLock(t, a, "done", 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release with a cancelled context: %v", err)
	}
	mustRelease(t, mustLock(t, b, "done", 0))
	if free, _ := mysql.FreeSessionIDs(a); len(free) != 1 {
		t.Errorf("free sessions after a clean release: %v; want the released one", free)
	}
}

// A grant whose caller's context ended as GET_LOCK answered is given back,
// never handed out: the driver may already have closed its session (it
// closes a connection whose context ends as a query returns), and a lock
// handed out then would be lost the moment its holder got it.
func TestLock_GrantWithContextEndedGivenBack(t *testing.T) {
	h := newHarness(t)
	a, b := h.open(t), h.open(t)
	l, err := mysql.GrantWithContextEnded(a, "ended")
	if l != nil {
		t.Fatalf("a grant whose context had ended was handed out (err %v)", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want context.Canceled", err)
	}
	// Given back off the caller's path: another Store gets it at once.
	got := mustLock(t, b, "ended", 5*time.Second)
	mustRelease(t, got)
}
