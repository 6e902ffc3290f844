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
