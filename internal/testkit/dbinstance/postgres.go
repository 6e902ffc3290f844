package dbinstance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGOptions configure StartPostgres. The zero value is fine.
type PGOptions struct {
	// Settings are extra postgresql.conf settings (name → value as it
	// would be written in the file, e.g. "'on'" or "64MB"); they override
	// the defaults below.
	Settings map[string]string
	// Dir is the parent of the instance's directory; "" = os.TempDir().
	Dir string
	// Logf, if set, gets one line per lifecycle step.
	Logf func(format string, args ...any)
}

// pgDefaults keep startup quick and small and crashes honest: fsync and
// synchronous_commit stay on so an acknowledged commit survives SIGKILL,
// and the WAL settings allow a streaming standby.
var pgDefaults = map[string]string{
	"listen_addresses":   "'127.0.0.1'",
	"shared_buffers":     "16MB",
	"max_connections":    "100",
	"fsync":              "on",
	"synchronous_commit": "on",
	"full_page_writes":   "on",
	"wal_level":          "replica",
	"max_wal_senders":    "8",
	"wal_keep_size":      "64MB",
	"hot_standby":        "on",
	"huge_pages":         "off",
	"logging_collector":  "off",
	"log_min_messages":   "warning",
	"ssl":                "off",
	// A standby whose primary crashed and restarted reconnects within
	// this, not the default 5s: under synchronous replication the
	// primary's commits wait for it meanwhile.
	"wal_retrieve_retry_interval": "'200ms'",
}

// Postgres is a private PostgreSQL server (a primary or a standby).
type Postgres struct {
	o       PGOptions
	bin     string
	acct    *account
	dir     string // the instance's directory (socket, logs)
	data    string // its data directory
	port    int
	standby bool

	mu   sync.Mutex
	proc *proc
}

// StartPostgres initialises a new cluster (trust auth, superuser "root")
// in a temporary directory, starts it on a free 127.0.0.1 port and creates
// database "test". Call Cleanup when done.
func StartPostgres(ctx context.Context, o PGOptions) (*Postgres, error) {
	p, err := newPostgres(o)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	tmpl, err := templateData("postgres "+p.bin+" "+o.Dir, o.Dir, p.acct, func(ctx context.Context, dir string) (string, error) {
		return pgTemplate(ctx, p.bin, p.acct, dir)
	})
	if err == nil {
		err = copyTree(tmpl, p.data, p.acct)
	}
	if err == nil {
		err = p.writeConf()
	}
	if err == nil {
		err = p.Start(ctx)
	}
	if err != nil {
		p.Cleanup()
		return nil, err
	}
	p.logf("postgres primary on %s (%s) ready in %v", p.Addr(), p.dir, time.Since(t0).Round(time.Millisecond))
	return p, nil
}

// pgTemplate initialises a cluster in dir (trust auth, superuser root,
// database test) and shuts it down cleanly, to be copied by StartPostgres.
// Copies share its system identifier, which nothing here depends on.
func pgTemplate(ctx context.Context, bin string, acct *account, dir string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	t := &Postgres{bin: bin, acct: acct, dir: dir, data: filepath.Join(dir, "data"), port: port}
	// --no-sync: the bootstrap files need not reach the disk now (only a
	// machine crash would lose them); the server itself runs with fsync.
	if err := run(acct, t.logPath(), filepath.Join(bin, "initdb"),
		"-D", t.data, "-U", "root", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions"); err != nil {
		return "", err
	}
	if err := t.writeConf(); err != nil {
		return "", err
	}
	if err := t.Start(ctx); err != nil {
		return "", err
	}
	c, err := t.connect(ctx, "postgres")
	if err == nil {
		_, err = c.Exec(ctx, "CREATE DATABASE test")
		c.Close(context.Background())
	}
	if err != nil {
		t.Kill()
		return "", fmt.Errorf("dbinstance: postgres: create database test: %w", err)
	}
	if err := t.Stop(); err != nil {
		return "", err
	}
	return t.data, nil
}

func newPostgres(o PGOptions) (*Postgres, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	acct, err := serviceAccount("postgres")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := tempDir(o.Dir, "gomogile-pg-*", acct)
	if err != nil {
		return nil, err
	}
	return &Postgres{o: o, bin: bin, acct: acct, dir: dir, data: filepath.Join(dir, "data"), port: port}, nil
}

func (p *Postgres) logf(format string, args ...any) {
	if p.o.Logf != nil {
		p.o.Logf("dbinstance: "+format, args...)
	}
}

func (p *Postgres) logPath() string { return filepath.Join(p.dir, "postgres.log") }

