package dbinstance

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// BouncerOptions configure StartPgBouncer. The zero value is fine.
type BouncerOptions struct {
	// PoolMode is "transaction" (the default), "session" or "statement".
	PoolMode string
	// PoolSize is the server connections per database and user; 0 = 20.
	PoolSize int
	// Settings are extra [pgbouncer] settings (name → value).
	Settings map[string]string
	// Dir is the parent of the instance's directory; "" = os.TempDir().
	Dir string
	// Logf, if set, gets one line per lifecycle step.
	Logf func(format string, args ...any)
}

// PgBouncer is a private PgBouncer in front of a PostgreSQL server.
type PgBouncer struct {
	o      BouncerOptions
	bin    string
	acct   *account
	dir    string
	port   int
	target string

	mu   sync.Mutex
	proc *proc
}

// StartPgBouncer starts PgBouncer on a free 127.0.0.1 port, forwarding
// every database to target (host:port, e.g. a Postgres's Addr, or a
// faultproxy in front of it) as the connecting user, with trust auth, and
// returns once a query through it succeeds. Call Cleanup when done.
func StartPgBouncer(ctx context.Context, target string, o BouncerOptions) (*PgBouncer, error) {
	host, tport, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("dbinstance: pgbouncer target %q: %w", target, err)
	}
	if err := Available("pgbouncer"); err != nil {
		return nil, err
	}
	bin, _ := lookBin("pgbouncer", "/usr/sbin", "/usr/bin")
	acct, _ := serviceAccount("postgres")
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := tempDir(o.Dir, "gomogile-bouncer-*", acct)
	if err != nil {
		return nil, err
	}
	b := &PgBouncer{o: o, bin: bin, acct: acct, dir: dir, port: port, target: target}
	if o.PoolMode == "" {
		o.PoolMode = "transaction"
	}
	if o.PoolSize <= 0 {
		o.PoolSize = 20
	}
	set := map[string]string{
		"listen_addr":               "127.0.0.1",
		"listen_port":               fmt.Sprint(port),
		"unix_socket_dir":           "",
		"auth_type":                 "trust",
		"auth_file":                 filepath.Join(dir, "userlist.txt"),
		"pool_mode":                 o.PoolMode,
		"default_pool_size":         fmt.Sprint(o.PoolSize),
		"max_client_conn":           "1000",
		"ignore_startup_parameters": "extra_float_digits",
		"admin_users":               "root",
		"server_login_retry":        "1",
	}
	for k, v := range o.Settings {
		set[k] = v
	}
	var ini strings.Builder
	fmt.Fprintf(&ini, "[databases]\n* = host=%s port=%s\n\n[pgbouncer]\n", host, tport)
	for k, v := range set {
		fmt.Fprintf(&ini, "%s = %s\n", k, v)
	}
	files := map[string]string{
		"pgbouncer.ini": ini.String(),
		"userlist.txt":  "\"root\" \"\"\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			b.Cleanup()
			return nil, fmt.Errorf("dbinstance: %w", err)
		}
	}
	if err := acct.chownAll(dir); err != nil {
		b.Cleanup()
		return nil, fmt.Errorf("dbinstance: %w", err)
	}
	if err := b.Start(ctx); err != nil {
		b.Cleanup()
		return nil, err
	}
	b.logf("pgbouncer (%s pooling) on %s → %s ready", o.PoolMode, b.Addr(), target)
	return b, nil
}

func (b *PgBouncer) logf(format string, args ...any) {
	if b.o.Logf != nil {
		b.o.Logf("dbinstance: "+format, args...)
	}
}

func (b *PgBouncer) logPath() string { return filepath.Join(b.dir, "pgbouncer.log") }

// Addr is "127.0.0.1:port".
func (b *PgBouncer) Addr() string { return fmt.Sprintf("127.0.0.1:%d", b.port) }

// DSN is a pgx URL for database db as root through the pooler.
func (b *PgBouncer) DSN(db string) string {
	return fmt.Sprintf("postgres://root@%s/%s?sslmode=disable", b.Addr(), db)
}

// Start starts PgBouncer (again) and waits until a query through it
// succeeds (which needs the target up).
func (b *PgBouncer) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc != nil && b.proc.running() {
		return fmt.Errorf("dbinstance: pgbouncer on %s is already running", b.Addr())
	}
	pr, err := startProc(b.acct, b.logPath(), b.bin, filepath.Join(b.dir, "pgbouncer.ini"))
	if err != nil {
		return err
	}
	b.proc = pr
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := pgconn.Connect(actx, b.DSN("postgres"))
		if err == nil {
			_, err = c.Exec(actx, "SELECT 1").ReadAll()
			c.Close(context.Background())
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-pr.exited:
			return fmt.Errorf("dbinstance: pgbouncer on %s exited (%v):\n%s", b.Addr(), pr.err, tail(b.logPath()))
		case <-ctx.Done():
			pr.kill()
			return fmt.Errorf("dbinstance: pgbouncer on %s not ready: %w (last: %v)", b.Addr(), ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Running reports whether PgBouncer's process is still running.
func (b *PgBouncer) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.proc != nil && b.proc.running()
}

// LogTail is the end of PgBouncer's log, for a report of its death.
func (b *PgBouncer) LogTail() string { return tail(b.logPath()) }

// Kill sends SIGKILL to PgBouncer.
func (b *PgBouncer) Kill() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc == nil {
		return nil
	}
	return b.proc.kill()
}

// Stop shuts PgBouncer down and waits for it; a no-op when stopped.
func (b *PgBouncer) Stop() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc == nil {
		return nil
	}
	// SIGTERM is an immediate shutdown; SIGINT would wait for clients.
	return b.proc.stop(sigTerm, 30*time.Second)
}

// Cleanup stops PgBouncer and removes its directory.
func (b *PgBouncer) Cleanup() error {
	err := b.Stop()
	if rerr := os.RemoveAll(b.dir); err == nil {
		err = rerr
	}
	return err
}
