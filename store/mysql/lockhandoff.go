package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/gomogile/gomogile/store/sqlstore"
)

// holderTable records which session holds each lock, so a grant can tell a
// handoff after a clean release from one after a session that ended
// underneath its holder: killed by an operator, or lost with a server
// crash, while its holder was cut off (a partition) and so could not yet
// know. A session lock is freed by the server the moment its session
// ends, but the holder hears of it only at its watcher's next answer or
// ping timeout; after such an end the next grant waits out handoffGrace
// (from when the stale row was first seen, on the server's clock) before
// it returns, so the old holder's Lost has fired before the new holder
// runs. Release deletes the row before RELEASE_LOCK. The table is MEMORY:
// a server restart empties it, which is exactly when every earlier holding
// ended underneath its holder. A sentinel row (an empty name) says the rows
// are complete: it is written when the table is first created, and again
// by the first grant made handoffGrace or more after a server start; while
// it is missing, a grant whose name has no row waits until handoffGrace
// after the server's start. Writes to it are never durable commits.
//
// The table also keeps the fencing tokens (see fenceStripeTable): a row's
// token is its grant's, and the sentinel's token is the counter every
// grant takes its token from.
const holderTable = "gomogile_lock_holder"

const holderTableDDL = "CREATE TABLE IF NOT EXISTS " + holderTable + ` (
	name      VARBINARY(64) NOT NULL PRIMARY KEY,
	conn      BIGINT UNSIGNED NOT NULL,
	seen_free DOUBLE NULL,
	token     BIGINT NOT NULL DEFAULT 0
) ENGINE=MEMORY`

// newFenceEpoch starts a new fencing epoch on a session of the pool.
func (b *lockBackend) newFenceEpoch(ctx context.Context) error {
	c, err := b.admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return newFenceEpoch(ctx, c)
}

// startHolders creates holderTable, and sweeps it (sweepHolders) where it
// was there already. A holder table made here and now has lost no rows,
// so it gets its sentinel at once. A holder table an older gomogile made
// gets its token column, and a sentinel from before epochs a first epoch:
// its tokens were in gomogile_fence, all far below the first floor.
func (b *lockBackend) startHolders(ctx context.Context) error {
	var n, cols int
	if err := b.admin.QueryRowContext(ctx, "SELECT COUNT(*), (SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'token') FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", holderTable, holderTable).Scan(&n, &cols); err != nil {
		return fmt.Errorf("mysql: look for %s: %w", holderTable, err)
	}
	if n == 0 {
		if _, err := b.admin.ExecContext(ctx, holderTableDDL); err != nil {
			return fmt.Errorf("mysql: create %s: %w", holderTable, err)
		}
		if err := b.newFenceEpoch(ctx); err != nil {
			return fmt.Errorf("mysql: %w", err)
		}
		return nil
	}
	if cols == 0 {
		_, err := b.admin.ExecContext(ctx, "ALTER TABLE "+holderTable+" ADD COLUMN token BIGINT NOT NULL DEFAULT 0")
		if err != nil && mysqlErrno(err) != erDupFieldName {
			return fmt.Errorf("mysql: add %s.token: %w", holderTable, err)
		}
	}
	var old int
	if err := b.admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+holderTable+" WHERE name = '' AND token < ?", int64(1)<<sqlstore.FenceEpochShift).Scan(&old); err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	if old > 0 {
		if err := b.newFenceEpoch(ctx); err != nil {
			return fmt.Errorf("mysql: %w", err)
		}
	}
	return b.sweepHolders(ctx)
}

// sweepHolders keeps holderTable (a MEMORY table, bounded by the server's
// max_heap_table_size) from filling up with the rows of dead holdings
// whose names are never locked again: a row whose session is gone from the
// server is stamped as first seen free now, and a row seen free more than
// a minute ago (its grace long over) is deleted. Each Store's Start runs
// it; a failure only leaves the rows for the next one.
func (b *lockBackend) sweepHolders(ctx context.Context) error {
	_, err := b.admin.ExecContext(ctx, "UPDATE "+holderTable+" SET seen_free = UNIX_TIMESTAMP(NOW(6)) WHERE seen_free IS NULL AND name <> '' AND conn NOT IN (SELECT ID FROM information_schema.PROCESSLIST)")
	if err == nil {
		_, err = b.admin.ExecContext(ctx, "DELETE FROM "+holderTable+" WHERE name <> '' AND seen_free < UNIX_TIMESTAMP(NOW(6)) - 60")
	}
	if err != nil {
		return fmt.Errorf("mysql: sweep %s: %w", holderTable, err)
	}
	return nil
}

