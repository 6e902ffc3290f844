package tracker_test

// The hostile-client suite (issue 10): each test repeats an attack a client
// on the same network made against a running tracker and storage node, and
// checks the cluster neither stopped, nor ran out of memory, nor obeyed.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker"
)

// hostileCluster is a tracker on dsn with one storage node (device 1 on
// 127.0.0.2), domain d and class one (mindevcount 1).
func hostileCluster(t *testing.T, dsn string, cfg tracker.Config) *cluster {
	t.Helper()
	tt := startTracker(t, cfg, openStore(t, dsn), nil)
	cl := &cluster{testTracker: tt, nodes: map[int]*node{}}
	n := startNode(t, "127.0.0.2", 1)
	cl.nodes[1] = n
	c := tt.dial()
	c.want("create_host host=h1&ip="+n.ip+"&port="+n.port+"&status=alive", "OK hostid=1&hostname=h1")
	c.want("create_device devid=1&hostid=1", "OK ")
	c.want("create_domain domain=d", "OK domain=d")
	c.want("create_class domain=d&class=one&mindevcount=1", "OK class=one&mindevcount=1&domain=d")
	return cl
}

// upload stores body under key through the protocol and returns its fid.
func (cl *cluster) upload(t *testing.T, c *lineConn, key string, body []byte) int64 {
	t.Helper()
	r := parseOK(t, c.do("create_open domain=d&class=one&key="+esc(key)))
	fid := mustInt(t, r.Get("fid"))
	put(t, r.Get("path"), body)
	c.want(fmt.Sprintf("create_close domain=d&key=%s&fid=%d&devid=%s&path=%s&size=%d", esc(key), fid, r.Get("devid"), esc(r.Get("path")), len(body)), "OK ")
	return fid
}

// Attack 1: a client-named fid at MaxInt64 raised the fid counter to where
// every later allocation failed, on every backend, for good.
func TestHostile_HugeFidCannotStopUploads(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		cl := hostileCluster(t, dsn, testConfig())
		c := cl.dial()
		for _, fid := range []string{
			"9223372036854775807",  // MaxInt64
			"9223372036854775808",  // overflows int64
			"99999999999999999999", // overflows, once parsed as 0 (allocate)
			strconv.FormatInt(store.MaxNamedFid+1, 10),
		} {
			got := c.do("create_open domain=d&class=one&key=evil&fid=" + fid)
			want := "ERR bad_params " + esc(fmt.Sprintf("fid must be between 1 and %d", store.MaxNamedFid))
			if got != want {
				t.Errorf("create_open fid=%s:\n got %s\nwant %s", fid, got, want)
			}
		}
		// The bound itself is accepted, and raises the counter to it...
		r := parseOK(t, c.do(fmt.Sprintf("create_open domain=d&class=one&key=max&fid=%d", store.MaxNamedFid)))
		if got := mustInt(t, r.Get("fid")); got != store.MaxNamedFid {
			t.Fatalf("create_open fid=MaxNamedFid gave fid %d", got)
		}
		// ...and the next ordinary upload still succeeds, above it.
		fid := cl.upload(t, c, "after", []byte("still works"))
		if fid <= store.MaxNamedFid {
			t.Errorf("ordinary upload after the bound got fid %d; want above %d", fid, store.MaxNamedFid)
		}
		// The store refuses a named fid above the bound whoever calls it.
		doms, err := cl.st.Domains(t.Context())
		if err != nil || len(doms) != 1 {
			t.Fatalf("domains %v, %v", doms, err)
		}
		_, err = cl.st.CreateTempFile(t.Context(), store.TempFile{Fid: store.MaxNamedFid + 1, DomainID: doms[0].ID, Key: "direct"})
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateTempFile(fid MaxNamedFid+1): %v; want ErrInvalid", err)
		}
	})
}

