package jobs_test

import (
	"bufio"
	"crypto/md5"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/mogstored"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// sharedPort finds a TCP port free on every one of ips, to serve as the
// one mogstored_stream_port of several nodes.
func sharedPort(t *testing.T, ips ...string) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", ips[0]+":0")
		if err != nil {
			t.Fatal(err)
		}
		port := portOf(t, ln.Addr().String())
		lns := []net.Listener{ln}
		ok := true
		for _, ip := range ips[1:] {
			l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			return port
		}
	}
	t.Fatalf("no port free on all of %v", ips)
	return 0
}

// watchedNode is a mogstored serving watch on the shared stream port, so
// that it can be stopped and started again on the same addresses.
type watchedNode struct {
	t          *testing.T
	ip, root   string
	httpPort   int
	streamPort int
	srv        *mogstored.Server
}

func (n *watchedNode) start() {
	n.t.Helper()
	srv := mogstored.New(mogstored.Config{
		DocRoot:       n.root,
		HTTPListen:    net.JoinHostPort(n.ip, strconv.Itoa(n.httpPort)),
		MgmtListen:    net.JoinHostPort(n.ip, strconv.Itoa(n.streamPort)),
		UsageInterval: 200 * time.Millisecond,
		Logger:        slog.New(slog.DiscardHandler),
	})
	if err := srv.Open(n.t.Context()); err != nil {
		n.t.Fatalf("mogstored on %s: %v", n.ip, err)
	}
	n.srv = srv
	n.httpPort = portOf(n.t, srv.HTTPAddr())
}

// addWatchedNode starts a mogstored with its management port on
// streamPort and registers it with devids.
func (c *cluster) addWatchedNode(ip string, streamPort int, devids ...int) *watchedNode {
	t := c.t
	t.Helper()
	n := &watchedNode{t: t, ip: ip, root: t.TempDir(), streamPort: streamPort}
	for _, id := range devids {
		if err := os.Mkdir(filepath.Join(n.root, "dev"+strconv.Itoa(id)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	n.start()
	t.Cleanup(func() { n.srv.Close() })
	c.register(ip, n.httpPort, devids...)
	return n
}

func (c *cluster) register(ip string, httpPort int, devids ...int) {
	c.t.Helper()
	h, err := c.st.CreateHost(c.t.Context(), store.Host{Name: "node" + ip, Status: store.HostAlive, IP: ip, HTTPPort: httpPort})
	if err != nil {
		c.t.Fatalf("create host: %v", err)
	}
	for _, id := range devids {
		if _, err := c.st.CreateDevice(c.t.Context(), store.Device{ID: id, HostID: h.ID, Status: store.DeviceAlive, Weight: 100}); err != nil {
			c.t.Fatalf("create device %d: %v", id, err)
		}
	}
}

// utilRE is what our mogstored sends per device: a percentage with two
// decimals, or "-" when it cannot map the directory to a disk.
var utilRE = regexp.MustCompile(`^(\d{1,3}\.\d\d|-)$`)

// noJobsGoroutines fails if a goroutine of package jobs outlives Close.
func noJobsGoroutines(t *testing.T) {
	t.Helper()
	leaked := func() string {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			if (strings.Contains(g, "gomogile/tracker/jobs.") && !strings.Contains(g, "jobs_test.")) ||
				strings.Contains(g, "net/http.(*persistConn)") {
				return g
			}
		}
		return ""
	}
	deadline := time.Now().Add(5 * time.Second)
	g := leaked()
	for g != "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		g = leaked()
	}
	if g != "" {
		t.Errorf("goroutine left after Close:\n%s", g)
	}
}

// Real storage nodes: utilisation arrives for every device, goes away when
// a node stops and comes back once it runs again; the bad Content-MD5
// probe finds that our mogstored refuses such bodies and leaves no file.
func TestMonitor_WatchRealNodes(t *testing.T) {
	if _, err := os.Stat("/proc/diskstats"); err != nil {
		t.Skip("no /proc/diskstats: mogstored cannot serve watch here")
	}
	c := newCluster(t)
	port := sharedPort(t, "127.0.0.2", "127.0.0.3")
	n2 := c.addWatchedNode("127.0.0.2", port, 1, 2)
	n3 := c.addWatchedNode("127.0.0.3", port, 3)
	o := fastOptions(t)
	o.StreamPort = port
	m := jobs.New(c.st, o)
	if err := m.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			m.Close()
		}
	})

	hasUtil := func(dev int) func() bool {
		return func() bool { u, ok := m.Utilization(dev); return ok && utilRE.MatchString(u) }
	}
	for _, dev := range []int{1, 2, 3} {
		waitFor(t, 10*time.Second, "utilization of dev"+strconv.Itoa(dev), hasUtil(dev))
	}
	if u, ok := m.Utilization(99); ok {
		t.Errorf("Utilization(99) = %q, true; want unknown", u)
	}
	for _, dev := range []int{1, 2, 3} {
		waitFor(t, 10*time.Second, "reject_bad_md5 of dev"+strconv.Itoa(dev), func() bool {
			rej, ok := m.RejectBadMD5(dev)
			return ok && rej
		})
	}
	if _, err := os.Stat(filepath.Join(n2.root, "dev1", "test-write", "test-md5")); !os.IsNotExist(err) {
		t.Errorf("probe left test-md5 behind (stat: %v)", err)
	}

	n3.srv.Close()
	waitFor(t, 10*time.Second, "dev3 utilization gone", func() bool { _, ok := m.Utilization(3); return !ok })
	waitFor(t, 10*time.Second, "dev3 unreachable", func() bool { s, ok := m.Observed(3); return ok && s == "unreachable" })
	if !hasUtil(1)() {
		t.Errorf("dev1 utilization gone while only the other node stopped")
	}
	// The last probe answer stands while the device is away.
	if rej, ok := m.RejectBadMD5(3); !ok || !rej {
		t.Errorf("RejectBadMD5(3) = %v, %v while unreachable; want the last answer true, true", rej, ok)
	}

	// Stay down long enough for the watcher's retries to have backed off
	// to 8 s (after 1, 2 and 4 s): 70 more monitor passes of 100 ms.
	passes := func() int64 {
		for _, st := range m.Stats() {
			if st.Name == jobs.JobMonitor {
				return st.Processed
			}
		}
		return 0
	}
	downAt := passes()
	waitFor(t, 30*time.Second, "70 monitor passes with dev3 down", func() bool { return passes() >= downAt+70 })

	n3.start()
	t.Cleanup(func() { n3.srv.Close() })
	// Well within that backoff: the monitor seeing the node back makes the
	// watcher reconnect at once.
	waitFor(t, 5*time.Second, "dev3 utilization after restart", hasUtil(3))
	waitFor(t, 10*time.Second, "dev3 writeable after restart", func() bool { s, ok := m.Observed(3); return ok && s == "writeable" })

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	noJobsGoroutines(t)
}

