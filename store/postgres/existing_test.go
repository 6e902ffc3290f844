package postgres_test

import (
	"database/sql"
	"errors"
	"net/url"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
)

// ExistingOnly refuses a database without the MogileFS schema and creates
// nothing in it; once a Store has made the schema, it opens.
func TestOpen_ExistingOnly(t *testing.T) {
	ctx := t.Context()
	dsn := testdb.Postgres(t)
	if _, err := store.Open(ctx, dsn, store.ExistingOnly()); !errors.Is(err, store.ErrSchemaMismatch) {
		t.Fatalf("Open(ExistingOnly) of an empty database: %v; want ErrSchemaMismatch", err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = url.Values{"sslmode": {u.Query().Get("sslmode")}}.Encode() // gomogile's own parameters are no server's
	raw, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()").Scan(&n); err != nil {
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
