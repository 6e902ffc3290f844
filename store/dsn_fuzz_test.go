package store_test

import (
	"strings"
	"testing"

	"github.com/gomogile/gomogile/store"
)

// FuzzParseDSN: any db_dsn a config file can carry is parsed or refused
// with ErrBadDSN, never a panic; what is accepted names a lower-case
// driver and a valid port, and its redacted form never shows the password.
func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{
		"mysql://root:secret@127.0.0.1:3306/test", "postgres://u@h/db?sslmode=disable",
		"DBI:mysql:mogilefs;host=db;port=3306", "DBI:Pg:dbname=mogilefs;host=/run/pg",
		"DBI:SQLite:dbname=/var/lib/mogilefs/m.db;busy_timeout=500", "sqlite:///x.db?synchronous=full",
		"sqlite:rel.db", "file:/p", "mysql://[::1]:99999/x", "DBI:", "://", "%", "mysql://u:p%zz@h/d",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := store.ParseDSN(s)
		if err != nil {
			return
		}
		if d.Driver == "" || d.Driver != strings.ToLower(d.Driver) {
			t.Fatalf("ParseDSN(%q): driver %q", s, d.Driver)
		}
		if d.Port < 0 || d.Port > 65535 {
			t.Fatalf("ParseDSN(%q): port %d", s, d.Port)
		}
		r := d.Redacted()
		if len(d.Password) >= 6 && strings.Contains(r, d.Password) && !strings.Contains(s, d.Password+d.Password) &&
			!strings.Contains(d.User+d.Host+d.Database, d.Password) && !paramsContain(d, d.Password) {
			t.Fatalf("ParseDSN(%q).Redacted() = %q shows the password", s, r)
		}
	})
}

func paramsContain(d *store.DSN, s string) bool {
	for k, vs := range d.Params {
		if strings.Contains(k, s) {
			return true
		}
		for _, v := range vs {
			if strings.Contains(v, s) {
				return true
			}
		}
	}
	return false
}
