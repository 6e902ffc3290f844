package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// A transaction whose context ends before it commits was rolled back by
// database/sql, and a statement on it then fails with sql.ErrTxDone: the
// call must report the context's error (a definite failure the caller can
// match), not an unclassified "transaction has already been committed or
// rolled back", and not an unknown outcome.
func TestTx_ContextEndedMidTransaction(t *testing.T) {
	st, err := store.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "tx.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, cause := range []error{context.Canceled, context.DeadlineExceeded} {
		ctx, cancel := context.WithCancel(context.Background())
		if cause == context.DeadlineExceeded {
			ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
		}
		err := sqlstore.RunTx(ctx, st, func(tx *sql.Tx) error {
			if _, err := tx.Exec("UPDATE server_settings SET value = value WHERE field = 'schema_version'"); err != nil {
				return err
			}
			if cause == context.Canceled {
				cancel()
			}
			<-ctx.Done()
			// database/sql rolls back from its own goroutine: wait for it.
			for {
				_, err := tx.Exec("SELECT 1")
				if errors.Is(err, sql.ErrTxDone) {
					return err
				}
				time.Sleep(time.Millisecond)
			}
		})
		cancel()
		if !errors.Is(err, cause) {
			t.Errorf("transaction whose context ended (%v): got %v; want %v", cause, err, cause)
		}
		if errors.Is(err, store.ErrUnknownOutcome) {
			t.Errorf("transaction rolled back before its commit reported %v", err)
		}
	}
}

// A transaction cut off from its server (a partition: no FIN, no RST) after
// its last statement ends by its context's deadline, whether it was to
// commit (ErrUnknownOutcome: the COMMIT may land) or to roll back (the
// caller's own error). database/sql hands a driver's Commit and Rollback
// no context, and go-sql-driver's wait for the server however long it
// stays silent.
func TestTx_PartitionedEndReturnsOnTime(t *testing.T) {
	for _, backend := range []string{"mysql", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			s, p := openWire(t, serverDSNs[backend](t))
			if _, err := s.ServerSetting(t.Context(), "schema_version"); err != nil {
				t.Fatal(err)
			}
			refused := errors.New("refused by the caller")
			for _, end := range []string{"commit", "rollback"} {
				const wait = 500 * time.Millisecond
				ctx, cancel := context.WithTimeout(t.Context(), wait)
				heal := time.AfterFunc(5*time.Second, func() { p.Blackhole(false) })
				start := time.Now()
				err := sqlstore.RunTx(ctx, s, func(tx *sql.Tx) error {
					if _, err := tx.ExecContext(ctx, "UPDATE server_settings SET value = value WHERE field = 'schema_version'"); err != nil {
						return err
					}
					p.Blackhole(true)
					if end == "rollback" {
						return refused
					}
					return nil
				})
				took := time.Since(start)
				cancel()
				heal.Stop()
				p.Blackhole(false)
				t.Logf("%s cut off: returned after %v (deadline %v): %v", end, took, wait, err)
				want := store.ErrUnknownOutcome
				if end == "rollback" {
					want = refused
				}
				if !errors.Is(err, want) {
					t.Errorf("%s cut off: got %v; want %v", end, err, want)
				}
				if bound := wait + 2*time.Second; took > bound {
					t.Errorf("%s cut off: returned after %v, deadline %v; want within %v", end, took, wait, bound)
				}
			}
		})
	}
}

