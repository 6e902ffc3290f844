package sqlaccess_test

import (
	"path/filepath"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

func TestOf(t *testing.T) {
	s, err := store.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, ok := sqlaccess.Of(s)
	if !ok || p.DB == nil || p.Dialect == nil || p.Locks == nil {
		t.Fatalf("Of(%T) = %+v, %v; want its pool, dialect and locks", s, p, ok)
	}
	var v string
	if err := p.DB.QueryRowContext(t.Context(), p.Dialect.Rebind("SELECT value FROM server_settings WHERE field = ?"), "schema_version").Scan(&v); err != nil || v != "17" {
		t.Errorf("schema_version through the pool = %q, %v; want 17", v, err)
	}
	if _, ok := sqlaccess.Of(notSQL{s}); ok {
		t.Error("Of(a Store sqlstore did not build) = true; want false")
	}
	if _, ok := sqlaccess.DB(nil); ok {
		t.Error("DB(nil) = true; want false")
	}
}

// notSQL is a Store that sqlstore did not build (it wraps one).
type notSQL struct{ store.Backend }
