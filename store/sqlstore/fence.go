package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/gomogile/gomogile/store"
)

// Fencing tokens, implemented once for every SQL backend.
//
// Each grant of a lock bumps the name's row of gomogile_fence in one
// autocommit statement, after the backend granted it (or in the statement
// that granted it: FencedLock), and the new value is the grant's token;
// the rows are durable, or volatile in epochs (Fencing.NewEpoch). A write
// made under store.WithFence reads each fence's row first in its own
// transaction with a locking read, and refuses with store.ErrFenced unless
// the row still holds the fence's token. A lock backend that keeps its
// tokens itself (FenceChecker) supplies that locking read and the token's.
// The share lock held until COMMIT orders the write against a later grant:
// that grant's bump waits for the write to commit, and its Lock call does
// not return before the bump, so the next holder's writes all come after.

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
			case f.NewEpoch == "" || round > 0:
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
	if s.d.Fencing().NewEpoch != "" && FenceEpochHalfUsed(token) {
		_ = s.newFenceEpoch(ctx)
	}
}

// newFenceEpoch runs Fencing.NewEpoch.
func (s *Store) newFenceEpoch(ctx context.Context) error {
	var floor int64
	err := s.db.QueryRowContext(ctx, s.d.Fencing().NewEpoch).Scan(&floor)
	if err == nil && floor <= 0 {
		err = fmt.Errorf("new fencing epoch: floor %d is not positive", floor)
	}
	if err != nil {
		return fmt.Errorf("new fencing epoch: %w", err)
	}
	return nil
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
// not empty, is sent ahead of the first fence's read in the same query (a
// Config.Batch connection's START TRANSACTION); multi says tx takes several
// statements in one query (a Config.Batch connection).
func (s *Store) checkFences(ctx context.Context, tx querier, begin string, multi bool) error {
	table := "gomogile_fence"
	if s.service != nil {
		table = "gomogile_lock_fence"
	}
	q := "SELECT token FROM " + table + " WHERE name = ?" + s.d.Fencing().ShareLock
	fc, own := s.locks.(FenceChecker)
	check := s.d.Fencing().Check
	for _, f := range store.Fences(ctx) {
		var token sql.NullInt64
		var err error
		if s.service != nil && check != "" {
			err = s.writeCheck(ctx, tx, begin+check, f)
			begin = ""
			if err != nil {
				return err
			}
			continue
		}
		if own {
			c := fc.FenceCheck(f.Name)
			if multi {
				err = s.queryRow(ctx, tx, begin+c.Lock+"; "+c.Read, append(slices.Clone(c.LockArgs), c.ReadArgs...)...).Scan(&token)
			} else if _, err = s.exec(ctx, tx, begin+c.Lock, c.LockArgs...); err == nil {
				err = s.queryRow(ctx, tx, c.Read, c.ReadArgs...).Scan(&token)
			}
		} else {
			err = s.queryRow(ctx, tx, begin+q, []byte(f.Name)).Scan(&token)
		}
		begin = ""
		if err == nil && !token.Valid {
			err = sql.ErrNoRows
		}
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// A token exists only once its row did: the row went (the
			// table was emptied), so nothing vouches for the grant.
			return fmt.Errorf("%w: lock %q has no token row (fence %d)", store.ErrFenced, f.Name, f.Token)
		case err != nil:
			return err
		case token.Int64 != f.Token:
			return fmt.Errorf("%w: lock %q is at grant %d, the write's fence is grant %d",
				store.ErrFenced, f.Name, token.Int64, f.Token)
		}
	}
	return nil
}

// writeCheck checks fence f with the dialect's Fencing.Check, which writes
// the fence row when it holds f's token; when it touched no row, it reads
// the row (unlocked: the write is refused either way) to say why.
func (s *Store) writeCheck(ctx context.Context, tx querier, q string, f store.Fence) error {
	res, err := s.exec(ctx, tx, q, []byte(f.Name), f.Token)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil || n == 1 {
		return err
	}
	var token int64
	err = s.queryRow(ctx, tx, "SELECT token FROM gomogile_lock_fence WHERE name = ?", []byte(f.Name)).Scan(&token)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: lock %q has no token row (fence %d)", store.ErrFenced, f.Name, f.Token)
	case err != nil:
		return err
	}
	return fmt.Errorf("%w: lock %q is at grant %d, the write's fence is grant %d",
		store.ErrFenced, f.Name, token, f.Token)
}
