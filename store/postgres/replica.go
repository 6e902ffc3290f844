package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// replicas is how a PostgreSQL Store reads from hot standbys (see "Read
// replicas" in package store). Positions are WAL positions: the
// primary's pg_current_wal_lsn() is at or past every commit acknowledged
// before it was read, and a standby has applied one when its
// pg_last_wal_replay_lsn() has passed it. A server that is not in
// recovery (a promoted standby, a primary named by mistake) never counts
// as caught up: its position says nothing of the primary's. The standby's
// sessions are read-only (default_transaction_read_only), as a standby's
// are anyway.
func replicas(d *store.DSN) *sqlstore.Replicas {
	return &sqlstore.Replicas{
		Driver: d.Driver,
		Open: func(ctx context.Context, r *store.DSN) (*sql.DB, error) {
			cfg, err := parseDSN(r)
			if err != nil {
				return nil, err
			}
			cfg.conn.RuntimeParams["default_transaction_read_only"] = "on"
			db := openDB(cfg.conn)
			if err := db.PingContext(ctx); err != nil {
				db.Close()
				return nil, fmt.Errorf("postgres: connect to replica: %w", err)
			}
			return db, nil
		},
		Position: "SELECT pg_current_wal_lsn()::text",
		Reached:  "SELECT pg_is_in_recovery() AND COALESCE(pg_last_wal_replay_lsn() >= CAST(? AS pg_lsn), false)",
		DSNs:     d.Replicas,
		MaxLag:   d.ReplicaMaxLag,
	}
}
