package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
)

// privateDB is a MariaDB server of the test's own (internal/testkit/dbinstance:
// the installed binaries, a temporary directory, a port of its own), so
// the test may kill it with SIGKILL and start it again, which it must never
// do to the shared server.
type privateDB struct {
	t testing.TB
	m *dbinstance.MariaDB
}

// startPrivateMariaDB starts one for t, stopped and removed when t ends,
// or skips t where the binaries are not installed.
func startPrivateMariaDB(t testing.TB) *privateDB {
	t.Helper()
	if err := dbinstance.Available("mariadb"); err != nil {
		t.Skipf("private MariaDB: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := dbinstance.StartMariaDB(ctx, dbinstance.MyOptions{Logf: t.Logf})
	if err != nil {
		t.Fatalf("private MariaDB: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Cleanup(); err != nil {
			t.Errorf("private MariaDB cleanup: %v", err)
		}
	})
	return &privateDB{t: t, m: m}
}

// DSN is the private server's database "test".
func (p *privateDB) DSN() string { return p.m.DSN("test") }

// Kill ends the server with SIGKILL, as a crash would, and waits for it.
func (p *privateDB) Kill() {
	p.t.Helper()
	if err := p.m.Kill(); err != nil {
		p.t.Fatalf("kill private MariaDB: %v", err)
	}
}

// Start starts it again on the same data and waits until it answers.
func (p *privateDB) Start() {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.m.Start(ctx); err != nil {
		p.t.Fatalf("restart private MariaDB: %v", err)
	}
}
