package sqlite

import "github.com/gomogile/gomogile/store/sqlstore"

// Fencing tokens: the SQL of the fence sqlstore keeps for SQLite's
// in-process locks and for an outside lock service.

// Fencing: names are BLOBs, compared byte for byte, and SQLite
// has had RETURNING since 3.35; BEGIN IMMEDIATE already excludes every other
// writer, so the fence check needs no row lock.
func (Dialect) Fencing() sqlstore.Fencing {
	return sqlstore.Fencing{
		Schema: `CREATE TABLE IF NOT EXISTS gomogile_fence (
	name  BLOB NOT NULL PRIMARY KEY,
	token BIGINT NOT NULL
)`,
		Bump: `INSERT INTO gomogile_fence (name, token) VALUES (?, 1)
	ON CONFLICT (name) DO UPDATE SET token = token + 1 RETURNING token`,
		ServiceSchema: `CREATE TABLE IF NOT EXISTS gomogile_lock_fence (
	name  BLOB NOT NULL PRIMARY KEY,
	token BIGINT NOT NULL
)`,
		Raise: `INSERT INTO gomogile_lock_fence (name, token) VALUES (?, ?)
	ON CONFLICT (name) DO UPDATE SET token = MAX(token, excluded.token)`,
	}
}
