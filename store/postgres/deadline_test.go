package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
)

// deadlineSlack is how late past op_timeout a hung call may return: the
// driver has to notice the deadline and tear the statement down.
const deadlineSlack = 2 * time.Second

// A call whose context has no deadline still ends by the DSN's op_timeout
// when the server does not answer: here the file table is held in ACCESS
// EXCLUSIVE mode by another session, so every statement on it waits.
func TestOpTimeoutBoundsHungCalls(t *testing.T) {
	ctx := t.Context()
	base := testdb.Postgres(t)
	const op = time.Second
	s, err := store.Open(ctx, withParams(base, "op_timeout="+op.String()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := s.CreateDomain(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: "k"}); err != nil {
		t.Fatal(err)
	}

	conn, err := adminConn(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "LOCK TABLE file IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	expectBounded(t, op, map[string]func(context.Context) error{
		"File": func(ctx context.Context) error { _, err := s.File(ctx, fid); return err },
		"FileByKey": func(ctx context.Context) error {
			_, err := s.FileByKey(ctx, d.ID, "k")
			return err
		},
		"SetFileClass": func(ctx context.Context) error { return s.SetFileClass(ctx, fid, 0) },
		"DeleteFile":   func(ctx context.Context) error { return s.DeleteFile(ctx, fid) },
	})
}

// expectBounded runs each call with a context without deadline and checks
// it fails with context.DeadlineExceeded within op plus slack. A call that
// is still blocked then fails the test (and is left to the cleanup that
// frees the table).
func expectBounded(t *testing.T, op time.Duration, calls map[string]func(context.Context) error) {
	t.Helper()
	for name, call := range calls {
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- call(context.Background()) }()
		select {
		case err := <-done:
			took := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s on a blocked table = %v after %v; want context.DeadlineExceeded", name, err, took)
			}
			if took < op-50*time.Millisecond || took > op+deadlineSlack {
				t.Errorf("%s on a blocked table returned after %v; want about op_timeout %v", name, took, op)
			}
		case <-time.After(op + deadlineSlack):
			t.Errorf("%s on a blocked table still blocked after %v; want it to end by op_timeout %v", name, time.Since(start), op)
			return
		}
	}
}
