package dirlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/store"

	dirlite "example.com/embedded-backend"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, &harness{dir: filepath.Join(t.TempDir(), "meta")})
}

// harness runs the suite on a directory of the test's.
type harness struct{ dir string }

func (h *harness) Name() string { return dirlite.Scheme }
func (h *harness) DSN() string  { return dirlite.Scheme + "://" + h.dir }

// Reset empties every table, keeping the schema, through a connection of
// its own as another program (the sqlite3 shell) would.
func (h *harness) Reset(ctx context.Context) error {
	path := filepath.Join(h.dir, dirlite.File)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil // before the first Open there is nothing to empty
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
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

// FaultsFor: the Store's locks live in its process and die with it, so
// killing a lock's "session" and crashing its owner are both its Close.
func (h *harness) FaultsFor(s *store.Store) conformance.Faults { return closeFaults{s} }

type closeFaults struct{ s *store.Store }

func (f closeFaults) KillLockSession(context.Context, store.Lock) error { return f.s.Close() }
func (f closeFaults) CrashOwner(context.Context) error                  { return f.s.Close() }

// The directory is made when missing, the file lands in it, and the Store
// names this backend; a DSN without a directory is refused.
func TestOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := store.Open(t.Context(), dirlite.Scheme+"://"+dir+"?synchronous=full&op_timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if info.Driver != dirlite.Scheme {
		t.Errorf("Info().Driver = %q; want %q", info.Driver, dirlite.Scheme)
	}
	if _, err := os.Stat(filepath.Join(dir, dirlite.File)); err != nil {
		t.Errorf("no database file in the directory: %v", err)
	}
	if s, err := store.Open(t.Context(), dirlite.Scheme+":"); !errors.Is(err, store.ErrBadDSN) {
		if err == nil {
			s.Close()
		}
		t.Errorf("Open without a directory: %v; want ErrBadDSN", err)
	}
	if s, err := store.Open(t.Context(), dirlite.Scheme+"://"+dir+"?colour=red"); !errors.Is(err, store.ErrBadDSN) {
		if err == nil {
			s.Close()
		}
		t.Errorf("Open with an unknown parameter: %v; want ErrBadDSN", err)
	}
}
