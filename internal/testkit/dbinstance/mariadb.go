package dbinstance

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// MyOptions configure StartMariaDB. The zero value is fine.
type MyOptions struct {
	// Settings are extra mariadbd options without the leading "--"
	// (name → value), overriding the defaults below.
	Settings map[string]string
	// Dir is the parent of the instance's directory; "" = os.TempDir().
	Dir string
	// Logf, if set, gets one line per lifecycle step.
	Logf func(format string, args ...any)
}

// myDefaults keep the server small and crashes honest: every commit is
// flushed to the redo log (innodb_flush_log_at_trx_commit=1), so an
// acknowledged commit survives SIGKILL.
var myDefaults = map[string]string{
	"bind-address":                   "127.0.0.1",
	"skip-name-resolve":              "",
	"innodb-buffer-pool-size":        "32M",
	"innodb-log-file-size":           "16M",
	"innodb-flush-log-at-trx-commit": "1",
	"max-connections":                "300",
	"character-set-server":           "utf8mb4",
	"collation-server":               "utf8mb4_general_ci",
}

// MariaDB is a private MariaDB server.
type MariaDB struct {
	o    MyOptions
	bin  string
	dir  string
	data string
	sock string
	port int
	// acct is the OS user mariadbd runs as from the start (a Galera node:
	// its state transfer refuses root), nil for this process's user, in
	// which case asUsr is its --user when that is root.
	acct  *account
	asUsr string

	mu   sync.Mutex
	proc *proc
}

// StartMariaDB initialises a data directory (mariadb-install-db) in a
// temporary directory, starts mariadbd on a free 127.0.0.1 port with its
// own socket, lets root in over TCP with an empty password and creates
// database "test". Call Cleanup when done.
func StartMariaDB(ctx context.Context, o MyOptions) (*MariaDB, error) {
	t0 := time.Now()
	m, err := newMariaDB(o, nil)
	if err != nil {
		return nil, err
	}
	if err := m.Start(ctx); err != nil {
		m.Cleanup()
		return nil, err
	}
	if err := m.grantTCP(ctx); err != nil {
		m.Cleanup()
		return nil, err
	}
	m.logf("mariadb on %s (%s) ready in %v", m.Addr(), m.dir, time.Since(t0).Round(time.Millisecond))
	return m, nil
}

// newMariaDB makes an instance, not yet started: a free port, and a
// temporary directory holding a copy of the template data directory, both
// owned by acct (nil: this process's user).
func newMariaDB(o MyOptions, acct *account) (*MariaDB, error) {
	if err := Available("mariadb"); err != nil {
		return nil, err
	}
	bin, _ := lookBin("mariadbd", "/usr/sbin", "/usr/libexec")
	install, _ := lookBin("mariadb-install-db", "/usr/bin", "/usr/sbin")
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := tempDir(o.Dir, "gomogile-my-*", acct)
	if err != nil {
		return nil, err
	}
	m := &MariaDB{o: o, bin: bin, dir: dir, data: filepath.Join(dir, "data"), sock: filepath.Join(dir, "mysqld.sock"), port: port, acct: acct}
	if acct == nil && os.Geteuid() == 0 {
		m.asUsr = "root"
	}
	tmpl, err := templateData("mariadb "+install+" "+o.Dir, o.Dir, nil, func(_ context.Context, dir string) (string, error) {
		data := filepath.Join(dir, "data")
		args := []string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal",
			"--skip-test-db", "--skip-name-resolve", "--innodb-log-file-size=" + myDefaults["innodb-log-file-size"],
			// Temporary tables in a directory of the instance's own, not the
			// shared /tmp, where another server's or a cleanup's files meet
			// them (seen: "Could not remove temporary table '/tmp/#sql-…'"
			// aborting a bootstrap while other servers ran).
			"--tmpdir=" + dir}
		if os.Geteuid() == 0 {
			args = append(args, "--user=root")
		}
		return data, run(nil, filepath.Join(dir, "install.log"), install, args...)
	})
	if err == nil {
		err = copyTree(tmpl, m.data, acct)
	}
	if err != nil {
		m.Cleanup()
		return nil, err
	}
	return m, nil
}

func (m *MariaDB) logf(format string, args ...any) {
	if m.o.Logf != nil {
		m.o.Logf("dbinstance: "+format, args...)
	}
}

func (m *MariaDB) logPath() string { return filepath.Join(m.dir, "mariadb.log") }

