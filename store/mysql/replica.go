package mysql

import (
	"context"
	"database/sql"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// replicas is how a MySQL/MariaDB Store reads from asynchronous replicas
// (see "Read replicas" in package store). Positions are GTIDs: the
// primary's @@gtid_binlog_pos (empty without a binary log, so no replica
// is used), and a replica has applied one when MASTER_GTID_WAIT with no
// wait returns 0 — it compares the replica's gtid_slave_pos, which moves
// when an applied transaction commits. MySQL (not MariaDB) has neither:
// there the Store's reads stay on the primary and Info says why.
//
// The replicas' sessions use the primary's collation (the key compare
// must be the same) and are read-only: root may write to a replica
// despite read_only=1, and nothing of the Store's may.
func replicas(d *store.DSN, collation string) *sqlstore.Replicas {
	return &sqlstore.Replicas{
		Driver: d.Driver,
		Open: func(ctx context.Context, r *store.DSN) (*sql.DB, error) {
			cfg, _, err := configure(r)
			if err != nil {
				return nil, err
			}
			cfg.Collation = collation
			return openPool(ctx, cfg, sessionSetup{readOnly: true})
		},
		Position: "SELECT @@GLOBAL.gtid_binlog_pos",
		Reached:  "SELECT MASTER_GTID_WAIT(?, 0) = 0",
		DSNs:     d.Replicas,
		MaxLag:   d.ReplicaMaxLag,
	}
}
