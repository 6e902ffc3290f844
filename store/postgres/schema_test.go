package postgres_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store/postgres"
)

// The schema rendered from sqlstore.Schema17 makes the tables the DDL
// written out by hand did before it (testdata), as the server's catalog
// reads them: every column's type, nullability, default and collation,
// every constraint's definition and every index's, in any order.
func TestSchema17_SameAsBefore(t *testing.T) {
	before, err := os.ReadFile("testdata/schema17-before-render.sql")
	if err != nil {
		t.Fatal(err)
	}
	want := catalog(t, strings.Split(string(before), ";\n"))
	got := catalog(t, postgres.Schema17())
	if got != want {
		t.Errorf("catalog of the rendered schema:\n%s\nbefore:\n%s", got, want)
	}
	if !strings.Contains(got, `file dkey character varying 255 YES  C`) {
		t.Errorf("file.dkey lost its \"C\" collation:\n%s", got)
	}
}

// catalog runs stmts on a fresh database and describes what they made.
func catalog(t *testing.T, stmts []string) string {
	ctx := context.Background()
	u, err := url.Parse(testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = url.Values{"sslmode": {u.Query().Get("sslmode")}}.Encode() // gomogile's own parameters are no server's
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if strings.TrimSpace(q) == "" {
			continue
		}
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var b strings.Builder
	for _, q := range []string{
		`SELECT table_name || ' ' || column_name || ' ' || data_type || ' ' || COALESCE(character_maximum_length::text, '') || ' ' ||
			is_nullable || ' ' || COALESCE(column_default, '') || ' ' || COALESCE(collation_name, '')
		FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY 1`,
		`SELECT conrelid::regclass::text || ' ' || contype::text || ' ' || pg_get_constraintdef(oid)
		FROM pg_constraint WHERE connamespace = current_schema()::regnamespace ORDER BY 1`,
		`SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1`,
	} {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			b.WriteString(s + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}
