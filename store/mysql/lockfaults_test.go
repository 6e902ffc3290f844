package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
)

// testPingTimeout replaces the watchers' 5s ping timeout in these tests, so
// a stalled session is given up quickly; it is still far above a healthy
// ping's round trip on a loaded machine.
const testPingTimeout = time.Second

// openVia opens a Store whose connections, lock sessions and Store pool
// alike, all pass through p, with the watchers' ping timeout shortened.
func (h *harness) openVia(t testing.TB, p *faultProxy) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), p.dsn(t, h.dsn))
	if err != nil {
		t.Fatalf("store.Open via proxy: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := mysql.SetPingTimeout(s, testPingTimeout); err != nil {
		t.Fatal(err)
	}
	return s
}

// lockLink is the proxy link carrying the session that holds l for s.
func lockLink(t testing.TB, p *faultProxy, s store.Store, l store.Lock) *link {
	t.Helper()
	a, err := mysql.LockSessionLocalAddr(s, l)
	if err != nil {
		t.Fatal(err)
	}
	return p.link(t, a)
}

// lostWithin is how long after its session stalls a watcher may take to
// fire Lost: a ping period, the ping timeout, and slack for a loaded host.
const lostWithin = mysql.WatchEvery + testPingTimeout + 2*time.Second

// freeWithin is how soon after Lost the server must have freed the lock:
// far below the lock sessions' wait_timeout (10s), which is what keeps it
// held when the holder forgets a descriptor of its session.
const freeWithin = 3 * time.Second

// A lock whose watcher gave its session up (replies stopped coming) must
// end that session for real: every descriptor of its socket closed, so the
// server sees the session end and frees the lock at once, not after
// wait_timeout.
func TestLock_LostClosesSession(t *testing.T) {
	h := newHarness(t)
	p := newFaultProxy(t, targetOf(t, h.dsn))
	a, b := h.openVia(t, p), h.open(t)
	l := mustLock(t, a, "stalled", 0)
	ln := lockLink(t, p, a, l)
	ln.set(func(l *link) { l.dropDown = true })
	start := time.Now()
	if !waitClosed(l.Lost(), lostWithin) {
		t.Fatalf("Lost not fired %v after the replies stopped", time.Since(start))
	}
	lost := time.Now()
	t.Logf("Lost fired %v after the replies stopped", lost.Sub(start))
	if !waitClosed(ln.clientGone, freeWithin) {
		t.Fatalf("the lost lock's socket still open %v after Lost: a descriptor of the session was left open", time.Since(lost))
	}
	if !waitFor(freeWithin, func() bool { return h.usedBy(t, "stalled") == 0 }) {
		t.Fatalf("server still holds the lost lock %v after Lost", time.Since(lost))
	}
	t.Logf("server freed the lock %v after Lost", time.Since(lost))
	lb := mustLock(t, b, "stalled", time.Second)
	mustRelease(t, lb)
	if err := l.Release(context.Background()); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("Release of the lost lock: got %v; want %v", err, store.ErrLockLost)
	}
}

// When the holder's close cannot reach the server (the session is
// partitioned: no FIN, no RST), the KILL from the Store's pool, which still
// reaches it, frees the lock.
func TestLock_LostKillsPartitionedSession(t *testing.T) {
	h := newHarness(t)
	p := newFaultProxy(t, targetOf(t, h.dsn))
	a, b := h.openVia(t, p), h.open(t)
	l := mustLock(t, a, "partitioned", 0)
	id, err := mysql.LockSessionID(a, l)
	if err != nil {
		t.Fatal(err)
	}
	lockLink(t, p, a, l).set(func(l *link) { l.partition = true })
	start := time.Now()
	if !waitClosed(l.Lost(), lostWithin) {
		t.Fatalf("Lost not fired %v after the partition", time.Since(start))
	}
	lost := time.Now()
	if !waitFor(freeWithin, func() bool { return h.usedBy(t, "partitioned") == 0 }) {
		t.Fatalf("server still holds the partitioned session's lock %v after Lost", time.Since(lost))
	}
	t.Logf("Lost %v after the partition; lock freed %v after Lost", lost.Sub(start), time.Since(lost))
	var n int
	if err := h.admin.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("session %d still on the server after its lock was freed", id)
	}
	mustRelease(t, mustLock(t, b, "partitioned", time.Second))
}

// checkSentinel fails unless err is want, carries the lock's name once
// (the shared layer adds it; the backend must not repeat it).
func checkSentinel(t testing.TB, err error, want error, name string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v; want %v", err, want)
	}
	if n := strings.Count(err.Error(), `"`+name+`"`); n != 1 {
		t.Errorf("error %q names the lock %d times; want once", err, n)
	}
}

// A lock session cut or killed in the middle of a call fails it with a
// store sentinel, never with a bare driver error, and leaves no lock held.
func TestLock_ConnectionFailuresAreSentinels(t *testing.T) {
	h := newHarness(t)

	t.Run("GET_LOCK cut", func(t *testing.T) {
		p := newFaultProxy(t, targetOf(t, h.dsn))
		a := h.openVia(t, p)
		p.cutAfterBytes("GET_LOCK(")
		_, err := a.Lock(context.Background(), "cut", 5*time.Second)
		checkSentinel(t, err, store.ErrUnavailable, "cut")
		t.Logf("Lock: %v", err)
		// The statement reached the server and may have been granted just
		// before the session went: it must not stay held.
		if !waitFor(freeWithin, func() bool { return h.usedBy(t, "cut") == 0 }) {
			t.Fatal("the cut GET_LOCK's lock is still held")
		}
		mustRelease(t, mustLock(t, a, "cut", time.Second))
	})

	t.Run("GET_LOCK killed while waiting", func(t *testing.T) {
		a, b := h.open(t), h.open(t)
		held := mustLock(t, b, "killed", 0)
		errc := make(chan error, 1)
		go func() {
			l, err := a.Lock(context.Background(), "killed", 20*time.Second)
			if err == nil {
				l.Release(context.Background())
			}
			errc <- err
		}()
		key := mysql.ServerLockName(h.database, "killed")
		var id uint64
		if !waitFor(5*time.Second, func() bool {
			err := h.admin.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE ?",
				"SELECT GET_LOCK('"+key+"'%").Scan(&id)
			return err == nil
		}) {
			t.Fatal("no session waiting in GET_LOCK")
		}
		h.kill(t, id)
		select {
		case err := <-errc:
			checkSentinel(t, err, store.ErrUnavailable, "killed")
			t.Logf("Lock: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("Lock still waiting 10s after its session was killed")
		}
		mustRelease(t, held)
	})

	t.Run("RELEASE_LOCK cut", func(t *testing.T) {
		p := newFaultProxy(t, targetOf(t, h.dsn))
		a := h.openVia(t, p)
		l := mustLock(t, a, "release", 0)
		p.cutAfterBytes("RELEASE_LOCK(")
		err := l.Release(context.Background())
		checkSentinel(t, err, store.ErrLockLost, "release")
		t.Logf("Release: %v", err)
		if !waitFor(freeWithin, func() bool { return h.usedBy(t, "release") == 0 }) {
			t.Fatal("lock still held after its Release was cut")
		}
	})

	t.Run("session creation refused", func(t *testing.T) {
		p := newFaultProxy(t, targetOf(t, h.dsn))
		a := h.openVia(t, p)
		p.cutAfterBytes("CONNECTION_ID()")
		_, err := a.Lock(context.Background(), "fresh", time.Second)
		checkSentinel(t, err, store.ErrUnavailable, "fresh")
		t.Logf("Lock: %v", err)
	})
}
