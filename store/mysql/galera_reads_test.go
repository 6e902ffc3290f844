package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
)

// pauseApplier holds back node n's applying of what other nodes commit
// until the returned function is called: FLUSH TABLES WITH READ LOCK
// desyncs a Galera node and pauses its replication, while its sessions
// may still read (and the other nodes commit without waiting for it).
func pauseApplier(t *testing.T, n *dbinstance.GaleraNode) (resume func()) {
	t.Helper()
	ctx := t.Context()
	conn, err := openNodeDB(t, n, "").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	var done bool
	resume = func() {
		if done {
			return
		}
		done = true
		if _, err := conn.ExecContext(context.Background(), "UNLOCK TABLES"); err != nil {
			t.Errorf("UNLOCK TABLES on node %d: %v", n.Index(), err)
		}
		conn.Close()
	}
	t.Cleanup(resume)
	return resume
}

// A Store on a Galera node reads causally: what another Store committed
// through another node a moment before is there for it, read or written,
// even while its node has not applied it yet; the read waits until it
// has. Node 2's applier is held back so that the lag is certain, not a
// race: without causal reads each read below returns at once, stale.
func TestGalera_CausalReads(t *testing.T) {
	g := galeraCluster(t)
	database := galeraDatabase(t, g)
	locks := testdb.Etcd(t)
	nodes := g.Nodes()
	open := func(n *dbinstance.GaleraNode) *store.Store {
		s, err := store.Open(t.Context(), testdb.WithLockDSN(n.DSN(database), locks))
		if err != nil {
			t.Fatalf("open on node %d: %v", n.Index(), err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(nodes[0]), open(nodes[1])
	ctx := t.Context()
	dom, err := a.CreateDomain(ctx, "causal")
	if err != nil {
		t.Fatal(err)
	}
	// Node 2 has applied the domain before its applier is held back.
	for {
		if ds, err := b.Domains(ctx); err != nil {
			t.Fatal(err)
		} else if len(ds) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	const lag = 300 * time.Millisecond

	t.Run("Read", func(t *testing.T) {
		resume := pauseApplier(t, nodes[1])
		if err := a.SetServerSetting(ctx, "causal", "1"); err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(lag, resume)
		t0 := time.Now()
		got, err := b.ServerSetting(ctx, "causal")
		if err != nil || got != "1" {
			t.Errorf("ServerSetting through node 2 of a setting committed through node 1: %q, %v; want \"1\"", got, err)
		}
		t.Logf("read waited %v for node 2 to apply", time.Since(t0).Round(time.Millisecond))
	})

	// A write is a transaction whose START TRANSACTION waits as the read
	// did. The held-back node also blocks writes (the read lock), so a
	// write sent too early would wait there and then find the row anyway
	// once the node applies it: instead, the test watches the node's
	// sessions and fails if the write's DELETE reaches it before the
	// node has caught up.
	t.Run("Write", func(t *testing.T) {
		resume := pauseApplier(t, nodes[1])
		fid, err := a.CreateTempFile(ctx, store.TempFile{DomainID: dom.ID, Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- b.DeleteTempFile(ctx, fid) }()
		watch := openNodeDB(t, nodes[1], "")
		for deadline := time.Now().Add(lag); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			var n int
			if err := watch.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'DELETE FROM tempfile%'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				t.Errorf("DeleteTempFile's DELETE reached node 2 before node 2 applied the tempfile's insert")
				break
			}
		}
		resume()
		if err := <-done; err != nil {
			t.Errorf("DeleteTempFile through node 2 of tempfile %d created through node 1: %v; want it deleted", fid, err)
		}
		if _, err := a.TempFile(ctx, fid); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("TempFile(%d) through node 1 after the delete: %v; want ErrNotFound", fid, err)
		}
	})
}
