package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// harness runs Stores on one SQLite file in a test's temporary directory.
type harness struct {
	path string
}

func newHarness(t testing.TB) *harness {
	return &harness{path: filepath.Join(t.TempDir(), "meta.db")}
}

func (h *harness) Name() string { return "sqlite" }
func (h *harness) DSN() string  { return "sqlite://" + h.path }

// Reset empties every table, keeping the schema.
func (h *harness) Reset(ctx context.Context) error {
	db, err := rawDB(h.path)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, tb := range tables {
		if _, err := db.ExecContext(ctx, `DELETE FROM "`+tb+`"`); err != nil {
			return fmt.Errorf("reset %s: %w", tb, err)
		}
	}
	return nil
}

// FaultsFor: a SQLite Store's locks live in its process and die with the
// Store, so killing a lock's "session" and crashing its owner are both the
// Store's Close.
func (h *harness) FaultsFor(s *store.Store) conformance.Faults { return closeFaults{s} }

type closeFaults struct{ s *store.Store }

func (f closeFaults) KillLockSession(context.Context, store.Lock) error { return f.s.Close() }
func (f closeFaults) CrashOwner(context.Context) error                  { return f.s.Close() }

// rawDB opens the file the way another program (the sqlite3 shell) would,
// without gomogile.
func rawDB(path string) (*sql.DB, error) {
	return sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
}

func openStore(t *testing.T, h *harness) *store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), h.DSN())
	if err != nil {
		t.Fatalf("store.Open(%q): %v", h.DSN(), err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
