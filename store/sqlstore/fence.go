package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/gomogile/gomogile/store"
)

// Fencing tokens, implemented once for every SQL backend.
//
// A grant's token comes from one of three sources: the shared layer bumps
// the name's row of gomogile_fence in one autocommit statement after the
// backend granted it (Fencing.Bump); the lock backend bumps it in the
// statement that granted it (the grant's Token: PostgreSQL's acquire,
// MySQL's claim after GET_LOCK); or an outside lock service issues it and the
// Store raises gomogile_lock_fence's row to it (raiseFence). The rows are
// durable, or volatile in epochs (Fencing.NewEpoch, NewFenceEpoch). A
// write made under store.WithFence checks each fence first in its own
// transaction (checkFences), one way for every source: it reads the row,
// behind a lock that a later grant's bump or raise cannot pass until the
// write commits (Fencing.Order, ShareLock), and refuses with
// store.ErrFenced unless the row still holds the fence's token. That grant
// waits for the write to commit, and its Lock call does not return before
// its token is in, so the next holder's writes all come after.

// bumpFence gives name its next token, on the pool. Names go to the
// database as bytes (a lock name may hold a NUL, which PostgreSQL text
// cannot). With volatile rows (Fencing.NewEpoch) a bump that finds no
// floor row starts a new epoch first, and a token in the upper half of its
// epoch's range starts one for the bumps after it.
func (s *Store) bumpFence(ctx context.Context, name string) (int64, error) {
	f := s.d.Fencing()
	var token int64
	err := s.read(ctx, func() error {
		for round := 0; ; round++ {
			var ok bool
			var err error
			token, ok, err = s.bump(ctx, f.Bump, f.BumpByInsertID, []byte(name))
			switch {
			case err != nil:
				return err
			case ok:
				s.renewFenceEpoch(ctx, token)
				return nil
			case len(f.NewEpoch) == 0 || round > 0:
				return fmt.Errorf("fencing bump for %q returned nothing", name)
			}
			// The floor row is gone: crash recovery, a promotion or an
			// operator emptied the table.
			if err := s.newFenceEpoch(ctx); err != nil {
				return err
			}
		}
	})
	if err == nil && token <= 0 {
		err = fmt.Errorf("fencing token %d for %q is not positive", token, name)
	}
	return token, err
}

// FenceEpochHalfUsed reports whether token lies in the upper half of its
// epoch's range (FenceEpochShift): whoever handed it out then starts a new
// epoch, so that the next tokens start from a fresh one. The token itself
// is still above every earlier one, and a failure to start the epoch
// leaves the next grant to try again, half a range from running out.
func FenceEpochHalfUsed(token int64) bool {
	return token&(1<<FenceEpochShift-1) >= 1<<(FenceEpochShift-1)
}

// renewFenceEpoch starts a new epoch once token is FenceEpochHalfUsed.
func (s *Store) renewFenceEpoch(ctx context.Context, token int64) {
	if len(s.d.Fencing().NewEpoch) > 0 && FenceEpochHalfUsed(token) {
		_ = s.newFenceEpoch(ctx)
	}
}

// newFenceEpoch starts a new epoch on a session of the pool.
func (s *Store) newFenceEpoch(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("new fencing epoch: %w", err)
	}
	defer conn.Close()
	_, err = NewFenceEpoch(ctx, conn, s.d.Fencing())
	return err
}

// Session is one database session: a *sql.Conn, or a lock backend's own.
type Session interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// NewFenceEpoch starts a new fencing epoch on session c: f.NewEpoch's
// statements in order, the last returning the new floor, which it returns.
// The shared layer runs it when a bump finds no floor row and once a token
// is FenceEpochHalfUsed; a lock backend whose grants bump the token
// themselves runs it, on its own session, where its bump
// found no floor row.
func NewFenceEpoch(ctx context.Context, c Session, f Fencing) (int64, error) {
	if len(f.NewEpoch) == 0 {
		return 0, errors.New("new fencing epoch: the dialect's tokens have no epochs")
	}
	var floor int64
	var err error
	last := len(f.NewEpoch) - 1
	for _, q := range f.NewEpoch[:last] {
		if _, err = c.ExecContext(ctx, q); err != nil {
			return 0, fmt.Errorf("new fencing epoch: %w", err)
		}
	}
	err = c.QueryRowContext(ctx, f.NewEpoch[last]).Scan(&floor)
	if err == nil && floor <= 0 {
		err = fmt.Errorf("floor %d is not positive", floor)
	}
	if err != nil {
		return 0, fmt.Errorf("new fencing epoch: %w", err)
	}
	return floor, nil
}

