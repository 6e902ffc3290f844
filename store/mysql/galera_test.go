package mysql_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/etcd"
	"github.com/gomogile/gomogile/store/mysql"
)

// lockedBuffer is a log destination that background goroutines may write
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// captureLog sends slog.Default to a buffer until t ends.
func captureLog(t *testing.T) *lockedBuffer {
	var buf lockedBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &buf
}

// startGalera starts a private MariaDB Galera cluster of n nodes for t
// (internal/testkit/dbinstance), removed when t ends; where Galera cannot run
// here the test is skipped, or fails under CI.
func startGalera(t *testing.T, n int) *dbinstance.Galera {
	t.Helper()
	if err := dbinstance.Available("galera"); err != nil {
		testdb.Unavailable(t, "galera", err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t0 := time.Now()
	g, err := dbinstance.StartGalera(ctx, dbinstance.GaleraOptions{Nodes: n, Logf: t.Logf})
	if err != nil {
		t.Fatalf("private Galera cluster: %v", err)
	}
	t.Logf("Galera cluster of %d started in %v", n, time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := g.Cleanup(); err != nil {
			t.Errorf("Galera cleanup: %v", err)
		}
	})
	return g
}

// openOn is store.Open (or another opener) on a node's database "test",
// closed when t ends.
func openOn(t *testing.T, open func(context.Context, string) (*store.Store, error), n *dbinstance.GaleraNode) *store.Store {
	t.Helper()
	s, err := open(t.Context(), n.DSN("test"))
	if err != nil {
		t.Fatalf("open on Galera node %d: %v", n.Index(), err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// GET_LOCK and the lock holders' MEMORY table are each node's own on
// Galera, so locks taken through different nodes of one cluster do not
// exclude each other. The subtests share one cluster and run in order,
// growing it: one node, then two, then three.
func TestGalera(t *testing.T) {
	g := startGalera(t, 1)
	logs := captureLog(t)
	ctx := t.Context()

	// A cluster of one is a single server as far as locks go: it opens,
	// with a warning that names the fix for when nodes are added.
	t.Run("SingleNodeOpensWithWarning", func(t *testing.T) {
		s := openOn(t, openStore, g.Nodes()[0])
		l := mustLock(t, s, "mgfs:fid:1", 0)
		if err := s.SetServerSetting(store.WithFence(ctx, l), "galera", "1"); err != nil {
			t.Fatalf("fenced write under a lock on a single-node cluster: %v", err)
		}
		mustRelease(t, l)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		got := logs.String()
		if !strings.Contains(got, "level=WARN") || !strings.Contains(got, "Galera node in a cluster of one") || !strings.Contains(got, "lock_dsn") {
			t.Errorf("log %q; want a warning about a single-node Galera cluster naming lock_dsn", got)
		}
	})

	// A node joining a cluster a Store already runs on makes the Store's
	// locks fail safe: held ones are reported lost, new ones refused. Its
	// periodic check sees it (a), and so does each new lock session (b).
	ok := t.Run("NodeJoiningLaterFailsLocksSafe", func(t *testing.T) {
		node1 := g.Nodes()[0]
		a := openOn(t, openStore, node1)
		b := openOn(t, mysql.OpenWithoutClusterWatch, node1)
		la := mustLock(t, a, "mgfs:fid:1", 0)
		lb := mustLock(t, b, "mgfs:fid:2", 0)
		t0 := time.Now()
		if _, err := g.AddNode(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("node 2 joined in %v", time.Since(t0).Round(time.Millisecond))
		// A fresh session of b's sees the cluster of two.
		if _, err := b.Lock(ctx, "mgfs:fid:3", 0); !errors.Is(err, mysql.ErrNodeLocalLocks) {
			t.Errorf("Lock on a Store without the periodic check after a node joined: %v; want ErrNodeLocalLocks", err)
		}
		bound := 30 * time.Second // a loaded machine; the check runs every second
		for _, l := range []store.Lock{la, lb} {
			select {
			case <-l.Lost():
			case <-time.After(bound):
				t.Fatalf("lock %q not reported lost %v after a node joined", l.Name(), bound)
			}
			if err := l.Release(ctx); !errors.Is(err, store.ErrLockLost) {
				t.Errorf("Release of %q after it was lost: %v; want ErrLockLost", l.Name(), err)
			}
		}
		// A lock may also be lost to a ping the donor of the state
		// transfer answered late; the refusal follows within the bound.
		var err error
		for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var l store.Lock
			if l, err = a.Lock(ctx, "mgfs:fid:1", 0); l != nil {
				l.Release(ctx)
			}
			if errors.Is(err, mysql.ErrNodeLocalLocks) {
				break
			}
		}
		if !errors.Is(err, mysql.ErrNodeLocalLocks) || !strings.Contains(err.Error(), "lock_dsn") {
			t.Errorf("Lock after a node joined: %v; want ErrNodeLocalLocks naming lock_dsn", err)
		}
		if !strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("no error logged when the cluster grew:\n%s", logs.String())
		}
	})
	if !ok {
		t.FailNow()
	}
	if _, err := g.AddNode(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := g.Nodes()

	// The bug the refusal prevents: with the checks off, Stores on two
	// nodes are both granted one lock, and the earlier holder's fenced
	// write is still accepted after the later grant.
	t.Run("DoubleGrantWithoutTheCheck", func(t *testing.T) {
		x := openOn(t, mysql.OpenIgnoringCluster, nodes[0])
		y := openOn(t, mysql.OpenIgnoringCluster, nodes[1])
		lx := mustLock(t, x, "mgfs:fid:1", 0)
		ly, err := y.Lock(ctx, "mgfs:fid:1", 0)
		if err != nil {
			t.Fatalf("second Store's Lock on node 2: %v; want it granted (node-local GET_LOCK): has Galera changed?", err)
		}
		if err := x.SetServerSetting(store.WithFence(ctx, lx), "galera-stale", "x"); err != nil {
			t.Errorf("fenced write of the first holder after the second grant: %v; want it accepted (node-local fencing)", err)
		}
		mustRelease(t, ly)
		mustRelease(t, lx)
	})

	// With the check, Open on any node of the three refuses, saying why
	// and what to do instead.
	t.Run("OpenRefusedOnEveryNode", func(t *testing.T) {
		for _, n := range nodes {
			s, err := store.Open(ctx, n.DSN("test"))
			if err == nil {
				s.Close()
				t.Fatalf("store.Open on node %d of 3 succeeded; want ErrNodeLocalLocks", n.Index())
			}
			msg := err.Error()
			t.Logf("store.Open on node %d: %v", n.Index(), err)
			if !errors.Is(err, mysql.ErrNodeLocalLocks) || !strings.Contains(msg, "lock_dsn") || !strings.Contains(msg, "3 nodes") {
				t.Errorf("store.Open on node %d: %v; want ErrNodeLocalLocks naming 3 nodes and lock_dsn", n.Index(), err)
			}
			if c := strings.Count(msg, "node-local"); c != 1 {
				t.Errorf("%q says node-local %d times; want the sentinel wrapped once", msg, c)
			}
		}
	})

	// The fix the refusal names: with the locks in etcd (lock_dsn), Stores
	// on two nodes exclude each other, and a stale holder's fenced write
	// is refused through the other node, since gomogile_lock_fence is an
	// InnoDB table Galera replicates. The earlier subtests recorded the
	// database's own locks in gomogile_meta: clear it as an operator moving
	// to a lock service does, with every tracker stopped.
	t.Run("LockDSNExcludesAcrossNodes", func(t *testing.T) {
		db, err := sql.Open("mysql", nodes[0].DriverDSN("test"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, "DELETE FROM gomogile_meta WHERE name = 'lock_service'"); err != nil {
			t.Fatal(err)
		}
		locks := testdb.Etcd(t)
		withLocks := func(ctx context.Context, dsn string) (*store.Store, error) {
			return store.Open(ctx, dsn, store.WithLockDSN(locks))
		}
		x := openOn(t, withLocks, nodes[0])
		y := openOn(t, withLocks, nodes[1])
		if got := x.Capabilities().LockService; got != "etcd" {
			t.Fatalf("LockService = %q; want etcd", got)
		}
		// Info (the start-up log's and the status page's) names the
		// topology and the lock service.
		info, err := y.Info(ctx)
		if err != nil || !strings.HasSuffix(info.ServerVersion, "(Galera, 3 nodes)") || !strings.HasPrefix(info.Locks, "etcd ") {
			t.Errorf("Info on node 2 = %+v, %v; want a server version ending in (Galera, 3 nodes) and etcd locks", info, err)
		}
		lx := mustLock(t, x, "mgfs:fid:1", 0)
		if ly, err := y.Lock(ctx, "mgfs:fid:1", 0); !errors.Is(err, store.ErrLockTimeout) {
			if err == nil {
				ly.Release(ctx)
			}
			t.Fatalf("Lock on node 2 while node 1's Store holds it: %v; want ErrLockTimeout", err)
		}
		if err := x.SetServerSetting(store.WithFence(ctx, lx), "galera-etcd", "x"); err != nil {
			t.Fatalf("fenced write of the holder: %v", err)
		}
		// x's grant ends at etcd without x releasing it (its lease revoked,
		// as a partitioned holder's expires); y is granted through node 2,
		// and x's late write through node 1 is refused.
		f, ok := conformance.FaultsOf(x)
		if !ok {
			t.Fatalf("%T offers no fault hooks", x)
		}
		if err := f.KillLockSession(ctx, lx); err != nil {
			t.Fatal(err)
		}
		ly := mustLock(t, y, "mgfs:fid:1", 10*time.Second)
		if ly.Token() <= lx.Token() {
			t.Errorf("token of the later grant %d <= the earlier's %d", ly.Token(), lx.Token())
		}
		if err := x.SetServerSetting(store.WithFence(ctx, lx), "galera-etcd", "stale"); !errors.Is(err, store.ErrFenced) {
			t.Errorf("stale holder's fenced write through node 1 after node 2's grant: %v; want ErrFenced", err)
		}
		if err := y.SetServerSetting(store.WithFence(ctx, ly), "galera-etcd", "y"); err != nil {
			t.Errorf("new holder's fenced write through node 2: %v", err)
		}
		mustRelease(t, ly)
	})
}

// openStore is store.Open with the database's own locks.
func openStore(ctx context.Context, dsn string) (*store.Store, error) { return store.Open(ctx, dsn) }
