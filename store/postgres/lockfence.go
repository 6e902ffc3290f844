package postgres

import (
	"strconv"

	"github.com/gomogile/gomogile/store/sqlstore"
)

// Fencing tokens: the SQL of the fence sqlstore keeps (Dialect.Fencing),
// which the lease locks' grant bumps (locksql.go).

// Fencing: an UNLOGGED table in epochs (sqlstore.Fencing.NewEpoch), so a
// grant's bump is no WAL flush, with the epoch counter in a logged table
// of its own; names as bytea, compared byte for byte (text cannot hold the
// NUL a lock name may contain), the floor row under the empty bytea. A
// table an older gomogile created logged is made UNLOGGED here, once. FOR
// SHARE holds the row against a concurrent grant's bump until COMMIT.
func (Dialect) Fencing() sqlstore.Fencing {
	shift := strconv.Itoa(sqlstore.FenceEpochShift)
	return sqlstore.Fencing{
		Schema: `DO $$
BEGIN
	CREATE UNLOGGED TABLE IF NOT EXISTS gomogile_fence (
		name  BYTEA NOT NULL PRIMARY KEY,
		token BIGINT NOT NULL
	);
	IF (SELECT relpersistence FROM pg_class WHERE oid = 'gomogile_fence'::regclass) = 'p' THEN
		ALTER TABLE gomogile_fence SET UNLOGGED;
	END IF;
	CREATE TABLE IF NOT EXISTS gomogile_fence_epoch (
		id    INT NOT NULL PRIMARY KEY CHECK (id = 1),
		epoch BIGINT NOT NULL
	);
END
$$`,
		Bump: fenceBump("CAST(? AS BYTEA)", ""),
		NewEpoch: []string{`WITH e AS (
	INSERT INTO gomogile_fence_epoch (id, epoch) VALUES (1, 1)
	ON CONFLICT (id) DO UPDATE SET epoch = gomogile_fence_epoch.epoch + 1
	RETURNING epoch
)
INSERT INTO gomogile_fence (name, token) SELECT ''::bytea, epoch << ` + shift + ` FROM e
ON CONFLICT (name) DO UPDATE SET token = GREATEST(gomogile_fence.token, EXCLUDED.token)
RETURNING token`},
		ShareLock:        " FOR SHARE",
		ServiceShareLock: " FOR SHARE",
		ServiceSchema: `CREATE TABLE IF NOT EXISTS gomogile_lock_fence (
	name  BYTEA NOT NULL PRIMARY KEY,
	token BIGINT NOT NULL
)`,
		Raise: `INSERT INTO gomogile_lock_fence (name, token) VALUES (CAST(? AS BYTEA), ?)
ON CONFLICT (name) DO UPDATE SET token = GREATEST(gomogile_lock_fence.token, EXCLUDED.token)`,
	}
}

// fenceBump is Fencing's Bump: name (an SQL expression) gets the larger of
// its token + 1 and the floor + 1, and nothing happens while the floor row
// is missing. from, if not empty, is one more FROM item the bump happens
// only with (the acquire statement's inserted lock row, locksql.go).
func fenceBump(name, from string) string {
	if from != "" {
		from = ", " + from
	}
	return `INSERT INTO gomogile_fence (name, token)
	SELECT ` + name + `, f.token + 1 FROM gomogile_fence f` + from + ` WHERE f.name = ''::bytea
	ON CONFLICT (name) DO UPDATE SET token = GREATEST(gomogile_fence.token + 1, EXCLUDED.token)
	RETURNING token`
}
