package mysql_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
)

func TestConfigure(t *testing.T) {
	tests := []struct {
		dsn                 string
		net, addr, user, db string
		tls                 string
		dial, read, write   time.Duration
	}{
		{dsn: "mysql://mogile:secret@db1:3307/mogilefs", net: "tcp", addr: "db1:3307", user: "mogile", db: "mogilefs"},
		{dsn: "mysql:///mogilefs", net: "tcp", addr: "127.0.0.1:3306", db: "mogilefs"},
		{dsn: "mariadb://u@[::1]/m", net: "tcp", addr: "[::1]:3306", user: "u", db: "m"},
		{dsn: "DBI:mysql:mogilefs", net: "tcp", addr: "127.0.0.1:3306", db: "mogilefs"},
		{dsn: "DBI:mysql:database=m;host=db2;port=3310;user=u", net: "tcp", addr: "db2:3310", user: "u", db: "m"},
		{dsn: "DBI:mysql:database=m;host=/run/mysqld/mysqld.sock", net: "unix", addr: "/run/mysqld/mysqld.sock", db: "m"},
		{dsn: "DBI:mysql:database=m;mysql_socket=/tmp/my.sock;mysql_connect_timeout=7", net: "unix", addr: "/tmp/my.sock", db: "m", dial: 7 * time.Second},
		{dsn: "mysql://u@/m?socket=/tmp/my.sock", net: "unix", addr: "/tmp/my.sock", user: "u", db: "m"},
		{dsn: "mysql://h/m?tls=skip-verify&timeout=2s&readTimeout=1.5s&writeTimeout=3", net: "tcp", addr: "h:3306", db: "m",
			tls: "skip-verify", dial: 2 * time.Second, read: 1500 * time.Millisecond, write: 3 * time.Second},
		{dsn: "DBI:mysql:mogilefs:host=db3:mysql_enable_utf8=1", net: "tcp", addr: "db3:3306", db: "mogilefs"},
		{dsn: "DBI:mysql:mogilefs:[::1]:3307", net: "tcp", addr: "[::1]:3307", db: "mogilefs"},
		{dsn: "DBI:mysql:database=m;mysql_ssl=1;mysql_read_timeout=4", net: "tcp", addr: "127.0.0.1:3306", db: "m", tls: "true", read: 4 * time.Second},
	}
	for _, tt := range tests {
		d, err := store.ParseDSN(tt.dsn)
		if err != nil {
			t.Fatalf("ParseDSN(%q): %v", tt.dsn, err)
		}
		main, lock, err := mysql.Configure(d)
		if err != nil {
			t.Errorf("Configure(%q): %v", tt.dsn, err)
			continue
		}
		if main.Net != tt.net || main.Addr != tt.addr || main.User != tt.user || main.DBName != tt.db {
			t.Errorf("Configure(%q) = %s %s user %q db %q; want %s %s user %q db %q",
				tt.dsn, main.Net, main.Addr, main.User, main.DBName, tt.net, tt.addr, tt.user, tt.db)
		}
		if main.TLSConfig != tt.tls || main.Timeout != tt.dial || main.ReadTimeout != tt.read || main.WriteTimeout != tt.write {
			t.Errorf("Configure(%q): tls %q timeouts %v/%v/%v; want %q %v/%v/%v",
				tt.dsn, main.TLSConfig, main.Timeout, main.ReadTimeout, main.WriteTimeout, tt.tls, tt.dial, tt.read, tt.write)
		}
		if !main.InterpolateParams || main.Collation != "utf8mb4_general_ci" {
			t.Errorf("Configure(%q): interpolateParams %v collation %q; want true, utf8mb4_general_ci", tt.dsn, main.InterpolateParams, main.Collation)
		}
		// Lock sessions wait in GET_LOCK as long as asked: no read timeout.
		if lock.ReadTimeout != 0 || lock.Addr != main.Addr || lock.DBName != main.DBName || lock.WriteTimeout != main.WriteTimeout {
			t.Errorf("Configure(%q): lock config read timeout %v addr %s db %s; want 0, %s, %s", tt.dsn, lock.ReadTimeout, lock.Addr, lock.DBName, main.Addr, main.DBName)
		}
	}
}

func TestConfigure_Refuses(t *testing.T) {
	for _, dsn := range []string{
		"mysql://h/",                               // no database
		"mysql://h/m?charset=latin1",               // unknown parameter
		"mysql://h/m?tls=maybe",                    // bad value
		"mysql://h/m?timeout=-1s",                  // not positive
		"mysql://h/m?timeout=soon",                 // not a duration
		"mysql://h/m?socket=relative.sock",         // not absolute
		"mysql://h:3307/m?socket=/tmp/s",           // both a port and a socket
		"mysql://h/m?timeout=1s&timeout=2s",        // twice
		"DBI:mysql:database=m;mysql_ssl=yes",       // DBD::mysql takes 0 or 1
		"DBI:mysql:database=m;mysql_compression=1", // known to DBD::mysql, not here
		"mysql://h1,h2/m",                          // one server only
		"DBI:mysql:database=m;host=h1,h2",          // the same in DBI form
	} {
		d, err := store.ParseDSN(dsn)
		if err != nil {
			t.Fatalf("ParseDSN(%q): %v", dsn, err)
		}
		if _, _, err := mysql.Configure(d); !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("Configure(%q): got %v; want %v", dsn, err, store.ErrBadDSN)
		}
	}
}

// TestParseDSN_DBIForms: the db_dsn spellings of real MogileFS configs, as
// Perl's DBD::mysql reads them (':' or ';', positional db, host, port).
func TestParseDSN_DBIForms(t *testing.T) {
	type want struct {
		db, host string
		port     int
	}
	for in, w := range map[string]want{
		"DBI:mysql:mogilefs:host=127.0.0.1":                   {"mogilefs", "127.0.0.1", 0}, // the original's sample config
		"dbi:mysql:mogilefs:127.0.0.1":                        {"mogilefs", "127.0.0.1", 0},
		"DBI:mysql:mogilefs:db1.example.com:3307":             {"mogilefs", "db1.example.com", 3307},
		"DBI:mysql:database=mogilefs:host=db1:port=3307":      {"mogilefs", "db1", 3307},
		"DBI:MySQL:db=mogilefs;host=db1;port=3307":            {"mogilefs", "db1", 3307},
		"DBI:mysql:dbname=mogilefs;host=db1":                  {"mogilefs", "db1", 0},
		"DBI:mysql:mogilefs;host=/var/run/mysqld/mysqld.sock": {"mogilefs", "/var/run/mysqld/mysqld.sock", 0},
		"DBI:mariadb:mogilefs;host=db1":                       {"mogilefs", "db1", 0},
		"DBI:MariaDB:mogilefs:[::1]:3307":                     {"mogilefs", "::1", 3307},
		"mariadb://u@db1/mogilefs":                            {"mogilefs", "db1", 0},
	} {
		d, err := store.ParseDSN(in)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", in, err)
			continue
		}
		if d.Driver != "mysql" || d.Database != w.db || d.Host != w.host || d.Port != w.port {
			t.Errorf("ParseDSN(%q) = %+v; want driver mysql, %+v", in, d, w)
		}
	}
	for _, in := range []string{
		"DBI:mysql:a;b;3306;c", // DBD::mysql has three positional attributes
		"DBI:mysql:m:h:notaport",
		"mysql:opaque",
	} {
		if _, err := store.ParseDSN(in); !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("ParseDSN(%q) error = %v; want ErrBadDSN", in, err)
		}
	}
}
