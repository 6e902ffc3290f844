package mysql_test

import (
	"context"
	"database/sql"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// The schema rendered from sqlstore.Schema17 makes the tables the DDL
// written out by hand did before it (testdata), as the server reads them:
// SHOW CREATE TABLE of each, its lines in any order (where a key is
// declared in the statement does not matter).
func TestSchema17_SameAsBefore(t *testing.T) {
	before, err := os.ReadFile("testdata/schema17-before-render.sql")
	if err != nil {
		t.Fatal(err)
	}
	want := showTables(t, strings.Split(string(before), ";\n"))
	got := showTables(t, mysql.Schema17())
	for _, name := range sqlstore.Schema17Tables {
		if got[name] != want[name] {
			t.Errorf("table %s:\n got %s\nwant %s", name, got[name], want[name])
		}
	}
	if len(got) != len(sqlstore.Schema17Tables) || len(want) != len(got) {
		t.Errorf("%d tables rendered, %d before; want %d", len(got), len(want), len(sqlstore.Schema17Tables))
	}
}

// showTables runs stmts on a fresh database and returns each table's
// SHOW CREATE TABLE, its lines sorted.
func showTables(t *testing.T, stmts []string) map[string]string {
	ctx := context.Background()
	d, err := store.ParseDSN(testdb.MySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	db := openRaw(t, d)
	for _, q := range stmts {
		if strings.TrimSpace(q) == "" {
			continue
		}
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	out := map[string]string{}
	for _, name := range sqlstore.Schema17Tables {
		var tbl, create string
		err := db.QueryRowContext(ctx, "SHOW CREATE TABLE "+name).Scan(&tbl, &create)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			t.Fatalf("SHOW CREATE TABLE %s: %v", name, err)
		}
		lines := strings.Split(create, "\n")
		for i := range lines {
			lines[i] = strings.TrimSuffix(strings.TrimSpace(lines[i]), ",")
		}
		slices.Sort(lines)
		out[name] = strings.Join(lines, "\n")
	}
	return out
}
