package tracker_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker"
)

// runWith starts a tracker with args and reports Run's error, or nil once
// it served a noop (and was stopped again).
func runWith(t *testing.T, args ...string) error {
	t.Helper()
	ready := make(chan *tracker.Tracker, 1)
	var stderr bytes.Buffer
	m := &tracker.Main{Environ: []string{}, Stderr: &stderr, Ready: func(tr *tracker.Tracker) { ready <- tr }}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, append([]string{"-s", "-l", "127.0.0.1:0"}, args...)) }()
	select {
	case tr := <-ready:
		tt := &testTracker{t: t, tr: tr, addr: tr.Addrs()[0].String()}
		tt.dial().want("noop", "OK ")
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run %q after cancel: %v", args, err)
		}
		return nil
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("Run %q never became ready:\n%s", args, stderr.String())
		return nil
	}
}

// TestMain_RealWorldDSNs: a tracker started with each db_dsn form found in
// MogileFS configs connects, on each backend.
func TestMain_RealWorldDSNs(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		for i, f := range []string{"DBI:SQLite:dbname=%s", "dbi:sqlite:db=%s", "DBI:SQLite:%s", "sqlite://%s", "sqlite3://%s"} {
			dsn := fmt.Sprintf(f, filepath.Join(dir, fmt.Sprintf("m%d.db", i)))
			if err := runWith(t, "--dsn", dsn); err != nil {
				t.Errorf("db_dsn %q: %v", dsn, err)
			}
		}
	})
	forms := map[string][]string{
		"mysql": {
			"DBI:mysql:{db}:host={h}:port={p}", // the sample config's form, with a port
			"DBI:mysql:{db}:{h}:{p}",
			"dbi:MySQL:database={db};host={h};port={p};mysql_connect_timeout=5;mysql_enable_utf8=1",
			"DBI:mysql:db={db};host={h};port={p}",
			"mysql://{h}:{p}/{db}",
		},
		"postgres": {
			"DBI:Pg:dbname={db};host={h};port={p};sslmode=disable",
			"dbi:pg:database={db};host={h};port={p};sslmode=disable;application_name=mogilefsd",
			"DBI:Pg:dbname={db};host={h},{h};port={p},{p};sslmode=disable;target_session_attrs=read-write",
			"postgresql://{h}:{p},{h}:{p}/{db}?sslmode=disable&target_session_attrs=read-write",
		},
	}
	for _, name := range []string{"mysql", "postgres"} {
		t.Run(name, func(t *testing.T) {
			d, err := store.ParseDSN(backends[name](t))
			if err != nil {
				t.Fatal(err)
			}
			port := cmp.Or(d.Port, map[string]int{"mysql": 3306, "postgres": 5432}[name])
			host := d.Host
			if strings.Contains(host, ":") {
				host = "[" + host + "]"
			}
			list := forms[name]
			if name == "mysql" && (d.Host == "127.0.0.1" || d.Host == "localhost") && port == 3306 {
				for _, sock := range []string{"/run/mysqld/mysqld.sock", "/var/run/mysqld/mysqld.sock"} {
					if _, err := os.Stat(sock); err == nil {
						list = append(list, "DBI:mysql:{db};mysql_socket="+sock, "DBI:mysql:database={db};host="+sock)
						break
					}
				}
			}
			for _, f := range list {
				dsn := strings.NewReplacer("{db}", d.Database, "{h}", host, "{p}", fmt.Sprint(port)).Replace(f)
				args := []string{"--dsn", dsn}
				if d.User != "" {
					args = append(args, "--dbuser", d.User)
				}
				if d.Password != "" {
					args = append(args, "--dbpass", d.Password)
				}
				if err := runWith(t, args...); err != nil {
					t.Errorf("db_dsn %q: %v", dsn, err)
				}
			}
		})
	}
}

// TestMain_BadDSNFailsAtStart: a malformed or unusable db_dsn stops the
// tracker at start, saying what is wrong, without the password.
func TestMain_BadDSNFailsAtStart(t *testing.T) {
	for dsn, want := range map[string]string{
		"DBI:mysql:database=mogilefs;password=s3cret;port=abc":    "bad port",
		"DBI:mysql:mogilefs:host=db:password=s3cret:mysql_nope=1": "mysql_nope",
		"mysql://mog:s3cret@127.0.0.1:99999/mogilefs":             "bad port",
		"postgres://mog:s3cret@a,b/mogilefs?sslmod=disable":       "sslmod",
		"DBI:Pg:dbname=m;host=a,b,c;port=1,2;password=s3cret":     "3 hosts",
		"DBI:nosuch:dbname=m;password=s3cret":                     "forgot to import",
	} {
		err := runWith(t, "--dsn", dsn)
		if err == nil {
			t.Errorf("db_dsn %q: tracker started", dsn)
			continue
		}
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("db_dsn %q: %v; want it to say %q and not show the password", dsn, err, want)
		}
	}
}

// TestDrivers_OwnNames: the names and aliases gomogile's backends register.
// store's "forgot to import" hint knows these aliases (store/registry.go
// ownAliases, tested in store): a new alias belongs in both.
func TestDrivers_OwnNames(t *testing.T) {
	want := []string{"file", "mariadb", "mysql", "pg", "postgres", "postgresql", "sqlite", "sqlite3"}
	if got := store.Drivers(); !slices.Equal(got, want) {
		t.Errorf("store.Drivers() = %v; want %v", got, want)
	}
}
