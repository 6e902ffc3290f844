package sqlstore_test

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/portable"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
	"github.com/gomogile/gomogile/store/postgres"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

func init() {
	store.Register("plan-mysql-portable", portable.Driver{Scheme: "plan-mysql-portable", NewConfig: mysql.NewConfig})
	store.Register("plan-postgres-portable", portable.Driver{Scheme: "plan-postgres-portable", NewConfig: postgres.NewConfig})
}

// New decides once which path each operation takes: the fast paths a
// backend's Dialect and pools offer, the portable path for every operation
// of a Dialect without them.
func TestPlan(t *testing.T) {
	allPortable := map[string]string{"insertTemp": "portable", "commit": "portable", "changeFileOn": "portable", "lease": "portable"}
	cases := []struct {
		name string
		dsn  func(t testing.TB) string
		want map[string]string
	}{
		{"sqlite", func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "p.db") }, allPortable},
		{"postgres", testdb.Postgres, map[string]string{"insertTemp": "fid inserter, fenced portable", "commit": "portable",
			"changeFileOn": "portable", "lease": "claim, fenced portable"}},
		{"mysql", testdb.MySQL, map[string]string{"insertTemp": "batched fid inserter, fenced portable", "commit": "chained",
			"changeFileOn": "chained", "lease": "batch"}},
		{"postgres-portable", func(t testing.TB) string { return portableDSN(testdb.Postgres(t)) }, allPortable},
		{"mysql-portable", func(t testing.TB) string { return portableDSN(testdb.MySQL(t)) }, allPortable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := store.Open(t.Context(), c.dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			info, err := s.Info(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(info.Plan, c.want) {
				t.Errorf("Info().Plan %v; want %v", info.Plan, c.want)
			}
		})
	}
}

// portableDSN is dsn opened through this test's portable driver of its
// backend.
func portableDSN(dsn string) string {
	scheme, rest, _ := strings.Cut(dsn, "://")
	return "plan-" + scheme + "-portable://" + rest
}
