package store_test

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

func TestParseDSN(t *testing.T) {
	tests := []struct {
		in   string
		want store.DSN
	}{
		{"sqlite:///var/lib/mogilefs/db.sqlite", store.DSN{Driver: "sqlite", Database: "/var/lib/mogilefs/db.sqlite", Params: url.Values{}}},
		{"sqlite:rel/db.sqlite?busy_timeout=5s", store.DSN{Driver: "sqlite", Database: "rel/db.sqlite", Params: url.Values{"busy_timeout": {"5s"}}}},
		{"sqlite3:///x.db", store.DSN{Driver: "sqlite", Database: "/x.db", Params: url.Values{}}},
		{"DBI:SQLite:dbname=/tmp/m.db", store.DSN{Driver: "sqlite", Database: "/tmp/m.db", Params: url.Values{}}},
		{"DBI:SQLite:/tmp/m.db", store.DSN{Driver: "sqlite", Database: "/tmp/m.db", Params: url.Values{}}},
		{"mysql://mog:s%40cret@db.example:3307/mogilefs?tls=false", store.DSN{Driver: "mysql", User: "mog", Password: "s@cret", Host: "db.example", Port: 3307, Hosts: []store.HostPort{{"db.example", 3307}}, Database: "mogilefs", Params: url.Values{"tls": {"false"}}}},
		{"DBI:mysql:database=mogilefs;host=10.0.0.5;port=3306", store.DSN{Driver: "mysql", Host: "10.0.0.5", Port: 3306, Hosts: []store.HostPort{{"10.0.0.5", 3306}}, Database: "mogilefs", Params: url.Values{}}},
		{"DBI:mysql:mogilefs", store.DSN{Driver: "mysql", Database: "mogilefs", Params: url.Values{}}},
		{"dbi:mysql:mogilefs;mysql_connect_timeout=2", store.DSN{Driver: "mysql", Database: "mogilefs", Params: url.Values{"mysql_connect_timeout": {"2"}}}},
		{"DBI:Pg:dbname=mogilefs;host=/var/run/postgresql", store.DSN{Driver: "postgres", Host: "/var/run/postgresql", Hosts: []store.HostPort{{"/var/run/postgresql", 0}}, Database: "mogilefs", Params: url.Values{}}},
		{"postgres://root@127.0.0.1:5432/test?sslmode=disable", store.DSN{Driver: "postgres", User: "root", Host: "127.0.0.1", Port: 5432, Hosts: []store.HostPort{{"127.0.0.1", 5432}}, Database: "test", Params: url.Values{"sslmode": {"disable"}}}},
		{"postgresql://u:p@h/d", store.DSN{Driver: "postgres", User: "u", Password: "p", Host: "h", Hosts: []store.HostPort{{"h", 0}}, Database: "d", Params: url.Values{}}},
		{"cockroach://h:26257/mog", store.DSN{Driver: "cockroach", Host: "h", Port: 26257, Hosts: []store.HostPort{{"h", 26257}}, Database: "mog", Params: url.Values{}}},
	}
	for _, tt := range tests {
		tt.want.OpTimeout = store.DefaultOpTimeout
		got, err := store.ParseDSN(tt.in)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("ParseDSN(%q) = %+v; want %+v", tt.in, *got, tt.want)
		}
	}
}

func TestParseDSN_Errors(t *testing.T) {
	for _, in := range []string{
		"",
		"   ",
		"nocolon",
		"DBI:",
		"DBI::dbname=x",
		"DBI:mysql:a;b;3306;c", // DBD::mysql has three positional attributes
		"DBI:Pg:a;b",           // DBD::Pg one
		"DBI:mysql:m:h:notaport",
		"DBI:mysql:database=x;port=notaport",
		"mysql://h:99999/db",
		"mysql:opaque",
		"://x",
	} {
		_, err := store.ParseDSN(in)
		if !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("ParseDSN(%q) error = %v; want ErrBadDSN", in, err)
		}
	}
}

func TestDSN_RedactedRoundTripsSQLitePaths(t *testing.T) {
	for _, in := range []string{"sqlite:///tmp/x.db", "sqlite:rel/x.db", "DBI:SQLite:dbname=/a/b.db"} {
		d, err := store.ParseDSN(in)
		if err != nil {
			t.Fatal(err)
		}
		again, err := store.ParseDSN(d.Redacted())
		if err != nil || again.Database != d.Database {
			t.Errorf("ParseDSN(Redacted(%q) = %q) = %+v, %v; want database %q", in, d.Redacted(), again, err, d.Database)
		}
	}
}

