package postgres

import "fmt"

// lockSchema creates the lease locks' tables, after schema 17 (see
// LockSchema, the package doc's # Locks and locks.go). UNLOGGED: a server
// crash ends every session, hence every holder, so rows that vanish with
// it (PostgreSQL truncates unlogged tables on crash recovery) are exactly
// right, and writing them skips the WAL flush a durable INSERT+DELETE pays
// per lock cycle.
var lockSchema = []string{
	`CREATE UNLOGGED TABLE IF NOT EXISTS ` + ownerTable + ` (
	owner_id BIGINT NOT NULL PRIMARY KEY, -- random incarnation id
	identity TEXT NOT NULL, -- lock_owner, or host:pid:n
	hostname TEXT NOT NULL, -- for operators
	pid INT NOT NULL, -- for operators
	started_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
	expires_at TIMESTAMPTZ NOT NULL -- database clock
)`,
	"CREATE INDEX IF NOT EXISTS " + ownerTable + "_identity ON " + ownerTable + " (identity)",
	"CREATE INDEX IF NOT EXISTS " + ownerTable + "_expires_at ON " + ownerTable + " (expires_at)",
	`CREATE UNLOGGED TABLE IF NOT EXISTS ` + lockTable + ` (
	name BYTEA NOT NULL PRIMARY KEY, -- compared byte for byte
	owner_id BIGINT NOT NULL REFERENCES ` + ownerTable + ` (owner_id) ON DELETE CASCADE,
	token BIGINT NOT NULL, -- one per Acquire: tells our row from a retry's
	acquired_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
	-- Another Store waits for this holding and listens for its end
	-- (markWaitedSQL): only then does the release NOTIFY.
	waited BOOLEAN NOT NULL DEFAULT false
)`,
	"CREATE INDEX IF NOT EXISTS " + lockTable + "_owner_id ON " + lockTable + " (owner_id)",
	// The table of an older gomogile.
	"ALTER TABLE " + lockTable + " ADD COLUMN IF NOT EXISTS waited BOOLEAN NOT NULL DEFAULT false",
}

const (
	// notifyChannel carries the hex-encoded names of released locks.
	notifyChannel = "gomogile_lock_released"

	ownerTable = "gomogile_lock_owner"
	lockTable  = "gomogile_lock"
	epochTable = "gomogile_lock_epoch"
)

// epochSchema creates the lock epoch: one UNLOGGED row whose started_at is
// when the lock tables last started out empty. Crash recovery and a
// standby's promotion empty it together with the lock tables, and the next
// registration writes the current time, so no lock is granted until a lease
// has passed (see the package doc, # Locks). A table created here, on a
// database that never had locks, starts at -infinity instead: nobody can
// have held a lock on it, so there is nothing to wait for. The check and the
// CREATE are one DO block, so a later Open never mistakes an emptied table
// for a new one; two Opens racing on a new database trip over the catalog's
// unique index and the loser's retry finds the table.
var epochSchema = `DO $$
BEGIN
	IF to_regclass('` + epochTable + `') IS NULL THEN
		CREATE UNLOGGED TABLE ` + epochTable + ` (
			id INT NOT NULL PRIMARY KEY CHECK (id = 1),
			started_at TIMESTAMPTZ NOT NULL
		);
		INSERT INTO ` + epochTable + ` (id, started_at) VALUES (1, '-infinity');
	END IF;
END
$$`