// holderLook is what a grant reads of holderTable right after GET_LOCK
// granted it, in the same query (getLock): the row of key, if any, the
// server's clock, and whether the sentinel row is there.
type holderLook struct {
	conn     sql.NullInt64
	seenFree sql.NullFloat64
	now      float64
	complete bool
}

// holderLookFrom reads what claim needs of holderTable (a holderLook):
// the row of the name (the argument), if any, the server's clock, and
// whether the sentinel is there.
const holderLookFrom = "h.conn, h.seen_free, UNIX_TIMESTAMP(NOW(6)), EXISTS (SELECT 1 FROM " + holderTable + " WHERE name = '') " +
	"FROM (SELECT 1) AS one LEFT JOIN " + holderTable + " AS h ON h.name = ?"

// errLockNull is GET_LOCK's NULL: the session was killed mid-wait, or the
// server ran out of memory.
var errLockNull = errors.New("GET_LOCK returned NULL (session killed?)")

// getLockQuery runs one GET_LOCK and, in the same query after it, the
// holder look: after the grant, so that no holding whose row was written
// before it goes unseen.
const getLockQuery = "SELECT GET_LOCK(?, ?) INTO @gomogile_got; SELECT @gomogile_got, " + holderLookFrom

// getLockClaimQuery is getLockQuery and, where the look finds the name
// released cleanly (or never held) and the sentinel there, claim's
// statements, all in one round trip: the usual grant, which claim would
// make at once without waiting for anything. The look goes into session
// variables before the claim writes its row, so the answer is what
// getLockQuery's would have been, followed by claimQuery's. Where the
// look is anything else, or GET_LOCK did not grant, the stripe's condition
// is false before any row is read (MySQL and MariaDB fold a session
// variable's comparison to a constant: "Impossible WHERE"), so a refused
// try takes no row lock and waits for no fenced write; the writes are then
// no-ops, and the caller carries on as after getLockQuery.
var getLockClaimQuery = "SELECT GET_LOCK(?, ?) INTO @gomogile_got; " +
	"SELECT " + holderLookFrom + " INTO @gomogile_conn, @gomogile_seen, @gomogile_now, @gomogile_complete; " +
	claimStatements(" AND @gomogile_got = 1 AND @gomogile_conn IS NULL AND @gomogile_complete = 1") +
	"@gomogile_got, @gomogile_conn, @gomogile_seen, @gomogile_now, @gomogile_complete, @gomogile_stripe, @gomogile_rows, LAST_INSERT_ID()"

// getLock runs getLockQuery, or with withClaim getLockClaimQuery; fence is
// the grant's fencing token where the latter made the claim, else 0.
func (s *session) getLock(ctx context.Context, key string, secs int64, withClaim bool) (got bool, look holderLook, fence int64, err error) {
	var g sql.NullInt64
	if withClaim {
		var stripe, rows, token sql.NullInt64
		sent := time.Now()
		err = s.conn.QueryRowContext(ctx, getLockClaimQuery, key, secs, key, fenceStripe(key), key, s.id).
			Scan(&g, &look.conn, &look.seenFree, &look.now, &look.complete, &stripe, &rows, &token)
		if err == nil && g.Valid && g.Int64 == 1 && stripe.Int64 == 1 && rows.Int64 == 1 && token.Int64 > 0 {
			s.lastOK = sent
			fence = token.Int64
		}
	} else {
		err = s.conn.QueryRowContext(ctx, getLockQuery, key, secs, key).
			Scan(&g, &look.conn, &look.seenFree, &look.now, &look.complete)
	}
	switch {
	case err != nil:
		return false, look, 0, err
	case !g.Valid:
		return false, look, 0, errLockNull
	}
	return g.Int64 == 1, look, fence, nil
}

// errGraceTimeout: the caller's deadline came before handoffGrace ran out.
var errGraceTimeout = errors.New("deadline within the handoff grace")

