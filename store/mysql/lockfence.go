package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/store/sqlstore"
)

// Fencing tokens, the grant's side (the check is sqlstore's, with the SQL
// of Dialect.Fencing). A grant's token comes from a
// counter in the sentinel row of holderTable and is written into the
// grant's row, so a bump is no durable commit: the rows are MEMORY, like
// the GET_LOCKs they describe. Tokens still grow across the server
// restarts that empty the table through epochs: the sentinel is written
// only with a new epoch from fenceEpochTable (InnoDB), committed durably
// first, as its counter's start, epoch << sqlstore.FenceEpochShift.
//
// A fenced write must be ordered against the next grant, which MEMORY
// tables (table locks held for a statement, no transactions) cannot do,
// so the ordering comes from InnoDB rows that never change:
// fenceStripeTable holds fenceStripes rows, and a name maps to one of
// them. A grant writes its token with that row locked FOR UPDATE, in a
// transaction that changes no InnoDB row (so its COMMIT flushes nothing);
// a fenced write takes the same row LOCK IN SHARE MODE first in its own
// transaction (Fencing.Order) and only then reads the token. So the grant waits for a
// write under the old token to commit, or the write reads the new token
// and is refused. A name whose holding ended in a clean release has no
// row, and a write under its fence is refused too.
const (
	fenceStripeTable = "gomogile_fence_stripe"
	fenceEpochTable  = "gomogile_fence_epoch"
	fenceStripes     = 1024
)

// startFencing creates the fencing tables, and fenceStripeTable's rows
// where any are missing (Start).
func (b *lockBackend) startFencing(ctx context.Context) error {
	for _, ddl := range []string{
		"CREATE TABLE IF NOT EXISTS " + fenceEpochTable + " (\n\tid INT NOT NULL PRIMARY KEY,\n\tepoch BIGINT NOT NULL\n) ENGINE=InnoDB",
		"CREATE TABLE IF NOT EXISTS " + fenceStripeTable + " (\n\tid INT NOT NULL PRIMARY KEY\n) ENGINE=InnoDB",
	} {
		if _, err := b.admin.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("mysql: create the fencing tables: %w", err)
		}
	}
	var stripes int
	if err := b.admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+fenceStripeTable).Scan(&stripes); err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	if stripes < fenceStripes {
		if err := fillStripes(ctx, b.admin); err != nil {
			return fmt.Errorf("mysql: %w", err)
		}
	}
	return nil
}

// fillStripes writes fenceStripeTable's rows that are missing.
func fillStripes(ctx context.Context, ex interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}) error {
	var q strings.Builder
	q.WriteString("INSERT IGNORE INTO " + fenceStripeTable + " (id) VALUES ")
	for i := range fenceStripes {
		if i > 0 {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "(%d)", i)
	}
	if _, err := ex.ExecContext(ctx, q.String()); err != nil {
		return fmt.Errorf("fill %s: %w", fenceStripeTable, err)
	}
	return nil
}

// fenceStripe is the row of fenceStripeTable that orders key's grants and
// fenced writes.
func fenceStripe(key string) int {
	return int(crc32.ChecksumIEEE([]byte(key)) % fenceStripes)
}

// fenceEpoch is Fencing.NewEpoch: one more epoch in fenceEpochTable,
// durably, its floor (epoch << sqlstore.FenceEpochShift) written into the
// sentinel row of holderTable as its counter (or raising an existing
// sentinel's counter to it), and the counter read back. The statements
// share LAST_INSERT_ID, so they run on one session (sqlstore.NewFenceEpoch).
var fenceEpoch = []string{
	"INSERT INTO " + fenceEpochTable + " (id, epoch) VALUES (1, LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE epoch = LAST_INSERT_ID(epoch + 1)",
	"INSERT INTO " + holderTable + " (name, conn, token) VALUES ('', 0, LAST_INSERT_ID() << " + strconv.Itoa(sqlstore.FenceEpochShift) + ") ON DUPLICATE KEY UPDATE token = GREATEST(token, VALUES(token))",
	"SELECT token FROM " + holderTable + " WHERE name = ''",
}

// newFenceEpoch starts a new epoch on session c (a lock session, or one
// of the Store's pool).
func newFenceEpoch(ctx context.Context, c sqlstore.Session) error {
	_, err := sqlstore.NewFenceEpoch(ctx, c, sqlstore.Fencing{NewEpoch: fenceEpoch})
	return err
}

// errNoStripe: the grant found its fenceStripeTable row missing.
var errNoStripe = errors.New("fencing stripe row missing")

// errNoSentinel: the grant found holderTable's sentinel gone, between its
// look and its claim (a restart, or an operator).
var errNoSentinel = errors.New("lock holder table's sentinel row gone")

