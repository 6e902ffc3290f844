package tracker_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/mogstored"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
	"github.com/gomogile/gomogile/tracker"
	model "github.com/gomogile/gomogile/tracker/internal/cluster"
)

// testDSN returns a fresh database for one test. The backend is SQLite
// unless GOMOGILE_TRACKER_TEST_DSN_FUNC names another one registered in
// backends (see backends_test.go).
func testDSN(t testing.TB) string {
	if b := os.Getenv("GOMOGILE_TRACKER_TEST_BACKEND"); b != "" && b != "sqlite" {
		f, ok := backends[b]
		if !ok {
			t.Fatalf("GOMOGILE_TRACKER_TEST_BACKEND=%q: unknown backend", b)
		}
		return f(t)
	}
	return "sqlite:///" + filepath.Join(t.TempDir(), "db")
}

// backends maps a backend name to a function giving a fresh database DSN.
var backends = map[string]func(testing.TB) string{}

// eachBackend runs f once per backend on a fresh database: SQLite, then
// MySQL and PostgreSQL as internal/testkit/testdb finds their servers (skipped
// without one on a developer's machine, failed under CI).
func eachBackend(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, "sqlite:///"+filepath.Join(t.TempDir(), "db")) })
	for _, name := range []string{"mysql", "postgres"} {
		t.Run(name, func(t *testing.T) { f(t, backends[name](t)) })
	}
}

func openStore(t testing.TB, dsn string) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open store %s: %v", dsn, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func quietLogger() *slog.Logger {
	if os.Getenv("TRACKER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type testTracker struct {
	t    testing.TB
	st   *store.Store
	tr   *tracker.Tracker
	addr string
}

func testConfig() tracker.Config {
	cfg := tracker.DefaultConfig()
	cfg.Listen = []string{"127.0.0.1:0"}
	cfg.JobMaster = false
	return cfg
}

// startTracker runs a tracker on a fresh database, or on st when given.
func startTracker(t testing.TB, cfg tracker.Config, st *store.Store, opts *tracker.Options) *testTracker {
	t.Helper()
	if st == nil {
		st = openStore(t, testDSN(t))
	}
	if opts == nil {
		opts = &tracker.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	tr, err := tracker.New(cfg, st, opts)
	if err != nil {
		t.Fatalf("tracker.New: %v", err)
	}
	if err := tr.Open(t.Context()); err != nil {
		t.Fatalf("tracker.Open: %v", err)
	}
	t.Cleanup(func() { tr.Close() })
	return &testTracker{t: t, st: st, tr: tr, addr: tr.Addrs()[0].String()}
}

// lineConn is a raw protocol connection.
type lineConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func (tt *testTracker) dial() *lineConn {
	tt.t.Helper()
	nc, err := net.DialTimeout("tcp", tt.addr, 5*time.Second)
	if err != nil {
		tt.t.Fatalf("dial: %v", err)
	}
	tt.t.Cleanup(func() { nc.Close() })
	return &lineConn{t: tt.t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *lineConn) send(s string) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// readLine returns one reply line including its "\r\n".
func (c *lineConn) readLine() string {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	s, err := c.br.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read reply: %v (got %q)", err, s)
	}
	return s
}

// do sends one request line and returns the reply without "\r\n",
// failing if the reply is not terminated by exactly "\r\n".
func (c *lineConn) do(line string) string {
	c.t.Helper()
	c.send(line + "\r\n")
	r := c.readLine()
	if !strings.HasSuffix(r, "\r\n") {
		c.t.Fatalf("reply %q does not end in \\r\\n", r)
	}
	return strings.TrimSuffix(r, "\r\n")
}

// admin sends a "!" command and returns its reply block's lines, without
// their line ends and the closing ".".
func (c *lineConn) admin(cmd string) []string {
	c.t.Helper()
	c.send(cmd + "\r\n")
	var out []string
	for {
		l := c.readLine()
		if l == ".\r\n" {
			return out
		}
		out = append(out, strings.TrimRight(l, "\r\n"))
	}
}

// want runs a request and compares the reply line exactly.
func (c *lineConn) want(line, reply string) {
	c.t.Helper()
	if got := c.do(line); got != reply {
		c.t.Errorf("%s\n got: %s\nwant: %s", line, got, reply)
	}
}

// node is a real storage node on its own loopback IP (host rows need
// distinct IPs: host.hostip is unique).
type node struct {
	srv     *mogstored.Server
	docroot string
	ip      string
	port    string
}

// The device directories exist before the node starts, so its first usage
// files (which the monitor reads) cover them.
func startNode(t testing.TB, ip string, devids ...int) *node {
	t.Helper()
	dir := t.TempDir()
	for _, id := range devids {
		if err := os.MkdirAll(filepath.Join(dir, "dev"+itoa(id)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv := mogstored.New(mogstored.Config{DocRoot: dir, HTTPListen: ip + ":0", MgmtListen: ip + ":0", Logger: quietLogger(),
		UsageInterval: 200 * time.Millisecond})
	if err := srv.Open(t.Context()); err != nil {
		t.Fatalf("mogstored on %s: %v", ip, err)
	}
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(srv.HTTPAddr())
	return &node{srv: srv, docroot: dir, ip: ip, port: port}
}

func (n *node) blobPath(devid int, fid int64) string {
	return filepath.Join(n.docroot, filepath.FromSlash(model.FidPath(devid, fid)))
}

func itoa(n int) string { return strconv.Itoa(n) }

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var trackerOptsHost = tracker.Options{Hostname: "testhost"}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func esc(s string) string { return tracker.Escape(s) }

// fixKeyCount rewrites a reply built with one key_count per entry into the
// ordered-map form: key_count once, first, with the final value.
func fixKeyCount(s string, n int) string {
	if n == 0 {
		return "OK "
	}
	body := strings.TrimPrefix(s, "OK ")
	var parts []string
	for _, p := range strings.Split(body, "&") {
		if !strings.HasPrefix(p, "key_count=") {
			parts = append(parts, p)
		}
	}
	return "OK key_count=" + strconv.Itoa(n) + "&" + strings.Join(parts, "&")
}

// oneNodeCluster is one tracker (on st, or a fresh database when nil) and
// one storage node on 127.0.0.2 with device 1, domain d and class c
// (mindevcount 1).
func oneNodeCluster(t *testing.T, st *store.Store) (*testTracker, *lineConn, *node) {
	return oneNodeClusterCfg(t, testConfig(), st, nil)
}

// oneNodeClusterCfg is oneNodeCluster with the tracker's cfg and opts.
func oneNodeClusterCfg(t *testing.T, cfg tracker.Config, st *store.Store, opts *tracker.Options) (*testTracker, *lineConn, *node) {
	tt := startTracker(t, cfg, st, opts)
	c := tt.dial()
	n := startNode(t, "127.0.0.2", 1)
	c.want("create_domain domain=d", "OK domain=d")
	c.want("create_class domain=d&class=c&mindevcount=1", "OK class=c&mindevcount=1&domain=d")
	c.want("create_host host=h&ip=127.0.0.2&port="+n.port+"&status=alive", "OK hostid=1&hostname=h")
	c.want("create_device devid=1&hostid=1", "OK ")
	c.want("clear_cache", "OK ")
	return tt, c, n
}

func fetch(t *testing.T, url string) []byte {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", url, res.StatusCode, err)
	}
	return b
}
