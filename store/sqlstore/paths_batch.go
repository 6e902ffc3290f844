package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/gomogile/gomogile/store"
)

// The paths on a Config.Batch connection, whose queries may hold several
// statements (batch.go): a transaction in two round trips where the
// portable path takes four or more.

// commitChained is one commit in a transaction of two queries on a
// Config.Batch connection (batchTx) where the commit is the common one, a
// new key with only its own devices: START TRANSACTION, the DELETE of the
// tempfile and the INSERT of the file (RowChainer) in the first; the rest
// of commitRest's statements and COMMIT in the second. Any other commit
// goes on in that transaction a statement at a time.
func (s *Store) commitChained(ctx context.Context, rc RowChainer, c store.Commit, devs []int) (store.CommitResult, error) {
	var res store.CommitResult
	err := s.batchTx(ctx, func(conn *sql.Conn, begin string) ([]stmt, error) {
		var ins stmt
		q := rc.IfOneRow(begin+"DELETE FROM tempfile WHERE fid = ?", func(cond string) string {
			ins = s.commitInsert(c, devs, cond)
			return ins.query
		})
		var won, n int64
		if err := s.queryRow(ctx, conn, q, append([]any{c.Fid}, ins.args...)...).Scan(&won, &n); err != nil {
			return nil, err
		}
		var tail []stmt
		var err error
		res, tail, err = s.commitRest(ctx, conn, c, devs, won, n)
		return tail, err
	})
	return res, err
}

// changeFileOnChained: the fid's locks and the change in one query, the
// devcount with the COMMIT in the next.
func (s *Store) changeFileOnChained(ctx context.Context, rc RowChainer, fid int64, change stmt) (bool, error) {
	var changed bool
	err := s.batchTx(ctx, func(conn *sql.Conn, begin string) ([]stmt, error) {
		q := joinStmts(append(lockFidStmts(fid), stmt{rc.Counted(change.query), change.args}), "")
		var n int64
		if err := s.queryRow(ctx, conn, begin+q.query, q.args...).Scan(&n); err != nil {
			return nil, err
		}
		changed = n > 0
		return []stmt{s.syncDevCountStmt(fid)}, nil
	})
	return changed, err
}

// leaseBatch: START TRANSACTION and the locking read in one query, the
// UPDATE and COMMIT in the next (COMMIT alone when nothing is due). A COMMIT
// gone through unseen leaves rows out of reach that come back when their
// lease runs out, as a crashed leaser's do.
func (s *Store) leaseBatch(ctx context.Context, q store.Queue, t queueTable, read string, lease time.Duration) ([]store.QueueItem, error) {
	var out []store.QueueItem
	err := s.batchTx(ctx, func(conn *sql.Conn, begin string) ([]stmt, error) {
		var err error
		out, err = s.scanItems(ctx, conn, q, begin+read)
		if err != nil || len(out) == 0 {
			return nil, err
		}
		update, args := leaseUpdate(t, out, lease)
		return []stmt{{update, args}}, nil
	})
	return out, err
}