// bump runs one autocommit statement that yields a new counter value, as
// its result row or, byInsertID, as its LastInsertId (MySQL's
// LAST_INSERT_ID(expr)). ok is false when it touched no row.
func (s *Store) bump(ctx context.Context, query string, byInsertID bool, args ...any) (v int64, ok bool, err error) {
	q := s.d.Rebind(query)
	if byInsertID {
		res, err := s.db.ExecContext(ctx, q, args...)
		if err != nil {
			return 0, false, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return 0, false, err
		}
		v, err = res.LastInsertId()
		return v, err == nil, err
	}
	err = s.db.QueryRowContext(ctx, q, args...).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return v, err == nil, err
}

// checkFences refuses the transaction tx when a fence of ctx is stale. It
// runs first in every write's transaction; reads never call it. begin, if
// not empty, is sent ahead of the first fence's check in the same query (a
// Config.Batch connection's START TRANSACTION); multi says tx takes several
// statements in one query (a Config.Batch connection).
func (s *Store) checkFences(ctx context.Context, tx querier, begin string, multi bool) error {
	f := s.d.Fencing()
	for _, fence := range store.Fences(ctx) {
		order, read, name := f.OwnCheck(fence.Name)
		if s.outside {
			order, read, name = "", "SELECT token FROM gomogile_lock_fence WHERE name = ?"+f.ServiceShareLock, []byte(fence.Name)
		}
		var token sql.NullInt64
		var err error
		switch {
		case s.outside && f.Check != "":
			var ok bool
			if ok, err = s.writeCheck(ctx, tx, begin+f.Check, fence); ok {
				begin = ""
				continue
			}
			if err == nil {
				// Refused: read the row (unlocked: the write is refused
				// either way) to say why.
				err = s.queryRow(ctx, tx, read, name).Scan(&token)
			}
		case order != "" && multi:
			err = s.queryRow(ctx, tx, begin+order+"; "+read, name, name).Scan(&token)
		case order != "":
			if _, err = s.exec(ctx, tx, begin+order, name); err == nil {
				err = s.queryRow(ctx, tx, read, name).Scan(&token)
			}
		default:
			err = s.queryRow(ctx, tx, begin+read, name).Scan(&token)
		}
		begin = ""
		if err == nil && !token.Valid {
			err = sql.ErrNoRows
		}
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// A token exists only once its row did: the row went (the
			// table was emptied), so nothing vouches for the grant.
			return fmt.Errorf("%w: lock %q has no token row (fence %d)", store.ErrFenced, fence.Name, fence.Token)
		case err != nil:
			return err
		case token.Int64 != fence.Token:
			return fmt.Errorf("%w: lock %q is at grant %d, the write's fence is grant %d",
				store.ErrFenced, fence.Name, token.Int64, fence.Token)
		}
	}
	return nil
}

// OwnCheck is how a fenced write checks its fence of a lock name granted
// by the database's own locks: order, when not "", then read, which
// returns the token of the name's newest grant; each takes key as its
// only argument.
func (f Fencing) OwnCheck(name string) (order, read string, key any) {
	key = []byte(name)
	if f.Key != nil {
		key = f.Key(name)
	}
	return f.Order, "SELECT token FROM " + cmp.Or(f.Table, "gomogile_fence") + " WHERE name = ?" + f.ShareLock, key
}

// writeCheck checks fence f with the dialect's Fencing.Check, which writes
// the fence row when it holds f's token: ok says it did.
func (s *Store) writeCheck(ctx context.Context, tx querier, q string, f store.Fence) (ok bool, err error) {
	res, err := s.exec(ctx, tx, q, []byte(f.Name), f.Token)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return err == nil && n == 1, err
}
