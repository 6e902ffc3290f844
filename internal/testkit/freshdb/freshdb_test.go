package freshdb_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/freshdb"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
)

// Each Create is a database of its own, empty and usable by a Store, and
// its drop removes it: a Store opened on the DSN afterwards fails.
func TestCreate(t *testing.T) {
	for _, env := range []string{freshdb.EnvMySQL, freshdb.EnvPostgres} {
		t.Run(env, func(t *testing.T) {
			server := os.Getenv(env)
			if server == "" {
				t.Skipf("$%s is unset", env)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			a, dropA, err := freshdb.Create(ctx, server)
			if err != nil {
				t.Fatal(err)
			}
			b, dropB, err := freshdb.Create(ctx, server)
			if err != nil {
				t.Fatal(err)
			}
			defer dropB(ctx)
			if a == b {
				t.Fatalf("two Creates gave one database %s", a)
			}
			st, err := store.Open(ctx, a)
			if err != nil {
				t.Fatalf("open %s: %v", a, err)
			}
			if _, err := st.CreateDomain(ctx, "only-in-a"); err != nil {
				t.Fatal(err)
			}
			st.Close()
			st, err = store.Open(ctx, b)
			if err != nil {
				t.Fatalf("open %s: %v", b, err)
			}
			if doms, err := st.Domains(ctx); err != nil || len(doms) != 0 {
				t.Errorf("the second database has domains %v, %v; want none", doms, err)
			}
			st.Close()
			if err := dropA(ctx); err != nil {
				t.Fatal(err)
			}
			if st, err := store.Open(ctx, a); err == nil {
				st.Close()
				t.Errorf("open %s after its drop: no error", a)
			}
		})
	}
	if _, _, err := freshdb.Create(t.Context(), "sqlite:///tmp/x.db"); err == nil {
		t.Errorf("Create on an SQLite DSN: %v; want an error naming it", err)
	}
}
