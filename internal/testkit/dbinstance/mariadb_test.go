package dbinstance_test

import (
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
)

func TestMariaDBKillStart(t *testing.T) {
	need(t, "mariadb")
	ctx := ctxT(t, 120*time.Second)
	t0 := time.Now()
	m, err := dbinstance.StartMariaDB(ctx, dbinstance.MyOptions{Logf: t.Logf, Settings: map[string]string{"max-connections": "77"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Cleanup(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(m.Dir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", m.Dir(), err)
		}
	})
	t.Logf("StartMariaDB took %v", time.Since(t0))
	if want := "mysql://root@" + m.Addr() + "/test"; m.DSN("test") != want {
		t.Errorf("DSN %q, want %q", m.DSN("test"), want)
	}
	db, err := sql.Open("mysql", m.DriverDSN("test"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var maxConns int
	if err := db.QueryRowContext(ctx, "SELECT @@max_connections").Scan(&maxConns); err != nil || maxConns != 77 {
		t.Errorf("max_connections %d (%v), want the 77 of Settings", maxConns, err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := db.PingContext(ctx); err == nil {
		t.Fatal("ping after Kill succeeded")
	}
	t0 = time.Now()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart with crash recovery took %v", time.Since(t0))
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 100 {
		t.Fatalf("after crash restart: %d rows (%v), want 100", n, err)
	}
	log, _ := os.ReadFile(m.Dir() + "/mariadb.log")
	if !strings.Contains(string(log), "crash recovery") {
		t.Errorf("no crash recovery in the server log:\n%s", log)
	}
}