// scriptedWatch is a watch peer whose reports the test writes: what a
// node's management port sends, without waiting for real disk statistics.
type scriptedWatch struct {
	ln    net.Listener
	conns chan net.Conn
}

func newScriptedWatch(t *testing.T, ip string) *scriptedWatch {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptedWatch{ln: ln, conns: make(chan net.Conn, 4)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns <- conn
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		close(s.conns)
		for c := range s.conns {
			c.Close()
		}
	})
	return s
}

// accept waits for the monitor's connection and its "watch" command.
func (s *scriptedWatch) accept(t *testing.T) net.Conn {
	t.Helper()
	select {
	case conn := <-s.conns:
		t.Cleanup(func() { conn.Close() })
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || line != "watch\n" {
			t.Fatalf("monitor sent %q, %v; want \"watch\\n\"", line, err)
		}
		return conn
	case <-time.After(10 * time.Second):
		t.Fatal("monitor did not connect to the watch port")
		return nil
	}
}

func send(t *testing.T, conn net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(conn, s); err != nil {
		t.Fatalf("write report: %v", err)
	}
}

// Reports replace each other; devices of other hosts are ignored; values
// are kept verbatim; a dropped connection forgets them and is redone.
func TestMonitor_WatchReportsAndReconnect(t *testing.T) {
	c := newCluster(t)
	w := newScriptedWatch(t, "127.0.0.4")
	c.register("127.0.0.4", 1, 7, 8) // no HTTP there: only the watch matters
	c.addNode(9)                     // 127.0.0.2, another host
	o := fastOptions(t)
	o.StreamPort = portOf(t, w.ln.Addr().String())
	m := start(t, c.st, o)

	util := func(dev int, want string) func() bool {
		return func() bool { u, ok := m.Utilization(dev); return ok && u == want }
	}
	gone := func(dev int) func() bool {
		return func() bool { _, ok := m.Utilization(dev); return !ok }
	}

	conn := w.accept(t)
	send(t, conn, "7\t12.50\n8\t-\n9\t70.00\n99\t5.00\n.\n")
	waitFor(t, 5*time.Second, "dev7 = 12.50", util(7, "12.50"))
	waitFor(t, 5*time.Second, "dev8 = -", util(8, "-"))
	for _, dev := range []int{9, 99} {
		if u, ok := m.Utilization(dev); ok {
			t.Errorf("Utilization(%d) = %q from another host's stream; want unknown", dev, u)
		}
	}

	// The next report replaces the last one; a device it leaves out is
	// unknown again. Lines may end in CRLF.
	send(t, conn, "7 80.25\r\n.\r\n")
	waitFor(t, 5*time.Second, "dev7 = 80.25", util(7, "80.25"))
	waitFor(t, 5*time.Second, "dev8 forgotten", gone(8))

	conn.Close()
	waitFor(t, 5*time.Second, "dev7 forgotten after the drop", gone(7))
	conn = w.accept(t)
	send(t, conn, "7\t1.00\n8\t2.00\n.\n")
	waitFor(t, 5*time.Second, "dev7 after reconnect", util(7, "1.00"))
	waitFor(t, 5*time.Second, "dev8 after reconnect", util(8, "2.00"))

	// Taking the host out of service closes its watch connection.
	if err := c.st.UpdateHost(t.Context(), store.Host{ID: hostID(t, c, "127.0.0.4"), Name: "node127.0.0.4", Status: store.HostDown, IP: "127.0.0.4", HTTPPort: 1}); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("watch connection of a down host: read = %v; want EOF", err)
	}
	waitFor(t, 5*time.Second, "dev7 forgotten with its host down", gone(7))
}

