package postgres_test

import (
	"cmp"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/postgres"
)

func TestParseDSN_LockSettings(t *testing.T) {
	for _, tc := range []struct {
		dsn                string
		lease, reap, bound string
		notify             bool
	}{
		{"postgres://u@h/db", "10s", "5s", "15s", true},
		{"postgresql://u@h:5433/db?lock_lease=2s", "2s", "1s", "3s", true},
		{"postgres://h/db?lock_lease=30s&lock_reap=1s&lock_notify=false", "30s", "1s", "31s", false},
		{"DBI:Pg:dbname=mogilefs;host=db1;port=5432;lock_lease=4s", "4s", "2s", "6s", true},
		{"postgres://h/db?sslmode=disable&default_query_exec_mode=simple_protocol&application_name=x", "10s", "5s", "15s", true},
	} {
		d, err := store.ParseDSN(tc.dsn)
		if err != nil {
			t.Fatalf("ParseDSN(%q): %v", tc.dsn, err)
		}
		lease, reap, bound, notify, err := postgres.ParseLockDSN(d)
		if err != nil {
			t.Fatalf("%q: %v", tc.dsn, err)
		}
		if lease != tc.lease || reap != tc.reap || bound != tc.bound || notify != tc.notify {
			t.Errorf("%q: lease %s, reap %s, bound %s, notify %v; want %s, %s, %s, %v",
				tc.dsn, lease, reap, bound, notify, tc.lease, tc.reap, tc.bound, tc.notify)
		}
	}
}

// TestOpen_BadDSN: every refusal is store.ErrBadDSN and happens before any
// connection attempt (the host does not exist).
func TestOpen_BadDSN(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u@nowhere.invalid/db?sslmod=disable", // typo
		"postgres://u@nowhere.invalid/db?host=/tmp",      // not one of ours
		"postgres://u@nowhere.invalid/db?default_query_exec_mode=fast",
		"postgres://u@nowhere.invalid/db?lock_lease=10", // no unit
		"postgres://u@nowhere.invalid/db?lock_lease=100ms",
		"postgres://u@nowhere.invalid/db?lock_reap=-1s",
		"postgres://u@nowhere.invalid/db?lock_notify=maybe",
		"postgres://u@nowhere.invalid/db?lock_owner=",
		"postgres://u@nowhere.invalid/db?lock_lease=1s&lock_lease=2s",
		"postgres://u@nowhere.invalid/",
		"DBI:Pg:host=nowhere.invalid",
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		start := time.Now()
		s, err := store.Open(ctx, dsn)
		cancel()
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded; want %v", dsn, store.ErrBadDSN)
			continue
		}
		if !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("Open(%q): got %v; want %v", dsn, err, store.ErrBadDSN)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Open(%q) took %v to refuse; want no connection attempt", dsn, d)
		}
	}
}

// TestOpen_Aliases: the DBI form and both schemes reach this backend.
func TestOpen_Aliases(t *testing.T) {
	dsn := testdb.Postgres(t)
	d, err := store.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	dbi := "DBI:Pg:dbname=" + d.Database + ";host=" + d.Host + ";port=" + strconv.Itoa(cmp.Or(d.Port, 5432)) + ";user=" + d.User
	if d.Password != "" {
		// A server that wants one (the dockertest container's).
		dbi += ";password=" + d.Password
	}
	for k := range d.Params {
		dbi += ";" + k + "=" + d.Params.Get(k)
	}
	forms := []string{dsn, "postgresql" + dsn[len("postgres"):], dbi}
	if d.Host == "127.0.0.1" || d.Host == "localhost" {
		// The same server through its Unix socket, if it has the usual one.
		if _, err := os.Stat("/var/run/postgresql/.s.PGSQL." + strconv.Itoa(cmp.Or(d.Port, 5432))); err == nil {
			forms = append(forms, strings.Replace(dbi, ";host="+d.Host, ";host=/var/run/postgresql", 1))
		}
	}
	for _, s := range forms {
		st := open(t, s)
		info, err := st.Info(t.Context())
		if err != nil {
			t.Fatalf("Info via %q: %v", s, err)
		}
		if info.Driver != "postgres" || info.ServerVersion == "" {
			t.Errorf("Info via %q = %+v; want driver postgres and a server version", s, info)
		}
		if c := st.Capabilities(); c.LockMechanism != "lease" || !c.CrossProcess || c.DeadOwnerBound != 1500*time.Millisecond {
			t.Errorf("Capabilities = %+v; want lease, cross-process, bound 1.5s", c)
		}
	}
}

// TestTestdb_NoServer: without a DSN and without Docker, testdb gives up at
// once with a skip (a failure under CI), never hanging on a pull.
func TestTestdb_NoServer(t *testing.T) {
	if os.Getenv("DOCKER_HOST") != "" {
		t.Skip("a Docker engine may be reachable")
	}
	if _, err := os.Stat("/var/run/docker.sock"); err == nil {
		t.Skip("a Docker engine may be reachable")
	}
	var skipped bool
	start := time.Now()
	t.Run("Probe", func(t *testing.T) {
		t.Setenv(testdb.EnvPostgres, "")
		t.Setenv("CI", "")
		t.Cleanup(func() { skipped = t.Skipped() })
		testdb.Postgres(t)
		t.Error("testdb.Postgres returned a DSN with no server to offer")
	})
	if !skipped {
		t.Errorf("testdb.Postgres did not skip without a server")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("testdb.Postgres took %v to give up; want it quick", d)
	}
}

// TestParseDSN_DBIForms: DBD::Pg's db_dsn spellings and the URL aliases,
// read without a server.
func TestParseDSN_DBIForms(t *testing.T) {
	type want struct {
		db, host string
		port     int
		params   string
	}
	for in, w := range map[string]want{
		"DBI:Pg:dbname=mogilefs;host=db1;port=5433":               {"mogilefs", "db1", 5433, ""},
		"DBI:pg:db=mogilefs":                                      {"mogilefs", "", 0, ""},
		"dbi:PG:database=mogilefs;host=/var/run/postgresql":       {"mogilefs", "/var/run/postgresql", 0, ""},
		"DBI:Pg:database=mogilefs;options=-c statement_timeout=0": {"mogilefs", "", 0, "options=-c+statement_timeout%3D0"},
		"DBI:Pg:mogilefs":                                         {"mogilefs", "", 0, ""},
		"postgresql://u:p@h/d":                                    {"d", "h", 0, ""},
		"PG://h:5433/d?sslmode=disable":                           {"d", "h", 5433, "sslmode=disable"},
	} {
		d, err := store.ParseDSN(in)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", in, err)
			continue
		}
		if d.Driver != "postgres" || d.Database != w.db || d.Host != w.host || d.Port != w.port || d.Params.Encode() != w.params {
			t.Errorf("ParseDSN(%q) = %+v; want driver postgres, %+v", in, d, w)
		}
	}
	if _, err := store.ParseDSN("DBI:Pg:a;b"); !errors.Is(err, store.ErrBadDSN) {
		t.Errorf("two bare DBD::Pg attributes: error %v; want ErrBadDSN", err)
	}
}