// writeConf appends this instance's settings to postgresql.conf; later
// lines win, so a standby's copy of its primary's file is overridden.
func (p *Postgres) writeConf() error {
	set := map[string]string{}
	for k, v := range pgDefaults {
		set[k] = v
	}
	for k, v := range p.o.Settings {
		set[k] = v
	}
	set["port"] = fmt.Sprint(p.port)
	set["unix_socket_directories"] = "'" + p.dir + "'"
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("\n# dbinstance\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, set[k])
	}
	f, err := os.OpenFile(filepath.Join(p.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("dbinstance: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		return fmt.Errorf("dbinstance: %w", err)
	}
	return nil
}

// Addr is "127.0.0.1:port".
func (p *Postgres) Addr() string { return fmt.Sprintf("127.0.0.1:%d", p.port) }

// Port is the server's TCP port; it stays the same across Kill and Start.
func (p *Postgres) Port() int { return p.port }

// Dir is the instance's directory (data directory in Dir()/data, server
// log in Dir()/postgres.log).
func (p *Postgres) Dir() string { return p.dir }

// DSN is a pgx URL for database db as superuser root.
func (p *Postgres) DSN(db string) string {
	return fmt.Sprintf("postgres://root@%s/%s?sslmode=disable", p.Addr(), db)
}

// FailoverDSN is a multi-host pgx URL naming every node, which connects to
// whichever of them accepts writes.
func FailoverDSN(db string, nodes ...*Postgres) string {
	hosts := make([]string, len(nodes))
	for i, n := range nodes {
		hosts[i] = n.Addr()
	}
	return fmt.Sprintf("postgres://root@%s/%s?sslmode=disable&target_session_attrs=read-write", strings.Join(hosts, ","), db)
}

// Start starts the server (again) on its port and data directory and
// returns once it accepts connections. After Kill this runs crash
// recovery.
func (p *Postgres) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc != nil && p.proc.running() {
		return fmt.Errorf("dbinstance: postgres on %s is already running", p.Addr())
	}
	pr, err := startProc(p.acct, p.logPath(), filepath.Join(p.bin, "postgres"), "-D", p.data)
	if err != nil {
		return err
	}
	p.proc = pr
	if err := p.waitReady(ctx, pr); err != nil {
		pr.kill()
		return err
	}
	return nil
}

// waitReady polls until the server answers a query, its process exits, or
// ctx ends.
func (p *Postgres) waitReady(ctx context.Context, pr *proc) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := pgx.Connect(actx, p.DSN("postgres"))
		if err == nil {
			_, err = c.Exec(actx, "SELECT 1")
			c.Close(context.Background())
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-pr.exited:
			return fmt.Errorf("dbinstance: postgres on %s exited (%v):\n%s", p.Addr(), pr.err, tail(p.logPath()))
		case <-ctx.Done():
			return fmt.Errorf("dbinstance: postgres on %s not ready: %w (last: %v)", p.Addr(), ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (p *Postgres) connect(ctx context.Context, db string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, p.DSN(db))
}

// Kill sends SIGKILL to the postmaster and every backend — a crash — and
// returns once none of them is left.
func (p *Postgres) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return nil
	}
	p.logf("postgres on %s: SIGKILL", p.Addr())
	return p.proc.kill()
}

// Stop shuts the server down (fast shutdown: sessions are ended, a
// checkpoint is written) and waits for it; it is a no-op when stopped.
func (p *Postgres) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return nil
	}
	return p.proc.stop(sigFast, 60*time.Second)
}

// Pid is the server process's id (the postmaster's for PostgreSQL), 0
// before the first Start.
func (p *Postgres) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return 0
	}
	return p.proc.pid()
}

// Running reports whether the server process is alive.
func (p *Postgres) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc != nil && p.proc.running()
}

// Cleanup stops the server and removes its directory.
func (p *Postgres) Cleanup() error {
	err := p.Stop()
	if rerr := os.RemoveAll(p.dir); err == nil {
		err = rerr
	}
	return err
}

// StartTime returns pg_postmaster_start_time(): it changes with every
// start, crash restarts included.
func (p *Postgres) StartTime(ctx context.Context) (time.Time, error) {
	c, err := p.connect(ctx, "postgres")
	if err != nil {
		return time.Time{}, fmt.Errorf("dbinstance: %w", err)
	}
	defer c.Close(context.Background())
	var t time.Time
	if err := c.QueryRow(ctx, "SELECT pg_postmaster_start_time()").Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("dbinstance: %w", err)
	}
	return t, nil
}