// grantTCP lets root in from 127.0.0.1 (install-db creates only
// root@localhost, which --skip-name-resolve never matches over TCP).
func (m *MariaDB) grantTCP(ctx context.Context) error {
	cfg := gomysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", m.sock
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("dbinstance: mariadb: %w", err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	for _, q := range []string{
		"CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'",
		"GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
		"CREATE DATABASE IF NOT EXISTS test CHARACTER SET utf8mb4",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("dbinstance: mariadb: %s: %w", q, err)
		}
	}
	return nil
}

// Addr is "127.0.0.1:port".
func (m *MariaDB) Addr() string { return fmt.Sprintf("127.0.0.1:%d", m.port) }

// Port is the server's TCP port; it stays the same across Kill and Start.
func (m *MariaDB) Port() int { return m.port }

// Dir is the instance's directory (data in Dir()/data, log in
// Dir()/mariadb.log, socket Dir()/mysqld.sock).
func (m *MariaDB) Dir() string { return m.dir }

// DSN is a gomogile DSN for database db as root with no password.
func (m *MariaDB) DSN(db string) string {
	return fmt.Sprintf("mysql://root@%s/%s", m.Addr(), db)
}

// DriverDSN is the go-sql-driver/mysql form of DSN.
func (m *MariaDB) DriverDSN(db string) string {
	cfg := gomysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", m.Addr(), db
	return cfg.FormatDSN()
}

// Start starts mariadbd (again) on its port and data directory and
// returns once it accepts connections. After Kill this runs InnoDB crash
// recovery.
func (m *MariaDB) Start(ctx context.Context) error { return m.start(ctx) }

// start is Start with extra mariadbd arguments for this start only (a
// Galera node's --wsrep-new-cluster).
func (m *MariaDB) start(ctx context.Context, extra ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil && m.proc.running() {
		return fmt.Errorf("dbinstance: mariadb on %s is already running", m.Addr())
	}
	set := map[string]string{}
	for k, v := range myDefaults {
		set[k] = v
	}
	for k, v := range m.o.Settings {
		set[k] = v
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []string{"--no-defaults", "--datadir=" + m.data, "--socket=" + m.sock,
		fmt.Sprintf("--port=%d", m.port), "--pid-file=" + filepath.Join(m.dir, "mariadb.pid"),
		"--log-error=" + m.logPath(), "--tmpdir=" + m.dir}
	if m.asUsr != "" {
		args = append(args, "--user="+m.asUsr)
	}
	for _, k := range keys {
		if set[k] == "" {
			args = append(args, "--"+k)
		} else {
			args = append(args, "--"+k+"="+set[k])
		}
	}
	args = append(args, extra...)
	pr, err := startProc(m.acct, m.logPath(), m.bin, args...)
	if err != nil {
		return err
	}
	m.proc = pr
	if err := m.waitReady(ctx, pr); err != nil {
		pr.kill()
		return err
	}
	return nil
}

func (m *MariaDB) waitReady(ctx context.Context, pr *proc) error {
	cfg := gomysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", m.sock
	cfg.Timeout = 2 * time.Second
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("dbinstance: mariadb: %w", err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = db.PingContext(actx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-pr.exited:
			return fmt.Errorf("dbinstance: mariadbd on %s exited (%v):\n%s", m.Addr(), pr.err, tail(m.logPath()))
		case <-ctx.Done():
			return fmt.Errorf("dbinstance: mariadb on %s not ready: %w (last: %v)", m.Addr(), ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL to mariadbd — a crash — and returns once it is gone.
func (m *MariaDB) Kill() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return nil
	}
	m.logf("mariadb on %s: SIGKILL", m.Addr())
	return m.proc.kill()
}

// Stop shuts mariadbd down cleanly and waits for it; a no-op when stopped.
func (m *MariaDB) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return nil
	}
	return m.proc.stop(sigTerm, 60*time.Second)
}

// Pid is the server process's id (the postmaster's for PostgreSQL), 0
// before the first Start.
func (m *MariaDB) Pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return 0
	}
	return m.proc.pid()
}

// Running reports whether mariadbd is alive.
func (m *MariaDB) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc != nil && m.proc.running()
}

// Cleanup stops the server and removes its directory.
func (m *MariaDB) Cleanup() error {
	err := m.Stop()
	if rerr := os.RemoveAll(m.dir); err == nil {
		err = rerr
	}
	return err
}