// Attack 6: an overflowing weight was parsed as 0 and silently set, and
// store error texts reached clients.
func TestHostile_OverflowingNumbersRefused(t *testing.T) {
	cl := hostileCluster(t, testDSN(t), testConfig())
	c := cl.dial()
	for _, w := range []string{"99999999999999999999", "9223372036854775807", "8388608"} {
		c.want("set_weight host=h1&device=1&weight="+w, "ERR bad_params Invalid+parameters+to+command%3B+please+see+documentation")
	}
	devs, err := cl.st.Devices(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 || devs[0].Weight != 100 {
		t.Errorf("after refused set_weight, devices %+v; want weight 100 unchanged", devs)
	}
	c.want("set_weight host=h1&device=1&weight=8388607", "OK ")

	// A name the store refuses: the reply carries no store text.
	long := strings.Repeat("x", 300)
	for _, line := range []string{"create_domain domain=" + long, "create_class domain=d&class=" + long + "&mindevcount=1"} {
		got := c.do(line)
		if strings.Contains(got, "store") || strings.Contains(got, "xxxx") || !strings.HasPrefix(got, "ERR ") {
			t.Errorf("%.40s...: reply %q echoes internal text", line, got)
		}
	}
}

// usage is the test process's goroutines and live heap after a GC: the
// tracker runs in this process, so its growth is the tracker's.
type usage struct {
	goroutines int
	heap       uint64 // HeapInuse
	rss        uint64 // resident set, where /proc tells it (else 0)
}

func measure() usage {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{runtime.NumGoroutine(), ms.HeapInuse, rss()}
}

// rss reads this process's resident set size from /proc/self/statm.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// settle polls until the goroutine count is back within slack of base (the
// tracker closes connections asynchronously), failing after d.
func settle(t *testing.T, d time.Duration, base, slack int, what string) usage {
	t.Helper()
	var u usage
	deadline := time.Now().Add(d)
	for {
		u = measure()
		if u.goroutines <= base+slack || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if u.goroutines > base+slack {
		t.Errorf("%s: %d goroutines, %d before; bound is %d more", what, u.goroutines, base, slack)
	}
	return u
}

// dialFrom connects to addr from the loopback address local.
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, local, err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// readAdmin reads a "!" reply up to its "." line.
func readAdmin(t *testing.T, c *lineConn) []string {
	t.Helper()
	var out []string
	for {
		l := strings.TrimSuffix(c.readLine(), "\r\n")
		if l == "." {
			return out
		}
		out = append(out, l)
	}
}

// Attack 2: "!watch" connections that never read, and a flood of error
// lines. The stream to each watcher is bounded and says what it dropped;
// the tracker's goroutines and heap stay within a stated bound however many
// lines are logged.
func TestHostile_WatchStormBounded(t *testing.T) {
	const (
		watchers = 8
		lines    = 40000
		// Bounds: each watcher costs its connection's goroutine and one
		// stream writer; the ring holds at most 1024 lines of 1 KB.
		goroutineSlack = 2*watchers + 20
		heapBound      = 64 << 20
	)
	tt := startTracker(t, testConfig(), nil, nil)
	base := measure()
	var conns []*lineConn
	for i := 0; i < watchers; i++ {
		c := tt.dial()
		c.send("!watch\r\n")
		if got := readAdmin(t, c); len(got) != 1 || got[0] != "Added you to watcher list." {
			t.Fatalf("!watch: %q", got)
		}
		conns = append(conns, c)
	}
	log := tracker.Logger(tt.tr)
	key := strings.Repeat("k", 10000) // as long as a request line lets a key be
	peak := base
	for i := 0; i < lines; i++ {
		log.Error("command failed", "cmd", "create_open", "key", key, "n", i)
		if i%500 == 0 {
			if n := runtime.NumGoroutine(); n > peak.goroutines {
				peak.goroutines = n
			}
		}
	}
	after := measure()
	t.Logf("before: %d goroutines, heap %d KB, RSS %d MB; peak %d goroutines; after %d lines to %d silent watchers: %d goroutines, heap %d KB, RSS %d MB",
		base.goroutines, base.heap>>10, base.rss>>20, peak.goroutines, lines, watchers, after.goroutines, after.heap>>10, after.rss>>20)
	if peak.goroutines > base.goroutines+goroutineSlack {
		t.Errorf("peak %d goroutines during the storm, %d before; bound is %d more", peak.goroutines, base.goroutines, goroutineSlack)
	}
	if after.heap > base.heap+heapBound {
		t.Errorf("heap %d KB after the storm, %d KB before; bound is %d KB more", after.heap>>10, base.heap>>10, heapBound>>10)
	}
	// RSS never shrinks much, so it also bounds the peak: the original
	// report saw 25 MB become 706 MB.
	if base.rss > 0 && !raceDetector && after.rss > base.rss+2*heapBound {
		t.Errorf("RSS %d MB after the storm, %d MB before; bound is %d MB more", after.rss>>20, base.rss>>20, 2*heapBound>>20)
	}

	// A watcher that reads at last gets the lines the ring still holds,
	// truncated, after a line saying how many it lost.
	c := conns[0]
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var dropped bool
	for n := 0; n < lines; n++ {
		l, err := c.br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the watch stream: %v", err)
		}
		if len(l) > 1100 {
			t.Fatalf("watch line of %d bytes; want at most about 1 KB", len(l))
		}
		if strings.HasPrefix(l, "!watch: ") && strings.Contains(l, "lines dropped") {
			dropped = true
			break
		}
		// Lines stay whole however writes were cut by the deadline.
		if !strings.HasPrefix(l, ":: command failed ") || !strings.HasSuffix(l, "\r\n") || strings.Count(l, "command failed") != 1 {
			t.Fatalf("watch line %d is not one whole line: %.120q", n, l)
		}
	}
	if !dropped {
		t.Error("the slow watcher was never told lines were dropped")
	}
	// Watchers that go away leave nothing behind.
	for _, c := range conns {
		c.nc.Close()
	}
	settle(t, 10*time.Second, base.goroutines, 5, "after the watchers left")
}

// Logged keys and arguments are truncated.
func TestHostile_LogTruncated(t *testing.T) {
	var buf syncBuffer
	cfg := testConfig()
	cfg.AdminNetworks = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	tt := startTracker(t, cfg, nil, &tracker.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	c := tt.dial()
	c.send("!" + strings.Repeat("x", 20000) + "\r\n")
	if got := readAdmin(t, c); len(got) != 1 || !strings.HasPrefix(got[0], "ERROR: access denied") {
		t.Fatalf("refused admin command: %q", got)
	}
	tracker.Logger(tt.tr).Error("command failed", "key", strings.Repeat("k", 20000), "err", errors.New(strings.Repeat("e", 20000)))
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if len(l) > 2000 {
			t.Errorf("log line of %d bytes: %.200s...", len(l), l)
		}
	}
	if !strings.Contains(buf.String(), "bytes more") {
		t.Errorf("log does not say what was cut:\n%s", buf.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Attack 3: "!" admin commands from anyone. admin_networks limits them;
// refusals are an ERROR line and a log line, and nothing is done.
func TestHostile_AdminNetworks(t *testing.T) {
	var buf syncBuffer
	cfg := testConfig()
	var err error
	if cfg.AdminNetworks, err = tracker.ParseNetworks("127.0.0.2, ::1"); err != nil {
		t.Fatal(err)
	}
	var stopped atomic.Bool
	tt := startTracker(t, cfg, nil, &tracker.Options{Shutdown: func() { stopped.Store(true) },
		Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	outsider := &lineConn{t: t, nc: dialFrom(t, "127.0.0.1", tt.addr)}
	outsider.br = bufio.NewReader(outsider.nc)
	for _, cmd := range []string{"shutdown", "want 0 queryworker", "to replicate x", "recent", "watch", "version"} {
		outsider.send("!" + cmd + "\r\n")
		got := readAdmin(t, outsider)
		if len(got) != 1 || !strings.HasPrefix(got[0], "ERROR: access denied: !") || !strings.Contains(got[0], "127.0.0.1") {
			t.Errorf("!%s from outside admin_networks: %q", cmd, got)
		}
	}
	if stopped.Load() {
		t.Error("!shutdown from outside admin_networks stopped the tracker")
	}
	if !strings.Contains(buf.String(), "admin command refused") {
		t.Error("refusals were not logged")
	}
	// Ordinary commands still work from anywhere.
	outsider.send("noop\r\n")
	if got := outsider.readLine(); got != "OK \r\n" {
		t.Errorf("noop from outside admin_networks: %q", got)
	}
	insider := &lineConn{t: t, nc: dialFrom(t, "127.0.0.2", tt.addr)}
	insider.br = bufio.NewReader(insider.nc)
	insider.send("!version\r\n")
	if got := readAdmin(t, insider); len(got) != 1 || got[0] != tracker.Version {
		t.Errorf("!version from inside admin_networks: %q", got)
	}
	insider.send("!shutdown\r\n")
	readAdmin(t, insider)
	if !stopped.Load() {
		t.Error("!shutdown from inside admin_networks did not stop the tracker")
	}
}

// Attack 4: 2,000 connections holding a partial line. line_timeout closes
// them; the tracker's goroutines and heap come back within a bound.
func TestHostile_PartialLineFlood(t *testing.T) {
	const (
		flood          = 2000
		goroutineSlack = 10
		heapBound      = 32 << 20
	)
	cfg := testConfig()
	cfg.LineTimeout = time.Second
	tt := startTracker(t, cfg, nil, nil)
	base := measure()
	conns := make([]net.Conn, 0, flood)
	start := time.Now()
	for i := 0; i < flood; i++ {
		nc, err := net.DialTimeout("tcp", tt.addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		defer nc.Close()
		// Most of a maximal line, never finished.
		if _, err := io.WriteString(nc, "get_paths domain=d&key="+strings.Repeat("a", 16<<10)); err != nil {
			t.Fatalf("connection %d: write: %v", i, err)
		}
		conns = append(conns, nc)
	}
	during := measure()
	// Every one is closed by the tracker once line_timeout has passed (a
	// read then sees EOF or a reset). Poll up to a deadline from the bound.
	deadline := start.Add(cfg.LineTimeout + 30*time.Second)
	for i, nc := range conns {
		nc.SetReadDeadline(deadline)
		var b [64]byte
		if _, err := nc.Read(b[:]); err == nil || isTimeoutErr(err) {
			t.Fatalf("connection %d still open %v after its partial line (line_timeout %v): %v", i, time.Since(start), cfg.LineTimeout, err)
		}
	}
	closed := time.Since(start)
	after := settle(t, 10*time.Second, base.goroutines, goroutineSlack, "after the partial-line flood")
	t.Logf("%d partial lines: %d goroutines and heap %d KB during, all closed after %v; after: %d goroutines (%d before), heap %d KB (%d before)",
		flood, during.goroutines, during.heap>>10, closed.Round(time.Millisecond), after.goroutines, base.goroutines, after.heap>>10, base.heap>>10)
	if after.heap > base.heap+heapBound {
		t.Errorf("heap %d KB after the flood, %d KB before; bound is %d KB more", after.heap>>10, base.heap>>10, heapBound>>10)
	}
	// 2,000 connections each pinning a 64 KB line would be 128 MB.
	if base.rss > 0 && !raceDetector && after.rss > base.rss+4*heapBound {
		t.Errorf("RSS %d MB after the flood, %d MB before; bound is %d MB more", after.rss>>20, base.rss>>20, 4*heapBound>>20)
	}
	// The tracker still answers.
	tt.dial().want("noop", "OK ")
}

func isTimeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A complete request resets nothing: an idle client between requests is
// not bound by line_timeout (long-lived Perl clients rely on that), and
// idle_timeout is off by default, as in the original.
func TestHostile_IdleClientsStay(t *testing.T) {
	if d := tracker.DefaultConfig().IdleTimeout; d != 0 {
		t.Errorf("default idle_timeout %v; want 0 (never), as the original", d)
	}
	cfg := testConfig()
	cfg.LineTimeout = 200 * time.Millisecond
	tt := startTracker(t, cfg, nil, nil)
	c := tt.dial()
	c.want("noop", "OK ")
	time.Sleep(4 * cfg.LineTimeout)
	c.want("noop", "OK ")
}

// Attack 4: one address takes every connection slot. max_conns_per_ip
// refuses the excess with an error line; other addresses still connect.
func TestHostile_ConnsPerAddress(t *testing.T) {
	cfg := testConfig()
	cfg.MaxConnsPerIP = 50
	tt := startTracker(t, cfg, nil, nil)
	var open []*lineConn
	for i := 0; i < cfg.MaxConnsPerIP; i++ {
		c := tt.dial()
		c.want("noop", "OK ")
		open = append(open, c)
	}
	for i := 0; i < 10; i++ {
		c := tt.dial()
		c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := c.br.ReadString('\n')
		if err != nil || !strings.HasPrefix(got, "ERR too_many_connections ") {
			t.Fatalf("connection %d over max_conns_per_ip: %q, %v", cfg.MaxConnsPerIP+i+1, got, err)
		}
	}
	other := &lineConn{t: t, nc: dialFrom(t, "127.0.0.3", tt.addr)}
	other.br = bufio.NewReader(other.nc)
	other.want("noop", "OK ")
	// A slot freed is a slot available again.
	open[0].nc.Close()
	waitFor(t, 10*time.Second, "a freed slot to be reusable", func() bool {
		c := tt.dial()
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		c.send("noop\r\n")
		got, err := c.br.ReadString('\n')
		c.nc.Close()
		return err == nil && got == "OK \r\n"
	})
}

// Attacks that already held, repeated so they keep holding: malformed and
// oversize request lines get an error, the tracker stays up and leaks
// nothing.
func TestHostile_MalformedLines(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	base := measure()
	c := tt.dial()
	for _, line := range []string{
		"\x00\x01\x02\xff\xfe", "get_paths domain=%zz&key=%", "get_paths domain=d&key=%E0%80%AF", "create_open " + strings.Repeat("&", 5000),
		"!" + strings.Repeat("\xff", 100), "!want 99999999999999999999999 queryworker", "!want -1 replicate", "!to", "sleep duration=1e99",
		"list_keys domain=d&limit=99999999999999999999", "list_fids from=-99999999999999999999&to=99999999999999999999",
		"create_open domain=d&key=k&fid=-1", "set_weight host=h&device=99999999999999999999&weight=1", "\t \t", "x\ry",
	} {
		c.send(line + "\r\n")
		l := c.readLine()
		if strings.HasPrefix(line, "!") {
			for strings.TrimSuffix(l, "\r\n") != "." {
				l = c.readLine()
			}
			continue
		}
		if !strings.HasPrefix(l, "ERR ") && !strings.HasPrefix(l, "OK ") {
			t.Errorf("%q: reply %q", line, l)
		}
	}
	c.want("noop", "OK ")
	// A line over MaxLineBytes is refused and its connection closed.
	long := tt.dial()
	long.send("get_paths domain=d&key=" + strings.Repeat("a", tracker.MaxLineBytes) + "\r\n")
	if got := long.readLine(); !strings.HasPrefix(got, "ERR line_too_long ") {
		t.Errorf("oversize line: %q", got)
	}
	long.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := long.br.ReadByte(); err == nil {
		t.Error("connection still open after an oversize line")
	}
	c.want("noop", "OK ")
	c.nc.Close()
	settle(t, 10*time.Second, base.goroutines, 5, "after the malformed lines")
}

// Path traversal against the storage node, in every encoding a client
// might try, for reads and writes: refused, and nothing is written outside
// the device directory.
func TestHostile_NodeTraversal(t *testing.T) {
	n := startNode(t, "127.0.0.2", 1)
	outside := filepath.Dir(n.docroot)
	before := dirNames(t, outside)
	for _, p := range []string{
		"/dev1/../../escape", "/dev1/%2e%2e/%2e%2e/escape", "/dev1/%2E%2E/escape", "/dev1/%252e%252e/escape",
		"/dev1/..%2f..%2fescape", "/dev1/.%2e/escape", "/dev1/%c0%ae%c0%ae/escape", "/dev1/..\\..\\escape",
		"/dev1/x/../../../escape", "/dev1/%00/escape", "/dev1/./../escape", "/../escape", "/dev1/%u002e%u002e/escape",
		"//dev1/../../escape", "/dev1/...//escape", "/dev1/..;/escape",
	} {
		for _, method := range []string{"GET", "PUT", "DELETE", "MKCOL"} {
			nc, err := net.DialTimeout("tcp", n.ip+":"+n.port, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(nc, "%s %s HTTP/1.0\r\nContent-Length: 4\r\n\r\nevil", method, p)
			l, _ := bufio.NewReader(nc).ReadString('\n')
			nc.Close()
			f := strings.Fields(l)
			if len(f) < 2 || (f[1] != "400" && f[1] != "403" && f[1] != "404" && f[1] != "405") {
				t.Errorf("%s %s: %q; want 400, 403, 404 or 405", method, p, strings.TrimSpace(l))
			}
		}
	}
	if after := dirNames(t, outside); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("names outside the docroot changed: %v -> %v", before, after)
	}
	if _, err := os.Stat(filepath.Join(n.docroot, "escape")); err == nil {
		t.Error("a traversal wrote docroot/escape")
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// A watcher that reads slowly gets whole lines in order, and every gap in
// them is exactly what a "lines dropped" notice announced.
func TestHostile_WatchSlowReaderAccounting(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	c := tt.dial()
	c.send("!watch\r\n")
	readAdmin(t, c)
	const lines = 30000 // 9 MB: more than the socket buffers hold
	log := tracker.Logger(tt.tr)
	pad := strings.Repeat("p", 200)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < lines; i++ {
			log.Warn("seq", "n", i, "pad", pad)
		}
		log.Warn("seq", "n", lines, "pad", "end")
	}()
	time.Sleep(2500 * time.Millisecond) // a reader asleep: writes time out, the ring overflows
	c.nc.SetReadDeadline(time.Now().Add(60 * time.Second))
	last, drops, totalDropped := -1, 0, 0
	var announced int
	for last < lines {
		l, err := c.br.ReadString('\n')
		if err != nil {
			t.Fatalf("after n=%d: %v", last, err)
		}
		if strings.HasPrefix(l, "!watch: ") {
			if _, err := fmt.Sscanf(l, "!watch: %d lines dropped", &announced); err != nil {
				t.Fatalf("notice %q: %v", l, err)
			}
			drops++
			totalDropped += announced
			continue
		}
		var n int
		if !strings.HasPrefix(l, ":: seq ") || strings.Count(l, "seq ") != 1 || !strings.HasSuffix(l, "\r\n") {
			t.Fatalf("after n=%d, not one whole line: %.100q", last, l)
		}
		if _, err := fmt.Sscanf(strings.Fields(l)[2], "n=%d", &n); err != nil {
			t.Fatalf("line %.80q: %v", l, err)
		}
		if want := last + 1 + announced; n != want {
			t.Fatalf("after n=%d and %d announced dropped, got n=%d; want %d", last, announced, n, want)
		}
		last, announced = n, 0
	}
	<-done
	t.Logf("%d lines: %d notices announced %d dropped", lines+1, drops, totalDropped)
	if drops == 0 {
		t.Error("no line was dropped: the test did not make the reader slow enough to check the accounting")
	}
}