// StartStandby makes a streaming replica of p (pg_basebackup -R) in a new
// directory on its own port, starts it as a hot standby and returns once
// it streams from p. Promote makes it a primary.
func (p *Postgres) StartStandby(ctx context.Context) (*Postgres, error) {
	s, err := newPostgres(p.o)
	if err != nil {
		return nil, err
	}
	if err := s.follow(ctx, p); err != nil {
		s.Cleanup()
		return nil, err
	}
	return s, nil
}

// Rebuild turns p, a server stopped or killed (say a primary that failed
// over), into a streaming standby of primary on p's own port: its data
// directory is discarded and copied afresh from primary (pg_basebackup),
// so whatever p had that primary never got — commits written but never
// replicated, so never acknowledged under synchronous replication — is
// gone, and a DSN naming p's address finds it again. It returns once p
// streams from primary; Promote can then make it a primary in its turn.
func (p *Postgres) Rebuild(ctx context.Context, primary *Postgres) error {
	if err := p.Kill(); err != nil {
		return err
	}
	if err := os.RemoveAll(p.data); err != nil {
		return fmt.Errorf("dbinstance: rebuild %s: %w", p.Addr(), err)
	}
	return p.follow(ctx, primary)
}

// follow copies primary into p's (absent) data directory, starts p as its
// hot standby and waits until it streams.
func (p *Postgres) follow(ctx context.Context, primary *Postgres) error {
	p.standby = true
	t0 := time.Now()
	if err := run(p.acct, p.logPath(), filepath.Join(p.bin, "pg_basebackup"),
		"-h", "127.0.0.1", "-p", fmt.Sprint(primary.port), "-U", "root", "-D", p.data,
		"-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		return err
	}
	if err := p.writeConf(); err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return err
	}
	if err := p.waitStreaming(ctx); err != nil {
		p.Kill()
		return err
	}
	p.logf("postgres standby of %s on %s ready in %v", primary.Addr(), p.Addr(), time.Since(t0).Round(time.Millisecond))
	return nil
}

func (p *Postgres) waitStreaming(ctx context.Context) error {
	var status string
	for {
		c, err := p.connect(ctx, "postgres")
		if err == nil {
			err = c.QueryRow(ctx, "SELECT coalesce((SELECT status FROM pg_stat_wal_receiver), '')").Scan(&status)
			c.Close(context.Background())
		}
		if err == nil && status == "streaming" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dbinstance: standby on %s not streaming (status %q, %v): %w", p.Addr(), status, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Promote turns a standby into a primary (pg_promote) and returns once it
// accepts writes.
func (p *Postgres) Promote(ctx context.Context) error {
	c, err := p.connect(ctx, "postgres")
	if err != nil {
		return fmt.Errorf("dbinstance: promote %s: %w", p.Addr(), err)
	}
	defer c.Close(context.Background())
	var ok bool
	if err := c.QueryRow(ctx, "SELECT pg_promote(true, 60)").Scan(&ok); err != nil {
		return fmt.Errorf("dbinstance: promote %s: %w", p.Addr(), err)
	}
	if !ok {
		return errors.New("dbinstance: promote " + p.Addr() + ": pg_promote returned false")
	}
	for {
		var rec bool
		if err := c.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&rec); err != nil {
			return fmt.Errorf("dbinstance: promote %s: %w", p.Addr(), err)
		}
		if !rec {
			p.standby = false
			p.logf("postgres on %s promoted", p.Addr())
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dbinstance: promote %s: %w", p.Addr(), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// SetSynchronousStandby makes p acknowledge a commit only once a standby
// has flushed it (synchronous_standby_names = '*', synchronous_commit on),
// so promoting that standby loses no acknowledged commit, which
// asynchronous streaming may. With on it returns once a standby is
// synchronous; with on false commits no longer wait for one. The setting
// lives in postgresql.auto.conf, which StartStandby copies: a standby made
// after it, once promoted, waits for a synchronous standby of its own
// (give it one, or turn this off on it).
func (p *Postgres) SetSynchronousStandby(ctx context.Context, on bool) error {
	c, err := p.connect(ctx, "postgres")
	if err != nil {
		return fmt.Errorf("dbinstance: synchronous standby on %s: %w", p.Addr(), err)
	}
	defer c.Close(context.Background())
	names := "''"
	if on {
		names = "'*'"
	}
	for _, q := range []string{"ALTER SYSTEM SET synchronous_standby_names = " + names, "SELECT pg_reload_conf()"} {
		if _, err := c.Exec(ctx, q); err != nil {
			return fmt.Errorf("dbinstance: synchronous standby on %s: %s: %w", p.Addr(), q, err)
		}
	}
	for on {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'").Scan(&n); err != nil {
			return fmt.Errorf("dbinstance: synchronous standby on %s: %w", p.Addr(), err)
		}
		if n > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dbinstance: no synchronous standby on %s: %w", p.Addr(), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
