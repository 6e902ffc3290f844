package tracker_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/mogstored"
	"github.com/gomogile/gomogile/tracker"
)

// streamPort finds a TCP port free on every one of ips: the one
// mogstored_stream_port the tracker watches all nodes on.
func streamPort(t *testing.T, ips ...string) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", ips[0]+":0")
		if err != nil {
			t.Fatal(err)
		}
		_, ps, _ := net.SplitHostPort(ln.Addr().String())
		port, _ := strconv.Atoi(ps)
		lns := []net.Listener{ln}
		ok := true
		for _, ip := range ips[1:] {
			l, err := net.Listen("tcp", net.JoinHostPort(ip, ps))
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

// startWatchedNode is startNode with the management port on port, so the
// tracker's monitor finds its watch stream.
func startWatchedNode(t *testing.T, ip string, port int, devids ...int) *node {
	t.Helper()
	dir := t.TempDir()
	for _, id := range devids {
		if err := os.MkdirAll(filepath.Join(dir, "dev"+itoa(id)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv := mogstored.New(mogstored.Config{DocRoot: dir, HTTPListen: ip + ":0", MgmtListen: net.JoinHostPort(ip, itoa(port)),
		Logger: quietLogger(), UsageInterval: 200 * time.Millisecond})
	if err := srv.Open(t.Context()); err != nil {
		t.Fatalf("mogstored on %s: %v", ip, err)
	}
	t.Cleanup(func() { srv.Close() })
	_, hp, _ := net.SplitHostPort(srv.HTTPAddr())
	return &node{srv: srv, docroot: dir, ip: ip, port: hp}
}

// laxNode is an HTTP storage node that stores whatever it is sent and
// ignores Content-MD5, as most servers do; its listener is on ip.
func laxNode(t *testing.T, ip string) string {
	t.Helper()
	var mu sync.Mutex
	files := map[string][]byte{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.Method {
		case http.MethodGet:
			if strings.HasSuffix(r.URL.Path, "/usage") {
				io.WriteString(w, "available: 900000\nused: 100000\ntotal: 1000000\n")
				return
			}
			b, ok := files[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Write(b)
		case http.MethodPut:
			b, _ := io.ReadAll(r.Body)
			files[r.URL.Path] = b
			w.WriteHeader(http.StatusCreated)
		case http.MethodDelete:
			delete(files, r.URL.Path)
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusCreated) // MKCOL
		}
	})
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// scriptedWatch serves "watch" on addr and sends report to every
// connection, then holds it open: a node whose figures the test picks.
func scriptedWatch(t *testing.T, addr, report string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if l, err := bufio.NewReader(c).ReadString('\n'); err == nil && l == "watch\n" {
				io.WriteString(c, report)
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
}

// devicesByID runs get_devices and indexes the fields by devid.
func devicesByID(t *testing.T, c *lineConn) map[string]map[string]string {
	t.Helper()
	r := parseOK(t, c.do("get_devices"))
	n, _ := strconv.Atoi(r.Get("devices"))
	out := map[string]map[string]string{}
	for i := 1; i <= n; i++ {
		p := "dev" + itoa(i) + "_"
		f := map[string]string{}
		for k, v := range r {
			if strings.HasPrefix(k, p) {
				f[strings.TrimPrefix(k, p)] = v[0]
			}
		}
		out[f["devid"]] = f
	}
	return out
}

// get_devices reports the monitor's utilization (verbatim, as the node
// sent it) and reject_bad_md5 (1 for our mogstored, 0 for a server that
// ignores Content-MD5), with mogstored_stream_port from the config; both
// are empty while unknown.
func TestGetDevices_UtilizationAndRejectBadMD5(t *testing.T) {
	if _, err := os.Stat("/proc/diskstats"); err != nil {
		t.Skip("no /proc/diskstats: mogstored cannot serve watch here")
	}
	port := streamPort(t, "127.0.0.2", "127.0.0.3", "127.0.0.4")
	n2 := startWatchedNode(t, "127.0.0.2", port, 1)
	n3 := startWatchedNode(t, "127.0.0.3", port, 2)
	laxPort := laxNode(t, "127.0.0.4")
	// Figures are passed on as sent, not reformatted: "3.5" stays "3.5".
	scriptedWatch(t, net.JoinHostPort("127.0.0.4", itoa(port)), "3\t3.5\n.\n")

	st := openStore(t, testDSN(t))
	cfg := testConfig()
	cfg.MogstoredStreamPort = port
	j, err := tracker.NewJobs(st, cfg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	tt := startTracker(t, cfg, st, &tracker.Options{Jobs: j})
	c := tt.dial()
	for i, h := range []struct{ ip, port string }{{n2.ip, n2.port}, {n3.ip, n3.port}, {"127.0.0.4", laxPort}} {
		id := itoa(i + 1)
		c.want("create_host host=h"+id+"&ip="+h.ip+"&port="+h.port+"&status=alive", "OK hostid="+id+"&hostname=h"+id)
		c.want("create_device devid="+id+"&hostid="+id, "OK ")
	}

	ourUtil := regexp.MustCompile(`^(\d{1,3}\.\d\d|-)$`) // what our mogstored sends
	want := map[string]struct {
		util   *regexp.Regexp
		reject string
	}{
		"1": {ourUtil, "1"},
		"2": {ourUtil, "1"},
		"3": {regexp.MustCompile(`^3\.5$`), "0"},
	}
	var devs map[string]map[string]string
	waitFor(t, 20*time.Second, "utilization and reject_bad_md5 of all devices", func() bool {
		devs = devicesByID(t, c)
		for id, w := range want {
			d := devs[id]
			if d == nil || !w.util.MatchString(d["utilization"]) || d["reject_bad_md5"] != w.reject {
				return false
			}
		}
		return true
	})

	// A stopped node's figure goes; the probe's last answer stays, as in
	// the original.
	n3.srv.Close()
	waitFor(t, 20*time.Second, "dev2 utilization gone", func() bool {
		devs = devicesByID(t, c)
		return devs["2"]["utilization"] == "" && devs["2"]["observed_state"] == "unreachable"
	})
	if devs["2"]["reject_bad_md5"] != "1" {
		t.Errorf("dev2 reject_bad_md5 = %q while unreachable; want the last answer 1", devs["2"]["reject_bad_md5"])
	}
	if !ourUtil.MatchString(devs["1"]["utilization"]) {
		t.Errorf("dev1 utilization = %q after another node stopped; want a figure", devs["1"]["utilization"])
	}
}
