package faultproxy_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/goleak"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/faultproxy"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
)

func TestMain(m *testing.M) {
	code := testdb.Main(m)
	dbinstance.RemoveTemplates()
	os.Exit(code)
}

// echoServer accepts connections and echoes lines back until closed.
func echoServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln
}

func start(t *testing.T, target string, o faultproxy.Options) *faultproxy.Proxy {
	t.Helper()
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	p, err := faultproxy.Start(target, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, msg string) time.Duration {
	t.Helper()
	t0 := time.Now()
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("echo %q: %v", msg, err)
	}
	if line != msg+"\n" {
		t.Fatalf("echo %q: got %q", msg, line)
	}
	return time.Since(t0)
}

func TestTCPDelay(t *testing.T) {
	ln := echoServer(t)
	p := start(t, ln.Addr().String(), faultproxy.Options{})
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	base := roundTrip(t, c, r, "hello")
	const d = 300 * time.Millisecond
	p.SetDelay(d)
	slow := roundTrip(t, c, r, "slow")
	// One chunk each way: the round trip grows by 2d at least.
	if slow < 2*d {
		t.Errorf("round trip with delay %v took %v (without: %v), want ≥ %v", d, slow, base, 2*d)
	}
	p.SetDelay(0)
	// Without the delay a loopback round trip takes well under a
	// millisecond; 2d leaves a loaded machine room.
	if fast := roundTrip(t, c, r, "fast"); fast >= 2*d {
		t.Errorf("round trip after SetDelay(0) took %v", fast)
	}
	t.Logf("round trip: %v plain, %v with delay %v", base, slow, d)
}

func TestTCPCut(t *testing.T) {
	ln := echoServer(t)
	p := start(t, ln.Addr().String(), faultproxy.Options{})
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "before")
	p.Cut()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after Cut: %v, want the connection closed", err)
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	roundTrip(t, c2, bufio.NewReader(c2), "after")
	if s := p.Stats(); s.Cuts != 1 || s.Accepted != 2 {
		t.Errorf("stats %+v, want Cuts=1 Accepted=2", s)
	}
}

// Reset ends connections with a RST, which the client sees as a reset,
// not as an end of stream.
func TestTCPReset(t *testing.T) {
	ln := echoServer(t)
	p := start(t, ln.Addr().String(), faultproxy.Options{})
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "before")
	p.Reset()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after Reset: %v, want ECONNRESET", err)
	}
	if s := p.Stats(); s.Cuts != 1 {
		t.Errorf("stats %+v, want Cuts=1", s)
	}
}

// SetTarget moves new connections to another server, as a service address
// moved to a promoted standby; a connection already made keeps its own.
func TestTCPSetTarget(t *testing.T) {
	a := echoServer(t)
	b, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	go func() {
		for {
			c, err := b.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "this is b\n")
			c.Close()
		}
	}()
	p := start(t, a.Addr().String(), faultproxy.Options{})
	old, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	ro := bufio.NewReader(old)
	roundTrip(t, old, ro, "to a")
	if err := p.SetTarget(b.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if p.Target() != b.Addr().String() {
		t.Fatalf("Target %s after SetTarget(%s)", p.Target(), b.Addr())
	}
	roundTrip(t, old, ro, "still a")
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "this is b\n" {
		t.Fatalf("new connection after SetTarget: %q %v", line, err)
	}
	if err := p.SetTarget("no-port"); err == nil {
		t.Error("SetTarget accepted an address without a port")
	}
}

// A partition holds data and closes alike: the client sees neither a
// reply nor an end of stream until it heals.
func TestTCPBlackhole(t *testing.T) {
	ln := echoServer(t)
	p := start(t, ln.Addr().String(), faultproxy.Options{})
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "before")

	p.Blackhole(true)
	if _, err := io.WriteString(c, "held\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read during blackhole: %v, want a timeout (no data, no FIN)", err)
	}
	// A new connection is accepted but nothing comes back.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	r2 := bufio.NewReader(c2)
	io.WriteString(c2, "new\n")
	c2.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := r2.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on a connection made during blackhole: %v, want a timeout", err)
	}
	if s := p.Stats(); !s.Blackholed || s.Active != 2 {
		t.Errorf("stats during blackhole %+v, want Blackholed and 2 active", s)
	}

	p.Blackhole(false)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("after heal: %q, %v; want the held line", line, err)
	}
	c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := r2.ReadString('\n'); err != nil || line != "new\n" {
		t.Fatalf("after heal, connection made during blackhole: %q, %v", line, err)
	}
	roundTrip(t, c, r, "after")
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	ln := echoServer(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p, err := faultproxy.Start(ln.Addr().String(), faultproxy.Options{Protocol: faultproxy.Postgres})
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// A connection in every state: forwarding, delayed, held by a
	// partition, waiting to dial.
	p.SetDelay(time.Second)
	conns[0].Write([]byte("delayed\n"))
	p.Blackhole(true)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	conns = append(conns, c)
	conns[1].Write([]byte("held\n"))
	time.Sleep(100 * time.Millisecond)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("client connection still open after Close: %v", err)
		}
		c.Close()
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Error("proxy still accepts after Close")
	}
	ln.Close()
}

