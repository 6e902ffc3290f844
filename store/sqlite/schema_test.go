package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/store/sqlite"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// The schema rendered from sqlstore.Schema17 makes the tables the DDL
// written out by hand did before it (testdata), as SQLite reads them: each
// column's declared type, NOT NULL, default and whether it is the rowid;
// each index's columns, uniqueness and, for CREATE INDEX, name. One
// difference is SQLite's own: class's key, MogileFS's UNIQUE (dmid,
// classid), is rendered as PRIMARY KEY, which SQLite keeps as the same
// unique index.
func TestSchema17_SameAsBefore(t *testing.T) {
	before, err := os.ReadFile("testdata/schema17-before-render.sql")
	if err != nil {
		t.Fatal(err)
	}
	s := sqlite.Dialect{}.Schema()
	rendered := s[:len(s)-len(sqlstore.DueIndexes)]
	want := describe(t, strings.Split(string(before), ";\n"))
	got := describe(t, rendered)
	if got != want {
		t.Errorf("rendered schema:\n%s\nbefore:\n%s", got, want)
	}
}

// describe runs stmts on a new database file and describes what they made.
func describe(t *testing.T, stmts []string) string {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "schema.db"))
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
	var lines []string
	query := func(q string, f func(rows *sql.Rows) error) {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := f(rows); err != nil {
				t.Fatal(err)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tb := range sqlstore.Schema17Tables {
		query("SELECT name, type, \"notnull\", COALESCE(dflt_value, ''), pk FROM pragma_table_info('"+tb+"')", func(rows *sql.Rows) error {
			var name, typ, dflt string
			var notNull, pk int
			if err := rows.Scan(&name, &typ, &notNull, &dflt, &pk); err != nil {
				return err
			}
			rowid := pk > 0 && typ == "INTEGER"
			lines = append(lines, fmt.Sprintf("%s.%s %s notnull=%d default=%q rowid=%t", tb, name, typ, notNull, dflt, rowid))
			return nil
		})
		query("SELECT il.name, il.\"unique\", il.origin, group_concat(ii.name, ',') FROM pragma_index_list('"+tb+"') il, pragma_index_info(il.name) ii GROUP BY il.name", func(rows *sql.Rows) error {
			var name, origin, cols string
			var unique int
			if err := rows.Scan(&name, &unique, &origin, &cols); err != nil {
				return err
			}
			if origin != "c" {
				name = "(constraint)"
			}
			lines = append(lines, fmt.Sprintf("%s index %s (%s) unique=%d", tb, name, cols, unique))
			return nil
		})
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
