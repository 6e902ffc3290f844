package dbinstance_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
)

func startPG(t *testing.T) *dbinstance.Postgres {
	t.Helper()
	return startPGWith(t, dbinstance.PGOptions{})
}

func startPGWith(t *testing.T, o dbinstance.PGOptions) *dbinstance.Postgres {
	t.Helper()
	need(t, "postgres")
	t0 := time.Now()
	o.Logf = t.Logf
	pg, err := dbinstance.StartPostgres(ctxT(t, 60*time.Second), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pg.Cleanup(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(pg.Dir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", pg.Dir(), err)
		}
	})
	t.Logf("StartPostgres took %v", time.Since(t0))
	return pg
}

func pgConn(t *testing.T, ctx context.Context, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func pgCount(t *testing.T, ctx context.Context, c *pgx.Conn) int {
	t.Helper()
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A commit acknowledged before SIGKILL is there after the restart, which
// is a crash recovery (a new postmaster start time).
func TestPostgresKillStart(t *testing.T) {
	pg := startPG(t)
	ctx := ctxT(t, 60*time.Second)
	if !strings.HasPrefix(pg.DSN("test"), "postgres://root@127.0.0.1:") {
		t.Fatalf("DSN %q", pg.DSN("test"))
	}
	c := pgConn(t, ctx, pg.DSN("test"))
	var super bool
	if err := c.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil || !super {
		t.Fatalf("root superuser: %v %v", super, err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, err := c.Exec(ctx, "INSERT INTO t VALUES ($1)", i); err != nil {
			t.Fatal(err)
		}
	}
	before, err := pg.StartTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("query after Kill succeeded")
	}
	if pg.Running() {
		t.Fatal("Running after Kill")
	}
	t0 := time.Now()
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart with crash recovery took %v", time.Since(t0))
	c2 := pgConn(t, ctx, pg.DSN("test"))
	if n := pgCount(t, ctx, c2); n != 100 {
		t.Fatalf("after crash restart: %d rows, want 100", n)
	}
	after, err := pg.StartTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !after.After(before) {
		t.Errorf("start time %v not after %v", after, before)
	}
	log, _ := os.ReadFile(pg.Dir() + "/postgres.log")
	if !strings.Contains(string(log), "not properly shut down") {
		t.Errorf("no crash recovery in the server log:\n%s", log)
	}
	if err := pg.Start(ctx); err == nil {
		t.Error("Start of a running server succeeded")
	}
}

// Kill must take the backends with the postmaster: none may survive to
// hold the shared memory the restart needs.
func TestPostgresKillTakesChildren(t *testing.T) {
	pg := startPG(t)
	ctx := ctxT(t, 60*time.Second)
	c := pgConn(t, ctx, pg.DSN("test"))
	var pid int
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	if dbinstance.Alive(pid) {
		t.Fatalf("backend %d still alive after Kill", pid)
	}
}

func TestPostgresStandbyPromote(t *testing.T) {
	pg := startPG(t)
	ctx := ctxT(t, 90*time.Second)
	c := pgConn(t, ctx, pg.DSN("test"))
	if _, err := c.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	sb, err := pg.StartStandby(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Cleanup() })
	t.Logf("StartStandby took %v", time.Since(t0))
	if sb.Addr() == pg.Addr() {
		t.Fatal("standby on the primary's port")
	}
	if err := pg.SetSynchronousStandby(ctx, true); err != nil {
		t.Fatal(err)
	}
	var sync string
	if err := c.QueryRow(ctx, "SELECT sync_state FROM pg_stat_replication").Scan(&sync); err != nil || sync != "sync" {
		t.Fatalf("standby sync_state %q (%v), want sync", sync, err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	sc := pgConn(t, ctx, sb.DSN("test"))
	for deadline := time.Now().Add(20 * time.Second); pgCount(t, ctx, sc) != 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("row inserted on the primary not on the standby after 20s")
		}
	}
	if _, err := sc.Exec(ctx, "INSERT INTO t VALUES (3)"); err == nil {
		t.Fatal("write on the standby succeeded")
	}

	// Fail over: the primary crashes, the standby is promoted, a
	// multi-host DSN finds the new primary.
	failover := dbinstance.FailoverDSN("test", pg, sb)
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := sb.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	fc := pgConn(t, ctx, failover)
	if _, err := fc.Exec(ctx, "INSERT INTO t VALUES (3)"); err != nil {
		t.Fatalf("write through %s after promote: %v", failover, err)
	}
	if got := fc.PgConn().Conn().RemoteAddr().String(); got != sb.Addr() {
		t.Errorf("failover DSN connected to %s, want the promoted %s", got, sb.Addr())
	}
	if n := pgCount(t, ctx, fc); n != 3 {
		t.Errorf("rows on the promoted standby: %d, want 3", n)
	}
	fc.Close(context.Background())

	// Fail back: the old primary is rebuilt as the new one's standby on
	// its own port, so the same DSN survives a second failover.
	if err := pg.Rebuild(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := sb.SetSynchronousStandby(ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, err := pgConn(t, ctx, sb.DSN("test")).Exec(ctx, "INSERT INTO t VALUES (4)"); err != nil {
		t.Fatal(err)
	}
	if err := sb.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := pg.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	bc := pgConn(t, ctx, failover)
	if got := bc.PgConn().Conn().RemoteAddr().String(); got != pg.Addr() {
		t.Errorf("failover DSN connected to %s after failing back, want the rebuilt %s", got, pg.Addr())
	}
	if n := pgCount(t, ctx, bc); n != 4 {
		t.Errorf("rows after failing back: %d, want 4 (every commit acknowledged under synchronous replication)", n)
	}
}

// Instances copied from one template are separate clusters, each with
// its own settings.
func TestPostgresInstancesIndependent(t *testing.T) {
	a := startPG(t)
	b := startPGWith(t, dbinstance.PGOptions{Settings: map[string]string{"max_connections": "42"}})
	ctx := ctxT(t, 30*time.Second)
	if a.Addr() == b.Addr() || a.Dir() == b.Dir() {
		t.Fatalf("two instances share %s / %s", a.Addr(), a.Dir())
	}
	ca, cb := pgConn(t, ctx, a.DSN("test")), pgConn(t, ctx, b.DSN("test"))
	if _, err := ca.Exec(ctx, "CREATE TABLE t (id int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Exec(ctx, "SELECT 1 FROM t"); err == nil {
		t.Fatal("a table made on one instance exists on the other")
	}
	for i, c := range []*pgx.Conn{ca, cb} {
		var n string
		if err := c.QueryRow(ctx, "SHOW max_connections").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := []string{"100", "42"}[i]; n != want {
			t.Errorf("instance %d: max_connections %s, want %s", i, n, want)
		}
	}
}