// pgThrough returns a pgx DSN for database db of the test server, but
// connecting through addr.
func pgDSN(t *testing.T, base, addr, sslmode string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	u.RawQuery = url.Values{"sslmode": {sslmode}}.Encode()
	return u.String()
}

// pgServer gives a private database on the PostgreSQL test server: its
// DSN (pgx form) and the server's address.
func pgServer(t *testing.T) (dsn, addr string) {
	t.Helper()
	dsn = testdb.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return pgDSN(t, dsn, u.Host, "disable"), u.Host
}

func openDB(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func count(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(ctxT(t, 10*time.Second), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// dropOne runs one INSERT transaction through proxied with the next
// commit reply dropped: the client must get an error while the row lands.
func dropOne(t *testing.T, p *faultproxy.Proxy, direct, proxied *sql.DB, insert string) {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	before := count(t, direct, "t")
	tx, err := proxied.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, insert); err != nil {
		t.Fatal(err)
	}
	drops := p.Stats().DroppedCommitReplies
	p.DropCommitReplies(1)
	err = tx.Commit()
	if err == nil {
		t.Fatal("Commit with its reply dropped returned nil")
	}
	t.Logf("client saw: %v", err)
	if got := count(t, direct, "t"); got != before+1 {
		t.Fatalf("rows after the ambiguous commit: %d, want %d (the commit applied)", got, before+1)
	}
	s := p.Stats()
	if s.DroppedCommitReplies != drops+1 || s.PendingDrops != 0 {
		t.Fatalf("stats %+v, want one more dropped reply and none pending", s)
	}
	// The next commit goes through untouched, on a new connection.
	tx, err = proxied.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, insert); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit after the dropped one: %v", err)
	}
	if got := count(t, direct, "t"); got != before+2 {
		t.Fatalf("rows: %d, want %d", got, before+2)
	}
}

