package sqlite_test

import (
	"errors"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// TestParseDSN_SQLiteForms: a file path keeps its leading '/', and what
// follows "//" is all path, never a host; DBD::SQLite's forms as Perl reads them.
func TestParseDSN_SQLiteForms(t *testing.T) {
	for in, want := range map[string]struct {
		path   string
		params url.Values
	}{
		"sqlite:///var/lib/mogilefs/db.sqlite":       {"/var/lib/mogilefs/db.sqlite", url.Values{}},
		"sqlite:rel/db.sqlite?busy_timeout=5s":       {"rel/db.sqlite", url.Values{"busy_timeout": {"5s"}}},
		"sqlite://rel/db.sqlite":                     {"rel/db.sqlite", url.Values{}},
		"SQLite3:///x.db":                            {"/x.db", url.Values{}},
		"file:/x.db":                                 {"/x.db", url.Values{}},
		"sqlite://C:/mogilefs/m.db":                  {"C:/mogilefs/m.db", url.Values{}},
		"sqlite:///srv/a%20b.db":                     {"/srv/a b.db", url.Values{}},
		"DBI:SQLite:dbname=/tmp/m.db":                {"/tmp/m.db", url.Values{}},
		"DBI:SQLite:/tmp/m.db":                       {"/tmp/m.db", url.Values{}},
		"DBI:SQLite:db=/var/lib/mogilefs/m.db":       {"/var/lib/mogilefs/m.db", url.Values{}},
		"dbi:sqlite:database=/var/lib/mogilefs/m.db": {"/var/lib/mogilefs/m.db", url.Values{}},
		"DBI:SQLite:/srv/mog;fs/m.db":                {"/srv/mog;fs/m.db", url.Values{}}, // a bare path may hold ';'
	} {
		d, err := store.ParseDSN(in)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", in, err)
			continue
		}
		if d.Driver != "sqlite" || d.Database != want.path || d.Path != want.path || !reflect.DeepEqual(d.Params, want.params) {
			t.Errorf("ParseDSN(%q) = %+v; want driver sqlite, path %q, params %v", in, d, want.path, want.params)
		}
		again, err := store.ParseDSN(d.Redacted())
		if err != nil || again.Database != d.Database || !reflect.DeepEqual(again.Params, d.Params) {
			t.Errorf("ParseDSN(Redacted(%q) = %q) = %+v, %v; want path %q", in, d.Redacted(), again, err, d.Database)
		}
	}
	for _, in := range []string{"sqlite:///x.db?busy_timeout=%zz", "sqlite:///a%zz.db", "DBI:SQLite:/a.db;b=1;c"} {
		if _, err := store.ParseDSN(in); !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("ParseDSN(%q) error = %v; want ErrBadDSN", in, err)
		}
	}
}

// TestOpen_NoReplicas: SQLite has no read replicas; a DSN naming one is
// refused rather than ignored.
func TestOpen_NoReplicas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := store.Open(t.Context(), "sqlite:///"+path+"?replica="+url.QueryEscape("sqlite:///"+path+".copy"))
	if err == nil {
		s.Close()
	}
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "replica") {
		t.Errorf("Open with a replica: %v; want ErrInvalid naming replica", err)
	}
}
