package sqlstore_test

import (
	"path/filepath"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// TestNew_DueIndexes: on PostgreSQL and SQLite, New creates the queue
// tables' (nexttry, fid) indexes, and opening the database again (which
// runs the DDL again) keeps exactly one of each.
func TestNew_DueIndexes(t *testing.T) {
	for name, c := range map[string]struct {
		dsn     func(t *testing.T) string
		catalog string
	}{
		"sqlite": {func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "due.db") },
			"SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name LIKE '%nexttry_fid'"},
		"postgres": {func(t *testing.T) string { return testdb.Postgres(t) },
			"SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE '%nexttry_fid'"},
	} {
		t.Run(name, func(t *testing.T) {
			dsn := c.dsn(t)
			for open := 1; open <= 2; open++ {
				s, err := store.Open(t.Context(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				var n int
				err = rawParts(t, s).DB.QueryRowContext(t.Context(), c.catalog).Scan(&n)
				s.Close()
				if err != nil || n != len(sqlstore.DueIndexes) {
					t.Errorf("open %d: %d (nexttry, fid) indexes, %v; want %d", open, n, err, len(sqlstore.DueIndexes))
				}
			}
		})
	}
}
