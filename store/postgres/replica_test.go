package postgres_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/replicatest"
	"github.com/gomogile/gomogile/store"
)

// TestReplicas runs the read-replica test on a private PostgreSQL primary
// and a hot standby of it (pg_basebackup -R), named in the DSN's replica
// parameter. A standby refuses writes, so a write routed there would fail
// the test; there is no way to write to it behind the Store's back, so
// where reads were answered is told by the Store's counts alone.
func TestReplicas(t *testing.T) {
	pg := privatePostgres(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	sb, err := pg.StartStandby(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Cleanup() })
	const maxLag = time.Second
	exec := func(q string) func(context.Context) error {
		return func(ctx context.Context) error {
			db, err := sql.Open("pgx", sb.DSN("test"))
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = db.ExecContext(ctx, q)
			return err
		}
	}
	replicatest.Run(t, replicatest.Harness{
		Open: func(t *testing.T) *store.Store {
			return open(t, pg.DSN("test")+"&replica_max_lag="+maxLag.String()+"&replica="+url.QueryEscape(sb.DSN("test")))
		},
		MaxLag: maxLag,
		Pause:  exec("SELECT pg_wal_replay_pause()"),
		Resume: exec("SELECT pg_wal_replay_resume()"),
		Kill:   sb.Kill,
		Start:  sb.Start,
	})
}
