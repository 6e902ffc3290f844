package dbinstance_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
)

func TestMariaDBReplica(t *testing.T) {
	need(t, "mariadb")
	ctx := ctxT(t, 180*time.Second)
	t0 := time.Now()
	p, err := dbinstance.StartMariaDBPrimary(ctx, dbinstance.MyOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Cleanup(); err != nil {
			t.Error(err)
		}
	})
	r, err := p.StartReplica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Cleanup(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("primary and replica up in %v", time.Since(t0))
	pdb := openDB(t, p)
	rdb := openDB(t, r)

	var ro bool
	if err := rdb.QueryRowContext(ctx, "SELECT @@read_only").Scan(&ro); err != nil || !ro {
		t.Errorf("replica read_only %v (%v), want on", ro, err)
	}
	if _, err := pdb.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	insert := func(id int) {
		t.Helper()
		if _, err := pdb.ExecContext(ctx, "INSERT INTO t VALUES (?)", id); err != nil {
			t.Fatal(err)
		}
	}
	has := func(id int) bool {
		t.Helper()
		var n int
		if err := rdb.QueryRowContext(ctx, "SELECT count(*) FROM t WHERE id = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	// applied is what callers rely on: MASTER_GTID_WAIT(pos, 0) answers at
	// once whether the replica has applied everything up to pos.
	applied := func() int {
		t.Helper()
		pos, err := p.GTIDBinlogPos(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var res int
		if err := rdb.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, 0)", pos).Scan(&res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	caughtUp := func() {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := r.WaitCaughtUp(wctx, p); err != nil {
			t.Fatal(err)
		}
	}

	insert(1)
	caughtUp()
	if !has(1) {
		t.Fatal("row 1 not on the caught-up replica")
	}
	if got := applied(); got != 0 {
		t.Errorf("MASTER_GTID_WAIT(primary pos, 0) = %d on a caught-up replica, want 0", got)
	}

	if err := r.PauseReplication(ctx); err != nil {
		t.Fatal(err)
	}
	insert(2)
	time.Sleep(time.Second)
	if has(2) {
		t.Error("row 2 on the replica while paused")
	}
	if got := applied(); got == 0 {
		t.Error("MASTER_GTID_WAIT(primary pos, 0) = 0 on a paused replica behind the primary")
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	err = r.WaitCaughtUp(short, p)
	cancel()
	if err == nil {
		t.Error("WaitCaughtUp on a paused replica succeeded")
	} else {
		t.Logf("WaitCaughtUp on a paused replica: %v", err)
	}
	if err := r.ResumeReplication(ctx); err != nil {
		t.Fatal(err)
	}
	caughtUp()
	if !has(2) {
		t.Fatal("row 2 not on the replica after ResumeReplication")
	}

	// A crash of the replica: it must come back replicating by itself,
	// from where it was, including what the primary wrote meanwhile.
	insert(3)
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	insert(4)
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	insert(5)
	caughtUp()
	for id := 1; id <= 5; id++ {
		if !has(id) {
			t.Errorf("row %d not on the replica after its Kill and Start", id)
		}
	}
	var n int
	if err := rdb.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 5 {
		t.Errorf("replica has %d rows (%v), want 5", n, err)
	}
	t.Logf("total %v", time.Since(t0))
}

func openDB(t *testing.T, m *dbinstance.MariaDB) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", m.DriverDSN("test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
