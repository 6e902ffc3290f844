package mysql_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
)

// A fenced write on a Galera node must not commit after a later grant's
// fence was raised through another node. A locking read of the fence row
// cannot promise it there: the read's lock is the node's own, and Galera
// certifies a transaction against the rows it writes only. A raise that
// another node committed first but this node has not applied yet finds
// the write's transaction already certified, waits for it, and the write
// is replayed from its rows: it commits, stale. The fence check must
// therefore write the fence row, so that certification sees the two
// transactions touch one row and refuses the later (1213).
//
// The test runs the fenced write's statements by hand, on one session of
// node 1, with the check the Store's dialect gives for this node; node 2
// raises the fence as a later grant does, in a transaction whose many
// rows keep node 1's applier busy until the write has been certified.
func TestGalera_FenceCheckCertified(t *testing.T) {
	g := galeraCluster(t)
	database := galeraDatabase(t, g)
	locks := testdb.Etcd(t)
	nodes := g.Nodes()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	db1 := openNodeDB(t, nodes[0], database)
	db2 := openNodeDB(t, nodes[1], database, "wsrep_sync_wait", "7")
	// The fence table as the first lock_dsn release made it, without the
	// checks column: Open adds it.
	if _, err := db1.ExecContext(ctx, "CREATE TABLE gomogile_lock_fence (name VARBINARY(255) NOT NULL PRIMARY KEY, token BIGINT NOT NULL) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	x, err := store.Open(ctx, testdb.WithLockDSN(nodes[0].DSN(database), locks))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	d, err := mysql.StoreDialect(x)
	if err != nil {
		t.Fatal(err)
	}
	fencing := d.Fencing()
	const name = "mgfs:fid:1"
	lx, err := x.Lock(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lx.Release(context.WithoutCancel(ctx))

	if _, err := db2.ExecContext(ctx, "CREATE TABLE ballast (id INT AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(200) NOT NULL) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}

	for round := range 3 {
		// The holder's write, up to its COMMIT: the fence check, then a row.
		tx, err := db1.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		token := lx.Token() + int64(round)
		if fencing.Check != "" {
			res, err := tx.ExecContext(ctx, fencing.Check, []byte(name), token)
			if err != nil {
				t.Fatalf("round %d: fence check: %v", round, err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("round %d: fence check of the current grant touched %d rows; want 1", round, n)
			}
		} else {
			t.Errorf("the dialect on a Galera node checks a fence with a locking read; want Fencing.Check, a write of the row")
			var have int64
			if err := tx.QueryRowContext(ctx, "SELECT token FROM gomogile_lock_fence WHERE name = ?"+fencing.ShareLock, []byte(name)).Scan(&have); err != nil {
				t.Fatal(err)
			}
			if have != token {
				t.Fatalf("round %d: fence row at %d; want %d", round, have, token)
			}
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO server_settings (field, value) VALUES (?, 'stale')", fmt.Sprintf("fence-round-%d", round)); err != nil {
			t.Fatal(err)
		}

		// A later grant's fence, raised through node 2 behind rows that
		// take node 1 a while to apply.
		t2, err := db2.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := t2.ExecContext(ctx, "INSERT INTO ballast (pad) SELECT REPEAT('x', 200) FROM seq_1_to_60000"); err != nil {
			t.Fatal(err)
		}
		if _, err := t2.ExecContext(ctx, fencing.Raise, []byte(name), token+1); err != nil {
			t.Fatal(err)
		}
		if err := t2.Commit(); err != nil {
			t.Fatalf("round %d: raise through node 2: %v", round, err)
		}

		err = tx.Commit()
		var stale int
		if err := db2.QueryRowContext(ctx, "SELECT COUNT(*) FROM server_settings WHERE value = 'stale'").Scan(&stale); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: the stale holder's COMMIT on node 1 after node 2 raised the fence: %v", round, err)
		if err == nil || stale != 0 {
			t.Fatalf("round %d: a write checked against grant %d committed after grant %d was fenced in through another node (COMMIT error %v, %d stale rows)",
				round, token, token+1, err, stale)
		}
		if errno := mysqlErrno(err); errno != 1213 {
			t.Errorf("round %d: COMMIT failed with %v (errno %d); want 1213, a certification conflict", round, err, errno)
		}
		if _, err := db2.ExecContext(ctx, "DELETE FROM ballast"); err != nil {
			t.Fatal(err)
		}
	}
}
