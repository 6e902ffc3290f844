package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/gomogile/gomogile/store"
)

// An outside lock service (store.DSN.Locks, the tracker's lock_dsn) in the
// place of the backend's own locks: the service grants and issues tokens,
// and the Store raises the name's row of the durable gomogile_lock_fence
// to each grant's token before Lock returns (raiseFence); a fenced write
// checks that row as it checks gomogile_fence (checkFences). A grant the
// service made before a newer one was raised can never raise the row back,
// so its writes are refused whenever they come. The service is a
// store.LockService as the database's own mechanism is: the Store uses
// either the same way (locks.go), and only fences differently.

// ownLocks is what gomogile_meta's lock_service row holds for a database
// whose Stores keep their locks in the database itself.
const ownLocks = "database"

// lockServiceKey is gomogile_meta's row naming where the database's
// trackers keep their locks.
const lockServiceKey = "lock_service"

// openLockService opens the outside lock service d, after claiming the
// database for it (claimLockService).
func (s *Store) openLockService(ctx context.Context, d *store.DSN) error {
	if err := s.claimLockService(ctx, lockServiceID(d)); err != nil {
		return err
	}
	ls, err := store.OpenLockService(ctx, d)
	if err != nil {
		return err
	}
	s.locks, s.outside = ls, true
	s.caps.LockMechanism = "service"
	s.caps.LockService = d.Driver
	s.caps.DeadOwnerBound = ls.DeadOwnerBound()
	return nil
}

// lockServiceID names a lock service's namespace for gomogile_meta: its
// scheme and prefix, not its endpoints (trackers may list a cluster's
// members differently).
func lockServiceID(d *store.DSN) string {
	p := d.Path
	if p == "" {
		p = "/"
	}
	return d.Driver + "://" + p
}

// claimLockService records in gomogile_meta where this database's trackers
// keep their locks, when nothing is recorded yet, and refuses (with
// store.ErrLockServiceMismatch) a Store whose locks would live elsewhere: two
// trackers locking in two places would both be granted every name.
func (s *Store) claimLockService(ctx context.Context, id string) error {
	var have string
	err := s.read(ctx, func() error {
		err := s.queryRow(ctx, s.db, "SELECT value FROM gomogile_meta WHERE name = ?", lockServiceKey).Scan(&have)
		if errors.Is(err, sql.ErrNoRows) {
			_, err = s.exec(ctx, s.db, "INSERT INTO gomogile_meta (name, value) VALUES (?, ?)", lockServiceKey, id)
			if err != nil && s.d.Classify(err) == ErrKindDuplicate {
				err = s.queryRow(ctx, s.db, "SELECT value FROM gomogile_meta WHERE name = ?", lockServiceKey).Scan(&have)
			} else if err == nil {
				have = id
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("record the lock service: %w", s.wrap(err))
	}
	if have != id {
		return fmt.Errorf("%w: locks of this database live in %q (gomogile_meta row %s), this Store's in %q; "+
			"trackers on one database must share one lock service: to move them, stop every tracker, then "+
			"DELETE FROM gomogile_meta WHERE name = 'lock_service'",
			store.ErrLockServiceMismatch, have, lockServiceKey, id)
	}
	return nil
}

// raiseFence raises name's row of gomogile_lock_fence to token, durably.
func (s *Store) raiseFence(ctx context.Context, name string, token int64) error {
	return s.read(ctx, func() error {
		_, err := s.exec(ctx, s.db, s.d.Fencing().Raise, []byte(name), token)
		return err
	})
}