func TestDSN_RedactedHidesPassword(t *testing.T) {
	d, err := store.ParseDSN("mysql://mog:topsecret@h:3306/db")
	if err != nil {
		t.Fatal(err)
	}
	if r := d.Redacted(); strings.Contains(r, "topsecret") || !strings.Contains(r, "mog") {
		t.Errorf("Redacted() = %q; want user shown and password hidden", r)
	}
}

func TestParseDSN_OpTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"mysql://h/db":                         store.DefaultOpTimeout,
		"mysql://h/db?op_timeout=3s":           3 * time.Second,
		"postgres://h/db?op_timeout=250ms&x=1": 250 * time.Millisecond,
		"DBI:mysql:database=db;op_timeout=7":   7 * time.Second,
		"sqlite:///tmp/x.db?op_timeout=0":      0,
		"sqlite:rel.db?op_timeout=1m":          time.Minute,
	} {
		d, err := store.ParseDSN(in)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", in, err)
			continue
		}
		if d.OpTimeout != want {
			t.Errorf("ParseDSN(%q).OpTimeout = %v; want %v", in, d.OpTimeout, want)
		}
		if _, left := d.Params["op_timeout"]; left {
			t.Errorf("ParseDSN(%q) left op_timeout in Params for the backend to refuse", in)
		}
		again, err := store.ParseDSN(d.Redacted())
		if err != nil || again.OpTimeout != want {
			t.Errorf("ParseDSN(Redacted(%q) = %q) = %+v, %v; want op_timeout %v", in, d.Redacted(), again, err, want)
		}
	}
	for _, in := range []string{"mysql://h/db?op_timeout=soon", "mysql://h/db?op_timeout=-1s", "mysql://h/db?op_timeout=1s&op_timeout=2s"} {
		if _, err := store.ParseDSN(in); !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("ParseDSN(%q) error = %v; want ErrBadDSN", in, err)
		}
	}
}

func TestParseDSN_PoolSizes(t *testing.T) {
	for in, want := range map[string][2]int{
		"mysql://h/db":                                      {0, 0},
		"mysql://h/db?max_idle_conns=24":                    {24, 0},
		"postgres://h/db?max_idle_conns=4&max_open_conns=9": {4, 9},
		"DBI:Pg:dbname=db;max_open_conns=3":                 {0, 3},
		"sqlite:rel.db?max_idle_conns=1":                    {1, 0},
	} {
		d, err := store.ParseDSN(in)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", in, err)
			continue
		}
		if got := [2]int{d.MaxIdleConns, d.MaxOpenConns}; got != want {
			t.Errorf("ParseDSN(%q) idle, open = %v; want %v", in, got, want)
		}
		if len(d.Params) != 0 {
			t.Errorf("ParseDSN(%q) left %v in Params for the backend to refuse", in, d.Params)
		}
		again, err := store.ParseDSN(d.Redacted())
		if err != nil || [2]int{again.MaxIdleConns, again.MaxOpenConns} != want {
			t.Errorf("ParseDSN(Redacted(%q) = %q) = %+v, %v; want idle, open %v", in, d.Redacted(), again, err, want)
		}
	}
	for _, in := range []string{
		"mysql://h/db?max_idle_conns=0", "mysql://h/db?max_idle_conns=-2", "mysql://h/db?max_open_conns=many",
		"mysql://h/db?max_open_conns=1&max_open_conns=2", "mysql://h/db?max_idle_conns=5&max_open_conns=4",
	} {
		if _, err := store.ParseDSN(in); !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("ParseDSN(%q) error = %v; want ErrBadDSN", in, err)
		}
	}
}