// SQL of the lock backend. Names are BYTEA, so they compare byte for byte
// whatever the collation. clock_timestamp() (not now(), frozen at
// transaction start) is the database clock for leases. Every statement that
// frees locks notifies the freed names, hex-encoded, in the same
// transaction, so waiters retry as soon as it commits.
const (
	// $1 identity, $2 owner_id, $3 hostname, $4 pid, $5 lease µs, $6 this
	// Store's previous incarnation (0 if none). It frees that incarnation
	// and every expired one of the identity, with their locks, and inserts
	// the new sentinel unless another live incarnation has the identity; it
	// then reports that one's expires_at, so the caller can tell a live
	// Store (it renews) from a dead one (it expires). It also starts the
	// lock epoch if crash recovery or a promotion emptied it.
	registerSQL = `WITH live AS (
	SELECT max(expires_at) AS until FROM ` + ownerTable + `
	WHERE identity = $1 AND owner_id <> $6 AND expires_at > clock_timestamp()
), gone AS (
	DELETE FROM ` + ownerTable + `
	WHERE identity = $1 AND (owner_id = $6 OR expires_at <= clock_timestamp())
	RETURNING owner_id
), freed AS (
	DELETE FROM ` + lockTable + ` WHERE owner_id IN (SELECT owner_id FROM gone) RETURNING name
), epoch AS (
	INSERT INTO ` + epochTable + ` (id, started_at) VALUES (1, clock_timestamp())
	ON CONFLICT (id) DO NOTHING
), me AS (
	INSERT INTO ` + ownerTable + ` (owner_id, identity, hostname, pid, expires_at)
	SELECT $2, $1, $3, $4, clock_timestamp() + $5::bigint * interval '1 microsecond'
	WHERE (SELECT until FROM live) IS NULL
	RETURNING owner_id
)
SELECT (SELECT count(*) FROM me), (SELECT until FROM live),
	(SELECT count(*) FROM (SELECT pg_notify('` + notifyChannel + `', encode(name, 'hex')) FROM freed) n)`

	// $1 owner_id, $2 lease µs. Renewal only extends: it never re-creates
	// an owner that was reaped, so a Store learns it lost its locks.
	renewSQL = `UPDATE ` + ownerTable + `
SET expires_at = clock_timestamp() + $2::bigint * interval '1 microsecond'
WHERE owner_id = $1`

	// evictSQL frees the owners matching the condition that follows, with
	// their locks. The FOREIGN KEY's cascade would delete the locks too, but
	// without telling anyone which names came free.
	evictSQL = `WITH gone AS (
	DELETE FROM ` + ownerTable + ` WHERE %s RETURNING owner_id
), freed AS (
	DELETE FROM ` + lockTable + ` WHERE owner_id IN (SELECT owner_id FROM gone) RETURNING name
)
SELECT count(*) FROM (SELECT pg_notify('` + notifyChannel + `', encode(name, 'hex')) FROM freed) n`

	// $1 name, $2 owner_id, $3 token. It notifies the name only if a
	// waiter of another Store marked the holding (markWaitedSQL): a NOTIFY
	// costs the releasing transaction's commit a write to the notification
	// queue and wakes every listening session of the cluster, for nothing
	// when nobody waits.
	releaseSQL = `WITH d AS (
	DELETE FROM ` + lockTable + ` WHERE name = $1 AND owner_id = $2 AND token = $3 RETURNING name, waited
)
SELECT (SELECT count(*) FROM d),
	(SELECT count(*) FROM (SELECT pg_notify('` + notifyChannel + `', encode(name, 'hex')) FROM d WHERE waited) n)`

	// $1 name. A waiter that listens marks the holding it waits for before
	// it waits, so that its release notifies; no row means the name came
	// free meanwhile. The UPDATE and the release's DELETE take the row in
	// turn, so a release either came before (no row) or sees the mark.
	markWaitedSQL = `UPDATE ` + lockTable + ` SET waited = true WHERE name = $1`
)

var (
	// $1 name, $2 owner_id, $3 token, $4 lease µs. One round trip whether
	// the lock is free or not: it checks that our sentinel is alive (and
	// holds it against the reaper until commit) and that the lock epoch is
	// a lease old (no holder from before a crash or a promotion can still
	// believe it holds), inserts, bumps the name's fencing token with the
	// inserted row (0 when it did not, or found no floor row: sqlstore then
	// bumps it itself), and otherwise reports the holder's token and
	// whether the holder's lease has run out. The bump waits, as sqlstore's
	// own would, for a fenced write under the previous grant to commit.
	acquireSQL = `WITH me AS (
	SELECT owner_id FROM ` + ownerTable + `
	WHERE owner_id = $2 AND expires_at > clock_timestamp()
	FOR KEY SHARE
), open AS (
	SELECT 1 FROM ` + epochTable + `
	WHERE started_at <= clock_timestamp() - $4::bigint * interval '1 microsecond'
), ins AS (
	INSERT INTO ` + lockTable + ` (name, owner_id, token)
	SELECT $1, owner_id, $3 FROM me WHERE EXISTS (SELECT 1 FROM open)
	ON CONFLICT (name) DO NOTHING
	RETURNING token
), fence AS (
	` + fenceBump("$1", "ins") + `
)
SELECT (SELECT count(*) FROM me), (SELECT count(*) FROM open), (SELECT count(*) FROM ins),
	h.token, COALESCE(h.dead, false), COALESCE((SELECT token FROM fence), 0)
FROM (SELECT 1) AS one
LEFT JOIN (
	SELECT l.token, (o.expires_at IS NULL OR o.expires_at <= clock_timestamp()) AS dead
	FROM ` + lockTable + ` l LEFT JOIN ` + ownerTable + ` o ON o.owner_id = l.owner_id
	WHERE l.name = $1
) AS h ON true`

	evictOwnerSQL   = fmt.Sprintf(evictSQL, "owner_id = $1")
	evictExpiredSQL = fmt.Sprintf(evictSQL, "expires_at <= clock_timestamp()")
)
