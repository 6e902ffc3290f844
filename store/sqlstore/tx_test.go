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
