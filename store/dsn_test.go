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

// TestParseDSN: the generic parsers, as a backend without its own DSNParser
// gets them (no backend is registered in this package's tests, so even
// gomogile's own schemes parse generically here; their own forms are
// tested in their packages).
func TestParseDSN(t *testing.T) {
	tests := []struct {
		in   string
		want store.DSN
	}{
		{"mysql://mog:s%40cret@db.example:3307/mogilefs?tls=false", store.DSN{Driver: "mysql", User: "mog", Password: "s@cret", Host: "db.example", Port: 3307, Hosts: []store.HostPort{{"db.example", 3307}}, Database: "mogilefs", Path: "/mogilefs", Params: url.Values{"tls": {"false"}}}},
		{"DBI:Foo:database=mogilefs;host=10.0.0.5;port=3306", store.DSN{Driver: "foo", Host: "10.0.0.5", Port: 3306, Hosts: []store.HostPort{{"10.0.0.5", 3306}}, Database: "mogilefs", Params: url.Values{}}},
		{"DBI:Foo:mogilefs", store.DSN{Driver: "foo", Database: "mogilefs", Params: url.Values{}}},
		{"dbi:foo:mogilefs;foo_connect_timeout=2", store.DSN{Driver: "foo", Database: "mogilefs", Params: url.Values{"foo_connect_timeout": {"2"}}}},
		{"DBI:Foo:dbname=mogilefs;host=/var/run/postgresql", store.DSN{Driver: "foo", Host: "/var/run/postgresql", Hosts: []store.HostPort{{"/var/run/postgresql", 0}}, Database: "mogilefs", Params: url.Values{}}},
		{"postgres://root@127.0.0.1:5432/test?sslmode=disable", store.DSN{Driver: "postgres", User: "root", Host: "127.0.0.1", Port: 5432, Hosts: []store.HostPort{{"127.0.0.1", 5432}}, Database: "test", Path: "/test", Params: url.Values{"sslmode": {"disable"}}}},
		{"cockroach://h:26257/mog", store.DSN{Driver: "cockroach", Host: "h", Port: 26257, Hosts: []store.HostPort{{"h", 26257}}, Database: "mog", Path: "/mog", Params: url.Values{}}},
		// The path as written is kept: a file backend's absolute path arrives whole.
		{"MyBackend:///var/lib/x.db", store.DSN{Driver: "mybackend", Database: "var/lib/x.db", Path: "/var/lib/x.db", Params: url.Values{}}},
		{"mybackend://h/a%2Fb/c", store.DSN{Driver: "mybackend", Host: "h", Hosts: []store.HostPort{{"h", 0}}, Database: "a/b/c", Path: "/a/b/c", Params: url.Values{}}},
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

// TestParseDBI_Syntax: a driver's own DBI syntax, as DBD::mysql's
// (':' or ';', three positional attributes).
func TestParseDBI_Syntax(t *testing.T) {
	syn := store.DBISyntax{Separators: ";:", Positional: []string{"db", "host", "port"}}
	for in, want := range map[string]store.DSN{
		"DBI:x:mogilefs:host=127.0.0.1":       {Driver: "x", Database: "mogilefs", Host: "127.0.0.1", Hosts: []store.HostPort{{"127.0.0.1", 0}}},
		"dbi:X:mogilefs:db1:3307":             {Driver: "x", Database: "mogilefs", Host: "db1", Port: 3307, Hosts: []store.HostPort{{"db1", 3307}}},
		"DBI:x:db=m;host=[::1]:port=3307":     {Driver: "x", Database: "m", Host: "::1", Port: 3307, Hosts: []store.HostPort{{"::1", 3307}}},
		"DBI:x:m:[2001:db8::1]:3307":          {Driver: "x", Database: "m", Host: "2001:db8::1", Port: 3307, Hosts: []store.HostPort{{"2001:db8::1", 3307}}},
		"DBI:x:m;x_opt=1:user=u:password=p=q": {Driver: "x", Database: "m", User: "u", Password: "p=q", Params: url.Values{"x_opt": {"1"}}},
	} {
		got, err := store.ParseDBI(in, syn)
		if err != nil {
			t.Errorf("ParseDBI(%q): %v", in, err)
			continue
		}
		if want.Params == nil {
			want.Params = url.Values{}
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("ParseDBI(%q) = %+v; want %+v", in, *got, want)
		}
	}
	for _, in := range []string{"DBI:x:a;b;3306;c", "DBI:x:m:h:notaport", "dbx:x:m", "DBI::m"} {
		if _, err := store.ParseDBI(in, syn); !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("ParseDBI(%q) error = %v; want ErrBadDSN", in, err)
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
		"DBI:Pg:a;b", // DBD::Pg, like most, has one positional attribute
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

func TestDSN_RedactedRoundTrips(t *testing.T) {
	for _, in := range []string{"mybackend:///var/lib/x.db", "mybackend://u:p@h:1/db?x=y", "DBI:Foo:dbname=m;host=h;port=2"} {
		d, err := store.ParseDSN(in)
		if err != nil {
			t.Fatal(err)
		}
		again, err := store.ParseDSN(d.Redacted())
		if err != nil || again.Database != d.Database || again.Host != d.Host || again.Port != d.Port {
			t.Errorf("ParseDSN(Redacted(%q) = %q) = %+v, %v; want %+v", in, d.Redacted(), again, err, d)
		}
	}
	// A caller may amend Database after parsing; Redacted shows the amendment.
	d, err := store.ParseDSN("mybackend://h/old")
	if err != nil {
		t.Fatal(err)
	}
	d.Database = "new"
	if r := d.Redacted(); r != "mybackend://h/new" {
		t.Errorf("Redacted() after amending Database = %q; want mybackend://h/new", r)
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
		"mybackend:///tmp/x.db?op_timeout=0":   0,
		"DBI:foo:db=x;op_timeout=1m":           time.Minute,
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
		"sqlite:///var/lib/m.db?max_idle_conns=1":           {1, 0},
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

func TestParseSeconds(t *testing.T) {
	for in, want := range map[string]time.Duration{"7": 7 * time.Second, "1.5s": 1500 * time.Millisecond, " 0 ": 0, "250ms": 250 * time.Millisecond} {
		if got, err := store.ParseSeconds(in); err != nil || got != want {
			t.Errorf("ParseSeconds(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "-2s", "soon", "", "1.5"} {
		if got, err := store.ParseSeconds(in); err == nil {
			t.Errorf("ParseSeconds(%q) = %v; want an error", in, got)
		}
	}
}
