package mysql_test

import (
	"errors"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
)

// ExistingOnly refuses a database without the MogileFS schema and creates
// nothing in it; once a Store has made the schema, it opens.
func TestOpen_ExistingOnly(t *testing.T) {
	ctx := t.Context()
	dsn := testdb.MySQL(t)
	if _, err := store.Open(ctx, dsn, store.ExistingOnly()); !errors.Is(err, store.ErrSchemaMismatch) {
		t.Fatalf("Open(ExistingOnly) of an empty database: %v; want ErrSchemaMismatch", err)
	}
	d, err := store.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := openRaw(t, d).QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", d.Database).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a refused Open(ExistingOnly) left %d tables", n)
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = store.Open(ctx, dsn, store.ExistingOnly())
	if err != nil {
		t.Fatalf("Open(ExistingOnly) of a MogileFS database: %v", err)
	}
	st.Close()
}
