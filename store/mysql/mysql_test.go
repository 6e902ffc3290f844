package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
)

// harness runs the conformance suite on a database of its own.
type harness struct {
	dsn      string
	database string
	admin    *sql.DB // a pool of its own, for Reset and KILL
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	dsn := testdb.MySQL(t)
	d, err := store.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("ParseDSN(%q): %v", dsn, err)
	}
	return &harness{dsn: dsn, database: d.Database, admin: openRaw(t, d)}
}

// openRaw opens a plain driver pool on d, outside any Store.
func openRaw(t testing.TB, d *store.DSN) *sql.DB {
	t.Helper()
	cfg, _, err := mysql.Configure(d)
	if err != nil {
		t.Fatalf("Configure(%s): %v", d.Redacted(), err)
	}
	c, err := gomysql.NewConnector(cfg)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db
}

func (h *harness) Name() string { return "mysql" }

// Origin names the server the suite ran on (conformance.Origin).
func (h *harness) Origin() string { return testdb.Origin("mysql") }
func (h *harness) DSN() string    { return h.dsn }

// Reset deletes every row of every table of the database, whoever created
// it (schema 17, the shared layer's own tables), keeping the tables.
func (h *harness) Reset(ctx context.Context) error {
	rows, err := h.admin.QueryContext(ctx,
		"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE'", h.database)
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
	if err := rows.Close(); err != nil {
		return err
	}
	for _, n := range tables {
		q := "DELETE FROM `" + n + "`"
		if n == "gomogile_lock_holder" {
			// Its row '' marks the server's lock epoch: without it, open
			// Stores take the server for one just restarted and grant
			// nothing until its grace after the server's start has passed,
			// which a container started seconds ago has not (seen on a
			// fresh dockertest container). Only a server restart empties
			// it in use; the holder rows go.
			q += " WHERE name <> ''"
		}
		if _, err := h.admin.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("reset %s: %w", n, err)
		}
	}
	return nil
}