// claimStatements are a grant's claim of its row with its fencing token:
// the stripe row locked for update (where cond, a condition on session
// variables, holds), the counter moved, the row written, in one
// transaction that changes no InnoDB row; then the SELECT of the query's
// answer, whose columns the caller adds. Arguments: the stripe, the name,
// the session id.
func claimStatements(cond string) string {
	return "START TRANSACTION; " +
		"SELECT COUNT(*) FROM " + fenceStripeTable + " WHERE id = ?" + cond + " FOR UPDATE INTO @gomogile_stripe; " +
		"UPDATE " + holderTable + " SET token = LAST_INSERT_ID(token + 1) WHERE name = '' AND @gomogile_stripe = 1; " +
		"SET @gomogile_rows = ROW_COUNT(); " +
		"REPLACE INTO " + holderTable + " (name, conn, seen_free, token) SELECT ?, ?, NULL, LAST_INSERT_ID() FROM DUAL WHERE @gomogile_rows = 1; " +
		"COMMIT; " +
		"SELECT "
}

// claimQuery is claim's: it reports whether the stripe row and the
// sentinel were there, and the token.
var claimQuery = claimStatements("") + "@gomogile_stripe, @gomogile_rows, LAST_INSERT_ID()"

// claimRow runs claimQuery: it writes s's holderTable row of key with the
// grant's fencing token and returns the token.
func (s *session) claimRow(ctx context.Context, name, key string) (int64, error) {
	for attempt := 0; ; attempt++ {
		sent := time.Now()
		var stripe, rows, token int64
		if err := s.conn.QueryRowContext(ctx, claimQuery, fenceStripe(key), key, s.id).Scan(&stripe, &rows, &token); err != nil {
			return 0, err
		}
		s.lastOK = sent
		switch {
		case stripe != 1 && attempt == 0:
			// Emptied by an operator (or a test harness): put the rows
			// back and try again.
			if err := fillStripes(ctx, s.conn); err != nil {
				return 0, err
			}
			continue
		case stripe != 1:
			return 0, errNoStripe
		case rows != 1:
			return 0, errNoSentinel
		case token <= 0:
			return 0, fmt.Errorf("fencing token %d for %q is not positive", token, name)
		}
		return token, nil
	}
}

// Fencing: the grants of the database's own locks (GET_LOCK) keep their
// tokens in the lock holder table (holderTable, MEMORY: a grant writes no
// log), each written by the grant's claim (lockfence.go) with a token from
// the counter in its floor row; so there is no gomogile_fence table and no
// Bump. A MEMORY table's locks last a statement, so a fenced write is
// ordered against the next grant by an InnoDB row that never changes: the
// name's row of fenceStripeTable, which the write locks in share mode
// (Order) and the grant's claim for update. Epochs: the durable counter is
// fenceEpochTable (InnoDB), the floor the holder table's sentinel row.
//
// An outside lock service's fence, gomogile_lock_fence, is an InnoDB table
// (durable, and replicated by a Galera cluster): VARBINARY, so "A" and "a"
// are two names whatever the table's collation; LOCK IN SHARE MODE is
// understood by MariaDB and MySQL 8 alike. On a Galera node a fenced write
// checks it by adding one to the row's checks column where the row holds
// the fence's token (sqlstore.Fencing.Check): a share lock is the node's
// own, and Galera certifies what a transaction writes, not what it read,
// so only a write of the row makes the write and a raise through another
// node conflict (TestGalera_FenceCheckCertified). The column is there on
// every server; elsewhere nothing writes it.
func (d Dialect) Fencing() sqlstore.Fencing {
	var check string
	if d.galera {
		check = "UPDATE gomogile_lock_fence SET checks = checks + 1 WHERE name = ? AND token = ?"
	}
	database := d.database
	return sqlstore.Fencing{
		Table:     holderTable,
		Key:       func(name string) any { return serverLockName(database, name) },
		Order:     "SELECT COUNT(*) FROM " + fenceStripeTable + " WHERE id = CRC32(?) % " + strconv.Itoa(fenceStripes) + " LOCK IN SHARE MODE INTO @gomogile_stripe",
		ShareLock: " AND @gomogile_stripe = 1",
		NewEpoch:  fenceEpoch,
		ServiceSchema: "CREATE TABLE IF NOT EXISTS gomogile_lock_fence (\n" +
			"	name   VARBINARY(255) NOT NULL PRIMARY KEY,\n" +
			"	token  BIGINT NOT NULL,\n" +
			"	checks BIGINT NOT NULL DEFAULT 0\n" +
			") ENGINE=InnoDB",
		Raise: "INSERT INTO gomogile_lock_fence (name, token) VALUES (?, ?)\n" +
			"	ON DUPLICATE KEY UPDATE token = GREATEST(token, VALUES(token))",
		ServiceShareLock: " LOCK IN SHARE MODE",
		Check:            check,
	}
}