// A commit whose COMMIT applied but whose answer was lost is
// store.ErrUnknownOutcome, on MySQL's two-query commit (its COMMIT rides
// at the end of a query of several statements) as on the ordinary
// transaction; the file is there, and the same commit made again returns
// it (the caller's retry after an unknown outcome), with its devices and
// its replication queue row once.
func TestCommitFile_AnswerLost(t *testing.T) {
	for _, backend := range []string{"mysql", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			s, p := openWire(t, serverDSNs[backend](t))
			ctx := t.Context()
			d, err := s.CreateDomain(ctx, "lost")
			if err != nil {
				t.Fatal(err)
			}
			for i, replace := range []bool{false, true} {
				key := "k"
				if !replace {
					key = "fresh"
				}
				if replace {
					// An owner of the key to replace: the commit's
					// statement-at-a-time path.
					fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key})
					if err != nil {
						t.Fatal(err)
					}
					if _, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: key, DevIDs: []int{1}}); err != nil {
						t.Fatal(err)
					}
				}
				fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key})
				if err != nil {
					t.Fatal(err)
				}
				c := store.Commit{Fid: fid, DomainID: d.ID, Key: key, Length: 5, DevIDs: []int{2, 1}, Replicate: true}
				before := p.Stats().DroppedCommitReplies
				p.DropCommitReplies(1)
				_, err = s.CommitFile(ctx, c)
				p.DropCommitReplies(0)
				if got := p.Stats().DroppedCommitReplies; got != before+1 {
					t.Fatalf("commit %d: the proxy dropped %d commit answers, want 1 (err %v)", i, got-before, err)
				}
				if !errors.Is(err, store.ErrUnknownOutcome) {
					t.Fatalf("commit %d with its answer lost: %v, want store.ErrUnknownOutcome", i, err)
				}
				res, err := s.CommitFile(ctx, c)
				if err != nil {
					t.Fatalf("commit %d again: %v", i, err)
				}
				if res.File.Fid != fid || res.File.Key != key || res.File.DevCount != 2 || res.File.Length != 5 {
					t.Fatalf("commit %d again: %+v", i, res.File)
				}
				if replace && res.ReplacedFid == 0 {
					t.Errorf("commit %d again: no replaced fid", i)
				}
				on, err := s.FileOn(ctx, fid)
				if err != nil || len(on) != 2 {
					t.Fatalf("file_on of fid %d: %v %v, want devices 1 and 2", fid, on, err)
				}
				items, err := s.Lease(ctx, store.QueueReplicate, 10, time.Minute)
				if err != nil || len(items) != 1 || items[0].Fid != fid {
					t.Fatalf("replication queue: %v %v, want fid %d once", items, err, fid)
				}
				if err := s.Finish(ctx, store.QueueReplicate, fid); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A FidInserter query whose every answer says the counter row is missing,
// however often it is created, ends in an error: never in fid 0 as if it
// were one allocated (it did, before the loop's last round returned its
// nil error).
func TestInsertWithNextFid_CounterNeverThere(t *testing.T) {
	st, err := store.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "fid.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fid, err := sqlstore.InsertWithNextFid(t.Context(), st, "SELECT 1, 0 FROM gomogile_counter WHERE name = ?")
	if err == nil || fid != 0 {
		t.Fatalf("allocation that never found its counter row: fid %d, err %v; want an error", fid, err)
	}
	t.Logf("error: %v", err)
}

// A MySQL commit or placement on a Config.Batch connection cut off from
// its server (a partition) before its last query ends by its context's
// deadline with the context's error — a definite failure: nothing was
// committed, and once the network heals the same call succeeds.
func TestBatch_PartitionedReturnsOnTime(t *testing.T) {
	s, p := openWire(t, serverDSNs["mysql"](t))
	ctx := t.Context()
	d, err := s.CreateDomain(ctx, "cut")
	if err != nil {
		t.Fatal(err)
	}
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	commit := func(ctx context.Context) error {
		_, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: "k", DevIDs: []int{1}})
		return err
	}
	place := func(ctx context.Context) error { _, err := s.AddFileOn(ctx, fid, 2); return err }
	for _, c := range []struct {
		name string
		call func(context.Context) error
	}{{"CommitFile", commit}, {"AddFileOn", place}} {
		const wait = 500 * time.Millisecond
		cctx, cancel := context.WithTimeout(ctx, wait)
		p.Blackhole(true)
		start := time.Now()
		err := c.call(cctx)
		took := time.Since(start)
		p.Blackhole(false)
		cancel()
		t.Logf("%s cut off: returned after %v: %v", c.name, took, err)
		if took > wait+time.Second {
			t.Errorf("%s cut off returned after %v; deadline %v", c.name, took, wait)
		}
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrUnknownOutcome) {
			t.Errorf("%s cut off before its COMMIT: %v; want the deadline, a definite failure", c.name, err)
		}
		if err := c.call(ctx); err != nil {
			t.Fatalf("%s once healed: %v", c.name, err)
		}
	}
	f, err := s.File(ctx, fid)
	if err != nil || f.DevCount != 2 {
		t.Fatalf("file after both: %+v %v; want 2 devices", f, err)
	}
}
