package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/gomogile/gomogile/store"
)

// The portable paths: every operation in one transaction of the Store's
// pool, one statement a round trip. They run on any Dialect, and are what
// every fast path must match.

func (s *Store) commitPortable(ctx context.Context, c store.Commit, devs []int) (store.CommitResult, error) {
	var res store.CommitResult
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = s.commitTx(ctx, tx, c, devs)
		return err
	})
	return res, err
}

func (s *Store) changeFileOnPortable(ctx context.Context, fid int64, change stmt) (bool, error) {
	var changed bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockFid(ctx, tx, fid); err != nil {
			return err
		}
		n, err := s.execN(ctx, tx, change.query, change.args...)
		if err != nil {
			return err
		}
		changed = n > 0
		// Without a file row (the tempfile stage) this changes
		// nothing, so no probe tells it apart first.
		return s.syncDevCount(ctx, tx, fid)
	})
	return changed, err
}

// leasePortable: the locking read, one UPDATE moving the rows out of
// reach, COMMIT.
func (s *Store) leasePortable(ctx context.Context, q store.Queue, t queueTable, read string, lease time.Duration) ([]store.QueueItem, error) {
	var out []store.QueueItem
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = s.scanItems(ctx, tx, q, read)
		if err != nil || len(out) == 0 {
			return err
		}
		update, args := leaseUpdate(t, out, lease)
		_, err = s.exec(ctx, tx, update, args...)
		return err
	})
	return out, err
}