func hostID(t *testing.T, c *cluster, ip string) int {
	t.Helper()
	hs, err := c.st.Hosts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.IP == ip {
			return h.ID
		}
	}
	t.Fatalf("no host %s", ip)
	return 0
}

// memNode is a plain HTTP storage node in memory: enough for the monitor
// (usage file, test writes) and the probe. With checkMD5 it refuses a body
// that does not match its Content-MD5 with 400, as our mogstored does;
// without, it stores it, as most servers do.
type memNode struct {
	checkMD5 bool
	mu       sync.Mutex
	files    map[string][]byte
	probes   []string // Content-MD5 headers of PUTs to test-md5
	deletes  []string
}

func (n *memNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		if strings.HasSuffix(r.URL.Path, "/usage") {
			io.WriteString(w, "available: 900000\ndevice: dev\nused: 100000\ntotal: 1000000\n")
			return
		}
		b, ok := n.files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	case http.MethodPut:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/test-md5") {
			n.probes = append(n.probes, r.Header.Get("Content-MD5"))
		}
		if want := r.Header.Get("Content-MD5"); n.checkMD5 && want != "" {
			sum := md5.Sum(body)
			if base64.StdEncoding.EncodeToString(sum[:]) != want {
				http.Error(w, "Content-MD5 mismatch", http.StatusBadRequest)
				return
			}
		}
		n.files[r.URL.Path] = body
		w.WriteHeader(http.StatusCreated)
	case http.MethodDelete:
		n.deletes = append(n.deletes, r.URL.Path)
		delete(n.files, r.URL.Path)
		w.WriteHeader(http.StatusNoContent)
	case "MKCOL":
		w.WriteHeader(http.StatusCreated)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func (n *memNode) state() (probes, deletes []string, md5File bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for p := range n.files {
		if strings.HasSuffix(p, "/test-md5") {
			md5File = true
		}
	}
	return append([]string(nil), n.probes...), append([]string(nil), n.deletes...), md5File
}

// serveMem runs n on addr (ip:port, port 0 for any).
func serveMem(t *testing.T, addr string, n *memNode) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(n)
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// A server that ignores Content-MD5 stores the probe: reject_bad_md5 0,
// and the stored body is deleted. When the device was unreachable and
// comes back as a server that checks, the probe is made again: 1.
func TestMonitor_BadMD5Probe(t *testing.T) {
	c := newCluster(t)
	lax := &memNode{files: map[string][]byte{}}
	s := serveMem(t, "127.0.0.5:0", lax)
	addr := s.Listener.Addr().String()
	c.register("127.0.0.5", portOf(t, addr), 11)
	o := fastOptions(t)
	o.StreamPort = -1
	m := start(t, c.st, o)

	waitFor(t, 10*time.Second, "dev11 probed", func() bool { _, ok := m.RejectBadMD5(11); return ok })
	if rej, _ := m.RejectBadMD5(11); rej {
		t.Errorf("RejectBadMD5(11) = true against a server that ignores Content-MD5")
	}
	if s, ok := m.Observed(11); !ok || s != "writeable" {
		t.Errorf("Observed(11) = %q, %v; want writeable", s, ok)
	}
	sum := md5.Sum([]byte("!"))
	probes, deletes, left := lax.state()
	if len(probes) != 1 || probes[0] != base64.StdEncoding.EncodeToString(sum[:]) {
		t.Errorf("probe Content-MD5 headers %q; want one, the MD5 of \"!\"", probes)
	}
	if left || len(deletes) != 1 || deletes[0] != "/dev11/test-write/test-md5" {
		t.Errorf("after the probe: test-md5 stored = %v, DELETEs %q; want it deleted", left, deletes)
	}

	// Once is enough while the device stays reachable.
	before := len(probes)
	waitFor(t, 10*time.Second, "more monitor passes", func() bool {
		for _, st := range m.Stats() {
			if st.Name == jobs.JobMonitor {
				return st.Processed > 20
			}
		}
		return false
	})
	if probes, _, _ := lax.state(); len(probes) != before {
		t.Errorf("%d probes of a device that stayed reachable; want %d", len(probes), before)
	}

	s.Close()
	waitFor(t, 10*time.Second, "dev11 unreachable", func() bool { st, ok := m.Observed(11); return ok && st == "unreachable" })
	strict := &memNode{files: map[string][]byte{}, checkMD5: true}
	serveMem(t, addr, strict)
	waitFor(t, 10*time.Second, "dev11 probed again", func() bool { rej, ok := m.RejectBadMD5(11); return ok && rej })
	if probes, _, left := strict.state(); len(probes) != 1 || left {
		t.Errorf("second server: %d probes, test-md5 stored = %v; want 1, false", len(probes), left)
	}
}