// claim makes a fresh grant of key on s this session's in holderTable,
// first waiting out handoffGrace when the last holding ended without a
// clean release (its row is still there) or the server started less than
// handoffGrace ago (its rows are gone). It gives up with errGraceTimeout
// at the caller's deadline, having waited until then, so a lock call never
// fails before its timeout. look is what getLock read after the grant.
// Where the sentinel is missing it writes it, with a new fencing epoch,
// handoffGrace or more after the server's start. The row goes in with the
// grant's fencing token (claimQuery), which claim returns.
func (b *lockBackend) claim(ctx context.Context, s *session, name, key string, deadline time.Time, look holderLook) (int64, error) {
	wait, err := s.graceFor(ctx, key, look)
	if err != nil {
		return 0, err
	}
	if err := waitGrace(ctx, wait, deadline); err != nil {
		return 0, err
	}
	if !look.complete {
		if err := newFenceEpoch(ctx, s.conn); err != nil {
			return 0, err
		}
	}
	return s.claimRow(ctx, name, key)
}

// graceFor is how long a grant of key on s must still wait, from what
// getLock's look found (see claim). Where the look is the first to find
// the row of a holding that ended underneath its holder, it stamps the row
// as seen free now, so that later grants wait from the same instant.
func (s *session) graceFor(ctx context.Context, key string, look holderLook) (time.Duration, error) {
	conn, seenFree, now := look.conn, look.seenFree, look.now
	var wait time.Duration
	switch {
	case !conn.Valid && look.complete:
		// Released cleanly, or never held.
	case !conn.Valid:
		// The server restarted: any holding may have ended with it.
		wait = time.Until(s.boot.Add(handoffGrace))
	case uint64(conn.Int64) == s.id:
		// This very session's own earlier holding: nothing to wait for.
	case seenFree.Valid:
		wait = time.Duration((seenFree.Float64-now)*float64(time.Second)) + handoffGrace
	default:
		if _, err := s.conn.ExecContext(ctx, "UPDATE "+holderTable+" SET seen_free = ? WHERE name = ? AND conn = ? AND seen_free IS NULL", now, key, conn.Int64); err != nil {
			return 0, err
		}
		wait = handoffGrace
	}
	if !look.complete {
		wait = max(wait, time.Until(s.boot.Add(handoffGrace)))
	}
	return wait, nil
}

// waitGrace waits wait; where deadline comes first it waits until then
// and fails with errGraceTimeout.
func waitGrace(ctx context.Context, wait time.Duration, deadline time.Time) error {
	if wait <= 0 {
		return nil
	}
	left := time.Until(deadline)
	t := time.NewTimer(min(wait, max(left, 0)))
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
	if wait > left {
		return errGraceTimeout
	}
	return nil
}

// releaseUnclaimed gives back a grant claim refused at the caller's
// deadline (its row left as it was, for the next grant to go on waiting
// from), off the caller's path so that Lock returns on time; Close waits
// for it (b.wg).
func (b *lockBackend) releaseUnclaimed(s *session, key string) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		var r sql.NullInt64
		_, err := s.conn.ExecContext(ctx, "DELETE FROM "+holderTable+" WHERE name = ? AND conn = ?", key, s.id)
		if err == nil {
			err = s.conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", key).Scan(&r)
		}
		if err != nil || !r.Valid || r.Int64 != 1 {
			b.forgetHolder(key, s.id)
			b.discard(s, key)
			return
		}
		b.release(s)
	}()
}

// forgetHolderLater is forgetHolder off the caller's path (a Lock that
// failed must return by its deadline); Close waits for it (b.wg).
func (b *lockBackend) forgetHolderLater(key string, id uint64) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.forgetHolder(key, id)
	}()
}

// forgetHolder deletes, from the Store's pool, the holderTable row of a
// holding whose Lost has fired: its holder knows, so the next grant need
// not wait for it to learn. Best effort: a row left behind costs the next
// grant handoffGrace, nothing more.
func (b *lockBackend) forgetHolder(key string, id uint64) {
	if b.admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	_, _ = b.admin.ExecContext(ctx, "DELETE FROM "+holderTable+" WHERE name = ? AND conn = ?", key, id)
}
