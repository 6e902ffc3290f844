package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// fidInsert is CreateTempFile's FidInserter query, if the Dialect has one
// that can run here, and whether it runs on Config.Batch (batchScan) or
// on the Store's pool.
type fidInsert struct {
	query string
	batch bool
}

func (s *Store) newFidInsert() fidInsert {
	fi, ok := s.d.(FidInserter)
	if !ok {
		return fidInsert{}
	}
	q, batch := fi.InsertWithNextFid("tempfile", []string{"createtime", "classid", "dmid", "dkey", "devids"},
		[]string{s.d.UnixNow(), "?", "?", "?", "?"})
	if batch && s.batch == nil {
		return fidInsert{}
	}
	return fidInsert{q, batch}
}

// insertWithNextFid runs a FidInserter's query, fi: the fid counter's
// next fid and the tempfile row under it in one round trip (one
// autocommit statement, or a batch of them). A missing counter row is
// created, and a failure is handled as fidRetry says.
func (s *Store) insertWithNextFid(ctx context.Context, fi fidInsert, args ...any) (int64, error) {
	args = append([]any{fidCounter}, args...)
	for attempt := 0; ; attempt++ {
		var fid, n int64
		var err error
		if fi.batch {
			err = s.batchScan(ctx, fi.query, args, &fid, &n)
		} else {
			err = s.queryRow(ctx, s.db, fi.query, args...).Scan(&fid, &n)
		}
		switch {
		case err == nil && n == 1:
			if fid <= 0 {
				return 0, fmt.Errorf("fid counter gave %d", fid)
			}
			return fid, nil
		case err == nil || errors.Is(err, sql.ErrNoRows):
			// A new database, or its rows were emptied.
			if attempt == maxAttempts-1 {
				return 0, errors.New("fid counter row missing however often created")
			}
			if err := s.initFidCounter(ctx); err != nil {
				return 0, err
			}
		default:
			if err := s.fidRetry(ctx, err, true, attempt); err != nil {
				return 0, err
			}
		}
	}
}
