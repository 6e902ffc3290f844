package sqlstore_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// TestNew_PoolSizes: the DSN's max_idle_conns and max_open_conns reach the
// Store's pool, and without them it keeps store.DefaultMaxIdleConns idle.
func TestNew_PoolSizes(t *testing.T) {
	for _, tc := range []struct {
		query      string
		idle, open int
	}{
		{"", store.DefaultMaxIdleConns, 0},
		{"?max_idle_conns=3", 3, 0},
		{"?max_idle_conns=2&max_open_conns=4", 2, 4},
	} {
		dsn := "sqlite://" + filepath.Join(t.TempDir(), "pool.db") + tc.query
		s, err := store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("Open(%s): %v", dsn, err)
		}
		db := rawParts(t, s).DB
		if got := db.Stats().MaxOpenConnections; got != tc.open {
			t.Errorf("%s: MaxOpenConnections = %d; want %d", tc.query, got, tc.open)
		}
		// Take more connections than the idle limit at once, give them
		// back, and count what the pool kept.
		n := max(tc.idle, tc.open) + 2
		if tc.open > 0 {
			n = tc.open
		}
		var conns []*sql.Conn
		for range n {
			c, err := db.Conn(t.Context())
			if err != nil {
				t.Fatalf("%s: Conn: %v", tc.query, err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Close()
		}
		if got := db.Stats().Idle; got != tc.idle {
			t.Errorf("%s: %d idle connections after %d were in use; want %d", tc.query, got, n, tc.idle)
		}
		s.Close()
	}
}