func TestPostgresDropCommitReply(t *testing.T) {
	dsn, addr := pgServer(t)
	direct := openDB(t, "pgx", dsn)
	if _, err := direct.ExecContext(ctxT(t, 10*time.Second), "CREATE TABLE t (id serial PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	p := start(t, addr, faultproxy.Options{Protocol: faultproxy.Postgres})
	proxied := openDB(t, "pgx", pgDSN(t, dsn, p.Addr(), "disable"))
	dropOne(t, p, direct, proxied, "INSERT INTO t DEFAULT VALUES")
	if s := p.Stats(); s.CommitsSeen != 2 {
		t.Errorf("CommitsSeen %d, want 2", s.CommitsSeen)
	}
}

// The extended protocol: a COMMIT sent as Parse/Bind/Execute/Sync, by an
// unnamed and by a prepared statement. Preparing COMMIT is not a commit.
func TestPostgresDropCommitReplyExtended(t *testing.T) {
	dsn, addr := pgServer(t)
	direct := openDB(t, "pgx", dsn)
	ctx := ctxT(t, 30*time.Second)
	if _, err := direct.ExecContext(ctx, "CREATE TABLE t (id serial PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	p := start(t, addr, faultproxy.Options{Protocol: faultproxy.Postgres})
	for i, form := range []string{"unnamed", "prepared"} {
		conn, err := pgx.Connect(ctx, pgDSN(t, dsn, p.Addr(), "disable"))
		if err != nil {
			t.Fatal(err)
		}
		pc := conn.PgConn()
		if err := pc.Exec(ctx, "BEGIN; INSERT INTO t DEFAULT VALUES").Close(); err != nil {
			t.Fatal(err)
		}
		p.DropCommitReplies(1)
		if form == "prepared" {
			if _, err := pc.Prepare(ctx, "c1", "  commit ; ", nil); err != nil {
				t.Fatalf("prepare COMMIT: %v", err)
			}
			if s := p.Stats(); s.PendingDrops != 1 {
				t.Fatalf("preparing COMMIT took a drop: %+v", s)
			}
			_, err = pc.ExecPrepared(ctx, "c1", nil, nil, nil).Close()
		} else {
			_, err = pc.ExecParams(ctx, "END", nil, nil, nil, nil).Close()
		}
		if err == nil {
			t.Fatalf("%s COMMIT with its reply dropped succeeded", form)
		}
		conn.Close(ctx)
		if got := count(t, direct, "t"); got != i+1 {
			t.Fatalf("%s: rows %d, want %d", form, got, i+1)
		}
	}
	if s := p.Stats(); s.DroppedCommitReplies != 2 {
		t.Errorf("stats %+v, want 2 dropped replies", s)
	}
}

// sslmode=prefer sends an SSLRequest first. Passed to a server with TLS
// on, the connection is encrypted and its commits cannot be seen; with
// DenyTLS the proxy answers 'N' and the drop works.
func TestPostgresSSLRequest(t *testing.T) {
	dsn, addr := pgServer(t)
	direct := openDB(t, "pgx", dsn)
	ctx := ctxT(t, 30*time.Second)
	if _, err := direct.ExecContext(ctx, "CREATE TABLE t (id serial PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	var ssl string
	if err := direct.QueryRowContext(ctx, "SHOW ssl").Scan(&ssl); err != nil {
		t.Fatal(err)
	}

	p := start(t, addr, faultproxy.Options{Protocol: faultproxy.Postgres, DenyTLS: true})
	proxied := openDB(t, "pgx", pgDSN(t, dsn, p.Addr(), "prefer"))
	dropOne(t, p, direct, proxied, "INSERT INTO t DEFAULT VALUES")

	pass := start(t, addr, faultproxy.Options{Protocol: faultproxy.Postgres})
	db := openDB(t, "pgx", pgDSN(t, dsn, pass.Addr(), "prefer"))
	var got bool
	if err := db.QueryRowContext(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != (ssl == "on") {
		t.Errorf("connection through the proxy: ssl=%v, server ssl=%s", got, ssl)
	}
	if _, err := db.ExecContext(ctx, "BEGIN; INSERT INTO t DEFAULT VALUES; COMMIT"); err != nil {
		t.Fatal(err)
	}
	t.Logf("server ssl=%s; passthrough stats %+v", ssl, pass.Stats())
}

func TestPostgresBlackholeAndCut(t *testing.T) {
	dsn, addr := pgServer(t)
	p := start(t, addr, faultproxy.Options{Protocol: faultproxy.Postgres})
	db := openDB(t, "pgx", pgDSN(t, dsn, p.Addr(), "disable"))
	ctx := ctxT(t, 60*time.Second)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.PingContext(ctx); err != nil {
		t.Fatal(err)
	}

	// Cut: the connection in hand fails, a new one works.
	p.Cut()
	if err := conn.PingContext(ctx); err == nil {
		t.Fatal("ping on a cut connection succeeded")
	}
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("ping after Cut: %v", err)
	}

	// Blackhole: a query hangs until its own deadline.
	p.Blackhole(true)
	const wait = time.Second
	qctx, cancel := context.WithTimeout(ctx, wait)
	t0 := time.Now()
	var one int
	err = db.QueryRowContext(qctx, "SELECT 1").Scan(&one)
	cancel()
	took := time.Since(t0)
	if err == nil {
		t.Fatal("query during blackhole succeeded")
	}
	if took < wait-50*time.Millisecond || took > wait+5*time.Second {
		t.Errorf("query during blackhole ended after %v (%v), want at its %v deadline", took, err, wait)
	}
	t.Logf("blackholed query: %v after %v", err, took)

	// Healed: new connections work.
	p.Blackhole(false)
	db2 := openDB(t, "pgx", pgDSN(t, dsn, p.Addr(), "disable"))
	if err := db2.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query after heal: %d, %v", one, err)
	}
}

func TestPostgresDelay(t *testing.T) {
	dsn, addr := pgServer(t)
	p := start(t, addr, faultproxy.Options{Protocol: faultproxy.Postgres})
	db := openDB(t, "pgx", pgDSN(t, dsn, p.Addr(), "disable"))
	ctx := ctxT(t, 30*time.Second)
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	const d = 100 * time.Millisecond
	p.SetDelay(d)
	t0 := time.Now()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took < 2*d {
		t.Errorf("query with delay %v took %v, want ≥ %v", d, took, 2*d)
	}
}

// mysqlServer gives a private database on the MySQL test server as a
// go-sql-driver config and the server's address.
func mysqlServer(t *testing.T) (*gomysql.Config, string) {
	t.Helper()
	u, err := url.Parse(testdb.MySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := gomysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	return cfg, u.Host
}

func TestMySQLDropCommitReply(t *testing.T) {
	cfg, addr := mysqlServer(t)
	direct := openDB(t, "mysql", cfg.FormatDSN())
	if _, err := direct.ExecContext(ctxT(t, 10*time.Second), "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	p := start(t, addr, faultproxy.Options{Protocol: faultproxy.MySQL})
	pcfg := cfg.Clone()
	pcfg.Addr = p.Addr()
	proxied := openDB(t, "mysql", pcfg.FormatDSN())
	dropOne(t, p, direct, proxied, "INSERT INTO t () VALUES ()")
	if s := p.Stats(); s.CommitsSeen != 2 {
		t.Errorf("CommitsSeen %d, want 2", s.CommitsSeen)
	}
}

func TestMySQLBlackhole(t *testing.T) {
	cfg, addr := mysqlServer(t)
	p := start(t, addr, faultproxy.Options{Protocol: faultproxy.MySQL})
	pcfg := cfg.Clone()
	pcfg.Addr = p.Addr()
	db := openDB(t, "mysql", pcfg.FormatDSN())
	ctx := ctxT(t, 30*time.Second)
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	p.Blackhole(true)
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	t0 := time.Now()
	_, err := db.ExecContext(qctx, "DO 1")
	cancel()
	if took := time.Since(t0); err == nil || took < 950*time.Millisecond {
		t.Fatalf("query during blackhole: %v after %v, want an error at the 1s deadline", err, took)
	}
	p.Blackhole(false)
	db2 := openDB(t, "mysql", pcfg.FormatDSN())
	if _, err := db2.ExecContext(ctx, "DO 1"); err != nil {
		t.Fatalf("after heal: %v", err)
	}
}

// A server without TLS answers an SSLRequest with 'N' and the client goes
// on with its startup on the same connection (libpq does; pgx opens a new
// one): the proxy passes both on and still sees the commit that follows.
func TestPostgresSSLRequestRefusedByServer(t *testing.T) {
	if err := dbinstance.Available("postgres"); err != nil {
		testdb.Unavailable(t, "postgres", err.Error())
	}
	ctx := ctxT(t, 60*time.Second)
	pg, err := dbinstance.StartPostgres(ctx, dbinstance.PGOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Cleanup() })
	direct := openDB(t, "pgx", pg.DSN("test"))
	if _, err := direct.ExecContext(ctx, "CREATE TABLE t (id serial PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	p := start(t, pg.Addr(), faultproxy.Options{Protocol: faultproxy.Postgres})

	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(c)
	c.Write([]byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}) // SSLRequest
	if b, err := r.ReadByte(); err != nil || b != 'N' {
		t.Fatalf("answer to SSLRequest: %q %v, want 'N'", b, err)
	}
	startup := append([]byte{0, 0, 0, 0, 0, 3, 0, 0}, "user\x00root\x00database\x00test\x00\x00"...)
	binary.BigEndian.PutUint32(startup, uint32(len(startup)))
	c.Write(startup)
	query := func(sql string) error { // sends a simple Query, reads to its ReadyForQuery
		msg := append([]byte{'Q', 0, 0, 0, 0}, sql+"\x00"...)
		binary.BigEndian.PutUint32(msg[1:], uint32(len(msg)-1))
		c.Write(msg)
		return readToZ(r)
	}
	if err := readToZ(r); err != nil {
		t.Fatalf("startup: %v", err)
	}
	if err := query("BEGIN; INSERT INTO t DEFAULT VALUES"); err != nil {
		t.Fatal(err)
	}
	p.DropCommitReplies(1)
	if err := query("commit;"); err == nil {
		t.Fatal("the reply of COMMIT arrived")
	}
	if n := count(t, direct, "t"); n != 1 {
		t.Fatalf("rows after the ambiguous commit: %d, want 1", n)
	}
	if s := p.Stats(); s.DroppedCommitReplies != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// readToZ reads backend messages up to a ReadyForQuery; an ErrorResponse
// or the end of the stream is an error.
func readToZ(r *bufio.Reader) error {
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[1:])-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		switch hdr[0] {
		case 'Z':
			return nil
		case 'E':
			return fmt.Errorf("server error: %q", body)
		}
	}
}

// DropCommitReplies(n) drops exactly the next n commits, whichever
// connections they come on; 0 cancels what is pending.
func TestMySQLDropSeveralCommitReplies(t *testing.T) {
	cfg, addr := mysqlServer(t)
	direct := openDB(t, "mysql", cfg.FormatDSN())
	ctx := ctxT(t, 30*time.Second)
	if _, err := direct.ExecContext(ctx, "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	p := start(t, addr, faultproxy.Options{Protocol: faultproxy.MySQL})
	pcfg := cfg.Clone()
	pcfg.Addr = p.Addr()
	proxied := openDB(t, "mysql", pcfg.FormatDSN())
	insert := func() error {
		tx, err := proxied.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO t () VALUES ()"); err != nil {
			t.Fatal(err)
		}
		return tx.Commit()
	}
	p.DropCommitReplies(2)
	var failed []int
	for i := 0; i < 4; i++ {
		if err := insert(); err != nil {
			failed = append(failed, i)
		}
	}
	if len(failed) != 2 || failed[0] != 0 || failed[1] != 1 {
		t.Fatalf("commits that failed: %v, want the first two", failed)
	}
	p.DropCommitReplies(5)
	p.DropCommitReplies(0)
	if err := insert(); err != nil {
		t.Fatalf("commit after DropCommitReplies(0): %v", err)
	}
	if n := count(t, direct, "t"); n != 5 {
		t.Fatalf("rows: %d, want 5 (every commit applied)", n)
	}
	if s := p.Stats(); s.DroppedCommitReplies != 2 || s.CommitsSeen != 5 || s.PendingDrops != 0 {
		t.Fatalf("stats %+v, want 2 dropped of 5 seen, none pending", s)
	}
}

// In front of a PgBouncer in transaction mode (whose own startup and
// ReadyForQuery the proxy sees), and behind it (where the cut connection
// is the pooler's to the server), a dropped reply is still an applied
// commit the client cannot know about.
func TestPostgresDropCommitReplyPgBouncer(t *testing.T) {
	for _, kind := range []string{"postgres", "pgbouncer"} {
		if err := dbinstance.Available(kind); err != nil {
			testdb.Unavailable(t, kind, err.Error())
		}
	}
	ctx := ctxT(t, 90*time.Second)
	pg, err := dbinstance.StartPostgres(ctx, dbinstance.PGOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Cleanup() })
	direct := openDB(t, "pgx", pg.DSN("test"))
	if _, err := direct.ExecContext(ctx, "CREATE TABLE t (id serial PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}

	t.Run("client-proxy-bouncer", func(t *testing.T) {
		b, err := dbinstance.StartPgBouncer(ctx, pg.Addr(), dbinstance.BouncerOptions{Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Cleanup() })
		p := start(t, b.Addr(), faultproxy.Options{Protocol: faultproxy.Postgres})
		proxied := openDB(t, "pgx", pgDSN(t, b.DSN("test"), p.Addr(), "disable")+"&default_query_exec_mode=simple_protocol")
		dropOne(t, p, direct, proxied, "INSERT INTO t DEFAULT VALUES")
	})
	t.Run("bouncer-proxy-server", func(t *testing.T) {
		p := start(t, pg.Addr(), faultproxy.Options{Protocol: faultproxy.Postgres})
		b, err := dbinstance.StartPgBouncer(ctx, p.Addr(), dbinstance.BouncerOptions{Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Cleanup() })
		pooled := openDB(t, "pgx", b.DSN("test")+"&default_query_exec_mode=simple_protocol")
		dropOne(t, p, direct, pooled, "INSERT INTO t DEFAULT VALUES")
	})
}

// TestRoundTrips: each statement a client waits for counts once, whatever
// the protocol's messages (PostgreSQL's extended Parse/Bind/Execute/Sync,
// its simple Query, MySQL's commands); connecting counts nothing.
func TestRoundTrips(t *testing.T) {
	pgdsn, pgaddr := pgServer(t)
	mycfg, myaddr := mysqlServer(t)
	for _, tc := range []struct {
		name string
		pr   faultproxy.Protocol
		addr string
		open func(p *faultproxy.Proxy) *sql.DB
	}{
		{"Postgres", faultproxy.Postgres, pgaddr, func(p *faultproxy.Proxy) *sql.DB {
			return openDB(t, "pgx", pgDSN(t, pgdsn, p.Addr(), "disable"))
		}},
		{"MySQL", faultproxy.MySQL, myaddr, func(p *faultproxy.Proxy) *sql.DB {
			c := mycfg.Clone()
			c.Addr = p.Addr()
			return openDB(t, "mysql", c.FormatDSN())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := start(t, tc.addr, faultproxy.Options{Protocol: tc.pr})
			db := tc.open(p)
			db.SetMaxIdleConns(1)
			ctx := ctxT(t, 10*time.Second)
			conn, err := db.Conn(ctx) // connect and authenticate
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			before := p.Stats().RoundTrips
			var n int
			for i := range 3 {
				// The first run of a parameterised query may cost pgx a
				// Describe round trip; count the later ones.
				if i == 1 {
					before = p.Stats().RoundTrips
				}
				if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
					t.Fatal(err)
				}
			}
			if got := p.Stats().RoundTrips - before; got != 2 {
				t.Errorf("RoundTrips for 2 SELECTs = %d; want 2", got)
			}
			before = p.Stats().RoundTrips
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if got := p.Stats().RoundTrips - before; got != 3 {
				t.Errorf("RoundTrips for BEGIN, SELECT, COMMIT = %d; want 3", got)
			}
		})
	}
}

// A query of several statements ending in COMMIT (multiStatements) is a
// commit too: its reply is dropped only after the server's last answer to
// it, so every statement and the COMMIT have applied when the client sees
// its connection fail. A query that merely contains the word, or a COMMIT
// that is not its last statement, is no commit.
func TestMySQLDropMultiStatementCommitReply(t *testing.T) {
	cfg, addr := mysqlServer(t)
	direct := openDB(t, "mysql", cfg.FormatDSN())
	ctx := ctxT(t, 30*time.Second)
	if _, err := direct.ExecContext(ctx, "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(64)) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	p := start(t, addr, faultproxy.Options{Protocol: faultproxy.MySQL})
	pcfg := cfg.Clone()
	pcfg.Addr = p.Addr()
	pcfg.MultiStatements = true
	proxied := openDB(t, "mysql", pcfg.FormatDSN())
	batch := func(q string) error {
		conn, err := proxied.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "START TRANSACTION; INSERT INTO t (note) VALUES ('first')"); err != nil {
			t.Fatal(err)
		}
		_, err = conn.ExecContext(ctx, q)
		return err
	}
	p.DropCommitReplies(1)
	if err := batch("INSERT INTO t (note) VALUES ('a; commit'); INSERT INTO t () VALUES (); COMMIT"); err == nil {
		t.Fatal("the reply of a query ending in COMMIT arrived")
	}
	if n := count(t, direct, "t"); n != 3 {
		t.Fatalf("rows after the ambiguous commit: %d, want 3 (all of it applied)", n)
	}
	if s := p.Stats(); s.DroppedCommitReplies != 1 || s.CommitsSeen != 1 {
		t.Fatalf("stats %+v, want the one commit seen and dropped", s)
	}
	p.DropCommitReplies(1)
	for _, q := range []string{
		"INSERT INTO t (note) VALUES ('x; COMMIT')",
		"COMMIT; INSERT INTO t () VALUES ()",
	} {
		if err := batch(q); err != nil {
			t.Fatalf("%q with a drop pending: %v (it is no commit)", q, err)
		}
	}
	if s := p.Stats(); s.CommitsSeen != 1 || s.PendingDrops != 1 {
		t.Fatalf("stats %+v, want no more commits seen and the drop still pending", s)
	}
	p.DropCommitReplies(0)
	// Each of the two left its transaction open on the pooled session; the
	// next START TRANSACTION committed the first, the COMMIT the second.
	if n := count(t, direct, "t"); n != 7 {
		t.Fatalf("rows: %d, want 7", n)
	}
}
