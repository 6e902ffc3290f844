package dbinstance_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
)

// A cluster of three: a write on one node is read on the others, a killed
// node leaves two, and it rejoins with what it missed; Cleanup leaves
// nothing behind.
func TestGalera_ReplicateKillRejoin(t *testing.T) {
	need(t, "galera")
	ctx := ctxT(t, 5*time.Minute)
	t0 := time.Now()
	g, err := dbinstance.StartGalera(ctx, dbinstance.GaleraOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("StartGalera (3 nodes) took %v", time.Since(t0))
	nodes := g.Nodes()
	t.Cleanup(func() {
		if err := g.Cleanup(); err != nil {
			t.Error(err)
		}
		for _, n := range nodes {
			if _, err := os.Stat(n.Dir()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s left behind: %v", n.Dir(), err)
			}
		}
	})
	if len(nodes) != 3 {
		t.Fatalf("%d nodes; want 3", len(nodes))
	}
	dbs := make([]*sql.DB, len(nodes))
	for i, n := range nodes {
		if n.Port() >= 32768 || n.Port() == 3306 {
			t.Errorf("node %d on port %d; want a private port below 32768", n.Index(), n.Port())
		}
		db, err := sql.Open("mysql", n.DriverDSN("test"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
		st, err := n.Wsrep(ctx)
		if err != nil || !st.Synced() || st.ClusterSize != 3 {
			t.Fatalf("node %d: %+v (%v); want synced in a cluster of 3", n.Index(), st, err)
		}
	}
	if _, err := dbs[0].ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[1].ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if n, err := countSynced(ctx, dbs[2]); err != nil || n != 1 {
		t.Fatalf("node 3 reads %d rows (%v); want the 1 written on node 2", n, err)
	}

	if err := nodes[2].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitSize(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[0].ExecContext(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if err := nodes[2].Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("node 3 rejoined in %v", time.Since(t0))
	if err := g.WaitSize(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if n, err := countSynced(ctx, dbs[2]); err != nil || n != 2 {
		t.Fatalf("rejoined node 3 reads %d rows (%v); want 2", n, err)
	}
}

// countSynced counts t's rows once the node has applied every write the
// cluster committed before the query (wsrep_sync_wait).
func countSynced(ctx context.Context, db *sql.DB) (int, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1"); err != nil {
		return 0, err
	}
	var n int
	err = conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n)
	return n, err
}