// TestParseDSN_DBIForms: the db_dsn spellings of real MogileFS configs, as
// Perl's DBD::mysql, DBD::Pg and DBD::SQLite read them.
func TestParseDSN_DBIForms(t *testing.T) {
	my := func(db, host string, port int) store.DSN {
		d := store.DSN{Driver: "mysql", Database: db, Host: host, Port: port, Params: url.Values{}}
		if host != "" || port != 0 {
			d.Hosts = []store.HostPort{{host, port}}
		}
		return d
	}
	tests := map[string]store.DSN{
		"DBI:mysql:mogilefs:host=127.0.0.1":                   my("mogilefs", "127.0.0.1", 0), // the original's sample config
		"dbi:mysql:mogilefs:127.0.0.1":                        my("mogilefs", "127.0.0.1", 0),
		"DBI:mysql:mogilefs:db1.example.com:3307":             my("mogilefs", "db1.example.com", 3307),
		"DBI:mysql:database=mogilefs:host=db1:port=3307":      my("mogilefs", "db1", 3307),
		"DBI:MySQL:db=mogilefs;host=db1;port=3307":            my("mogilefs", "db1", 3307),
		"DBI:mysql:dbname=mogilefs;host=db1":                  my("mogilefs", "db1", 0),
		"DBI:mysql:mogilefs;host=/var/run/mysqld/mysqld.sock": my("mogilefs", "/var/run/mysqld/mysqld.sock", 0),
		"DBI:mariadb:mogilefs;host=db1":                       my("mogilefs", "db1", 0),
		"DBI:Pg:dbname=mogilefs;host=db1;port=5433": {Driver: "postgres", Database: "mogilefs", Host: "db1", Port: 5433,
			Hosts: []store.HostPort{{"db1", 5433}}, Params: url.Values{}},
		"DBI:pg:db=mogilefs": {Driver: "postgres", Database: "mogilefs", Params: url.Values{}},
		"DBI:Pg:database=mogilefs;options=-c statement_timeout=0": {Driver: "postgres", Database: "mogilefs",
			Params: url.Values{"options": {"-c statement_timeout=0"}}},
		"DBI:SQLite:db=/var/lib/mogilefs/m.db":       {Driver: "sqlite", Database: "/var/lib/mogilefs/m.db", Params: url.Values{}},
		"dbi:sqlite:database=/var/lib/mogilefs/m.db": {Driver: "sqlite", Database: "/var/lib/mogilefs/m.db", Params: url.Values{}},
		"DBI:SQLite:/srv/mog;fs/m.db":                {Driver: "sqlite", Database: "/srv/mog;fs/m.db", Params: url.Values{}},
	}
	for in, want := range tests {
		want.OpTimeout = store.DefaultOpTimeout
		got, err := store.ParseDSN(in)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", in, err)
			continue
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("ParseDSN(%q) = %+v; want %+v", in, *got, want)
		}
	}
}

func TestParseDSN_HostList(t *testing.T) {
	for in, want := range map[string][]store.HostPort{
		"postgres://root@127.0.0.1:5433,127.0.0.1:5434/test?target_session_attrs=read-write": {{"127.0.0.1", 5433}, {"127.0.0.1", 5434}},
		"postgres://[::1]:5433,[2001:db8::2]/test":                                           {{"::1", 5433}, {"2001:db8::2", 0}},
		"postgres://%2Fvar%2Frun%2Fpostgresql/test":                                          {{"/var/run/postgresql", 0}},
		"DBI:Pg:dbname=test;host=a,b;port=5433,5434":                                         {{"a", 5433}, {"b", 5434}},
		"DBI:Pg:dbname=test;host=a,b;port=6432":                                              {{"a", 6432}, {"b", 6432}},
		"DBI:Pg:dbname=test;host=::1":                                                        {{"::1", 0}},
		"mysql:///m":                                                                         nil,
	} {
		d, err := store.ParseDSN(in)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", in, err)
			continue
		}
		if !reflect.DeepEqual(d.AllHosts(), want) {
			t.Errorf("ParseDSN(%q) hosts %v; want %v", in, d.AllHosts(), want)
		}
		if len(want) > 0 && (d.Host != want[0].Host || d.Port != want[0].Port) {
			t.Errorf("ParseDSN(%q) Host, Port = %q, %d; want the first of %v", in, d.Host, d.Port, want)
		}
		again, err := store.ParseDSN(d.Redacted())
		if err != nil || !reflect.DeepEqual(again.AllHosts(), want) {
			t.Errorf("ParseDSN(Redacted(%q) = %q): %v, %v; want hosts %v", in, d.Redacted(), again, err, want)
		}
	}
	for _, in := range []string{
		"postgres://::1:5432/test",            // IPv6 without brackets
		"postgres://[::1/test",                // unclosed
		"postgres://a:1,b:x/test",             // bad second port
		"DBI:Pg:dbname=t;host=a,b,c;port=1,2", // port count
	} {
		if _, err := store.ParseDSN(in); !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("ParseDSN(%q) error = %v; want ErrBadDSN", in, err)
		}
	}
}

func TestParseDSN_ErrorsHidePassword(t *testing.T) {
	for _, in := range []string{
		"mysql://mog:s3cret@h:99999/db",
		"postgres://mog:s3cret@a,b:x/db",
		"mysql://mog:s3cret@h/db#frag",
		"mysql://mog:s3cret@h/db?op_timeout=soon",
		"DBI:mysql:database=db;password=s3cret;port=abc",
		"DBI:Pg:dbname=db;password=s3cret;host=a,b;port=1,2,3",
	} {
		_, err := store.ParseDSN(in)
		if !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("ParseDSN(%q) error = %v; want ErrBadDSN", in, err)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseDSN(%q) error %q shows the password", in, err)
		}
	}
}
