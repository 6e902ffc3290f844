package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/gomogile/gomogile/store"
)

// Fencing tokens, implemented once for every SQL backend.
//
// Each grant of a lock bumps the name's row of gomogile_fence in one
// autocommit statement, after the backend granted it, and the new value is
// the grant's token. A write made under store.WithFence reads each fence's
// row first in its own transaction with a locking read, and refuses with
// store.ErrFenced unless the row still holds the fence's token. The share
// lock held until COMMIT orders the write against a later grant: that
// grant's bump waits for the write to commit, and its Lock call does not
// return before the bump, so the next holder's writes all come after.

// bumpFence gives name its next token, on the pool. Names go to the
// database as bytes (a lock name may hold a NUL, which PostgreSQL text
// cannot).
func (s *Store) bumpFence(ctx context.Context, name string) (int64, error) {
	f := s.d.Fencing()
	q := s.d.Rebind(f.Bump)
	var token int64
	err := s.read(ctx, func() error {
		if f.BumpByInsertID {
			res, err := s.db.ExecContext(ctx, q, []byte(name))
			if err != nil {
				return err
			}
			token, err = res.LastInsertId()
			return err
		}
		return s.db.QueryRowContext(ctx, q, []byte(name)).Scan(&token)
	})
	if err == nil && token <= 0 {
		err = fmt.Errorf("fencing token %d for %q is not positive", token, name)
	}
	return token, err
}

// checkFences refuses the transaction tx when a fence of ctx is stale. It
// runs first in every write's transaction; reads never call it.
func (s *Store) checkFences(ctx context.Context, tx *sql.Tx) error {
	fs := store.Fences(ctx)
	if len(fs) == 0 {
		return nil
	}
	q := "SELECT token FROM gomogile_fence WHERE name = ?" + s.d.Fencing().ShareLock
	for _, f := range fs {
		var token int64
		err := s.queryRow(ctx, tx, q, []byte(f.Name)).Scan(&token)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// A token exists only once its row did: the row went (the
			// table was emptied), so nothing vouches for the grant.
			return fmt.Errorf("%w: lock %q has no token row (fence %d)", store.ErrFenced, f.Name, f.Token)
		case err != nil:
			return err
		case token != f.Token:
			return fmt.Errorf("%w: lock %q is at grant %d, the write's fence is grant %d",
				store.ErrFenced, f.Name, token, f.Token)
		}
	}
	return nil
}
