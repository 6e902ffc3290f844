package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
)

// Why a Store on Galera sends one statement per query (no Batch pool):
// when another node's commit aborts a transaction (a brute-force abort)
// while a query of several statements runs in it, MariaDB 10.11 rolls
// the transaction back and runs the query's remaining statements on, each
// committed on its own. Here the abort comes during a DO SLEEP, and the
// INSERT after it survives its transaction.
func TestGalera_BatchAbortedMidQuery(t *testing.T) {
	g := galeraCluster(t)
	database := galeraDatabase(t, g)
	nodes := g.Nodes()
	ctx := t.Context()
	n1 := openNodeDB(t, nodes[0], database, "wsrep_sync_wait", "1")
	cfg, err := gomysql.ParseDSN(nodes[1].DriverDSN(database))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MultiStatements = true
	cfg.Params = map[string]string{"wsrep_sync_wait": "1"}
	c, err := gomysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n2 := sql.OpenDB(c)
	defer n2.Close()
	for _, q := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"CREATE TABLE u (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO t VALUES (1, 0)",
	} {
		if _, err := n1.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := n2.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "START TRANSACTION; UPDATE t SET v = v + 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	// Node 1 updates the row node 2's open transaction holds: applying
	// that, node 2 aborts the transaction, in the middle of the sleep.
	timer := time.AfterFunc(300*time.Millisecond, func() {
		if _, err := n1.ExecContext(context.Background(), "UPDATE t SET v = v + 100 WHERE id = 1"); err != nil {
			t.Error(err)
		}
	})
	defer timer.Stop()
	_, err = conn.ExecContext(ctx, "INSERT INTO u VALUES (1); DO SLEEP(2); INSERT INTO u VALUES (2); COMMIT")
	t.Logf("the query of the aborted transaction returned %v", err)
	var v int
	var rows sql.NullString
	if err := n1.QueryRowContext(ctx, "SELECT v, (SELECT GROUP_CONCAT(id ORDER BY id) FROM u) FROM t").Scan(&v, &rows); err != nil {
		t.Fatal(err)
	}
	if v != 100 {
		t.Fatalf("t.v = %d; want 100, node 2's transaction aborted (did node 1's update not conflict?)", v)
	}
	if !rows.Valid {
		t.Fatalf("no row of the aborted transaction's query is left: has Galera changed? Then the Batch pool may be safe on it again")
	}
	t.Logf("rows of the aborted transaction's query left committed: %s", rows.String)
}

// Racing commits of one fid through two nodes have one winner and leave
// nothing of the loser's, round after round. With a Batch pool, a commit's
// second query (its file_on rows, queue row and COMMIT) was sometimes cut
// by the winner's abort and run on outside the transaction: both callers
// were told they won, and the loser's later file_on rows stayed (seen in
// 3% of rounds).
func TestGalera_RacingCommitsOneWinner(t *testing.T) {
	g := galeraCluster(t)
	database := galeraDatabase(t, g)
	locks := testdb.Etcd(t)
	nodes := g.Nodes()
	ctx := t.Context()
	var ss [2]*store.Store
	for i, n := range nodes[:2] {
		s, err := store.Open(ctx, testdb.WithLockDSN(n.DSN(database), locks))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ss[i] = s
	}
	// The plan says so, as the tracker's start-up log does.
	info, err := ss[0].Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for op, path := range info.Plan {
		if strings.Contains(path, "batch") || strings.Contains(path, "chained") {
			t.Errorf("Info().Plan[%s] = %q on a Galera node; want no path of the Batch pool", op, path)
		}
	}
	d, err := ss[0].CreateDomain(ctx, "dom")
	if err != nil {
		t.Fatal(err)
	}
	h, err := ss[0].CreateHost(ctx, store.Host{Name: "h", IP: "10.0.0.1", HTTPPort: 7500, Status: "alive"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		if _, err := ss[0].CreateDevice(ctx, store.Device{ID: i, HostID: h.ID, Status: "alive"}); err != nil {
			t.Fatal(err)
		}
	}
	const rounds = 200
	for round := range rounds {
		fid, err := ss[0].CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "tmp"})
		if err != nil {
			t.Fatal(err)
		}
		cs := [2]store.Commit{
			{Fid: fid, DomainID: d.ID, Key: fmt.Sprintf("r%d/a", round), Length: 1, DevIDs: []int{1, 2}, Replicate: true},
			{Fid: fid, DomainID: d.ID, Key: fmt.Sprintf("r%d/b", round), Length: 2, DevIDs: []int{3, 4}, Replicate: true},
		}
		var errs [2]error
		var wg sync.WaitGroup
		for i := range ss {
			wg.Go(func() { _, errs[i] = ss[i].CommitFile(ctx, cs[i]) })
		}
		wg.Wait()
		win := 0
		switch {
		case errs[0] == nil && errors.Is(errs[1], store.ErrNotFound):
		case errs[1] == nil && errors.Is(errs[0], store.ErrNotFound):
			win = 1
		default:
			t.Fatalf("round %d: racing commits of fid %d returned %v and %v; want one nil and one ErrNotFound", round, fid, errs[0], errs[1])
		}
		on, err := ss[0].FileOn(ctx, fid)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(on) != fmt.Sprint(cs[win].DevIDs) {
			t.Fatalf("round %d: FileOn(%d) = %v; want only the winner's %v", round, fid, on, cs[win].DevIDs)
		}
	}
}
