package dbinstance_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
)

// In transaction pooling two clients share one server connection: each
// transaction gets whichever is free.
func TestPgBouncerTransactionMode(t *testing.T) {
	need(t, "pgbouncer")
	pg := startPG(t)
	ctx := ctxT(t, 60*time.Second)
	b, err := dbinstance.StartPgBouncer(ctx, pg.Addr(), dbinstance.BouncerOptions{PoolSize: 1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Cleanup(); err != nil {
			t.Error(err)
		}
	})
	cfg, err := pgx.ParseConfig(b.DSN("test"))
	if err != nil {
		t.Fatal(err)
	}
	// PgBouncer before 1.21 cannot carry prepared statements across
	// transactions.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	var pids []int
	for i := 0; i < 2; i++ {
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		var pid int
		if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if pids[0] != pids[1] {
		t.Errorf("two clients got server connections %v with a pool of 1: not transaction pooling", pids)
	}
	direct, err := pgx.Connect(ctx, pg.DSN("test"))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(context.Background())
	var app string
	if err := direct.QueryRow(ctx, "SELECT coalesce(application_name, '') FROM pg_stat_activity WHERE pid = $1", pids[0]).Scan(&app); err != nil {
		t.Fatalf("the pooler's server connection %d is not on the target: %v", pids[0], err)
	}
}
