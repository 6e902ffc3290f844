package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"

	"github.com/gomogile/gomogile/store"
)

// stmt is one statement and its arguments: what a transaction's step
// sends, built apart from sending it so that where the database allows it
// (Config.Batch) several go in one query.
type stmt struct {
	query string
	args  []any
}

// run executes st on q.
func (s *Store) run(ctx context.Context, q querier, st stmt) error {
	_, err := s.exec(ctx, q, st.query, st.args...)
	return err
}

// joinStmts is sts as one query of several statements, then last if not
// empty.
func joinStmts(sts []stmt, last string) stmt {
	var q strings.Builder
	var args []any
	for i, st := range sts {
		if i > 0 {
			q.WriteString("; ")
		}
		q.WriteString(st.query)
		args = append(args, st.args...)
	}
	if last != "" {
		if len(sts) > 0 {
			q.WriteString("; ")
		}
		q.WriteString(last)
	}
	return stmt{q.String(), args}
}

// runAll executes sts on q one after the other.
func (s *Store) runAll(ctx context.Context, q querier, sts []stmt) error {
	for _, st := range sts {
		if err := s.run(ctx, q, st); err != nil {
			return err
		}
	}
	return nil
}

// batchTx is tx on a connection of Config.Batch, for a transaction of few
// queries of several statements each: fn's first query begins with begin
// ("START TRANSACTION; ", or nothing when the runner's check of ctx's
// fences has already started the transaction), and the statements fn
// returns, which need no answer, go with the COMMIT in one last query.
// It retries and reports outcomes as tx does: a conflict, or a connection
// lost before that last query, runs fn again; a connection or context
// lost during it is store.ErrUnknownOutcome. fn must not keep state
// across attempts except through its return.
func (s *Store) batchTx(ctx context.Context, fn func(conn *sql.Conn, begin string) ([]stmt, error)) error {
	return s.attempts(ctx, func() (bool, error) { return s.batchTry(ctx, fn) })
}

// batchTry is one attempt of batchTx; a failed one closes its connection
// (batchConn).
func (s *Store) batchTry(ctx context.Context, fn func(conn *sql.Conn, begin string) ([]stmt, error)) (retry bool, err error) {
	conn, release, err := s.batchConn(ctx)
	if err != nil {
		return s.retryable(err), err
	}
	defer func() { release(err) }()
	begin := "START TRANSACTION; "
	if len(store.Fences(ctx)) > 0 {
		if err := s.checkFences(ctx, conn, begin, true); err != nil {
			return s.retryable(err), err
		}
		begin = ""
	}
	tail, err := fn(conn, begin)
	if err != nil {
		return s.retryable(err), txDone(ctx, err)
	}
	if err := s.run(ctx, conn, joinStmts(tail, "COMMIT")); err != nil {
		return s.commitFailed(err)
	}
	return false, nil
}

// batchScan runs query, one query of several statements that may hold a
// whole transaction, on a connection of Config.Batch and scans its one
// result row (the first result set's) into dest; the errors of the
// statements after it, a COMMIT's included, are its own.
func (s *Store) batchScan(ctx context.Context, query string, args []any, dest ...any) (err error) {
	conn, release, err := s.batchConn(ctx)
	if err != nil {
		return err
	}
	defer func() { release(err) }()
	return s.queryRow(ctx, conn, query, args...).Scan(dest...)
}

// batchConn takes a connection of Config.Batch for one transaction.
// release(err) gives it back; after an error it closes it instead, never
// pooled, and with it ends any transaction a failed query left open:
// rolled back, or, had a COMMIT gone through unseen, committed (the
// unknown outcome). No ROLLBACK is sent, so a failure costs no round trip
// more.
func (s *Store) batchConn(ctx context.Context) (*sql.Conn, func(error), error) {
	conn, err := s.batch.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	return conn, func(err error) {
		if err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}, nil
}
