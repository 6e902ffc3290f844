package tracker_test

import (
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
)

// GOMOGILE_TRACKER_TEST_BACKEND=mysql or =postgres runs every tracker test
// on a fresh database of that server (found as internal/testkit/testdb finds
// them); the default is SQLite in t.TempDir().
func init() {
	backends["mysql"] = func(t testing.TB) string { return testdb.MySQL(t) }
	backends["postgres"] = func(t testing.TB) string { return testdb.Postgres(t) }
}
