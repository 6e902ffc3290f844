package sqlite_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomogile/gomogile/store"
)

// ExistingOnly does not make a missing file, refuses a file without the
// MogileFS schema and creates nothing in it, and opens one a Store made.
func TestOpen_ExistingOnly(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := store.Open(ctx, "sqlite:///"+missing, store.ExistingOnly()); !errors.Is(err, store.ErrSchemaMismatch) {
		t.Errorf("Open(ExistingOnly) of a missing file: %v; want ErrSchemaMismatch", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(ExistingOnly) made the missing file (%v)", err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	raw, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, "CREATE TABLE photos (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(ctx, "sqlite:///"+foreign, store.ExistingOnly()); !errors.Is(err, store.ErrSchemaMismatch) {
		t.Errorf("Open(ExistingOnly) of another program's database: %v; want ErrSchemaMismatch", err)
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("another program's database has %d tables after a refused Open(ExistingOnly); want its 1", n)
	}
	made := "sqlite:///" + filepath.Join(dir, "made.db")
	st, err := store.Open(ctx, made)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = store.Open(ctx, made, store.ExistingOnly()); err != nil {
		t.Fatalf("Open(ExistingOnly) of a MogileFS database: %v", err)
	}
	st.Close()
}
