package tracker_test

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sleep is the one request request_timeout does not bound, as the
// original's cmd_sleep had no bound; sleep_max does, and the connection
// serves on afterwards.
func TestRequest_Deadline(t *testing.T) {
	cfg := testConfig()
	cfg.SleepMax = 1500 * time.Millisecond
	cfg.RequestTimeout = time.Second
	tt := startTracker(t, cfg, nil, nil)
	c := tt.dial()
	start := time.Now()
	c.want("sleep duration=30&callid=1", "OK callid=1")
	if d := time.Since(start); d < cfg.SleepMax || d > 10*time.Second {
		t.Errorf("sleep duration=30 with request_timeout %v, sleep_max %v took %v", cfg.RequestTimeout, cfg.SleepMax, d)
	}
	c.want("noop", "OK ") // the connection still serves
}

// A client that hangs up cancels its request: with one query slot, the
// next client is served at once, not after the first one's 30 s sleep.
func TestRequest_CancelledWhenClientGoes(t *testing.T) {
	cfg := testConfig()
	cfg.QueryJobs = 1
	cfg.SleepMax = 60 * time.Second
	cfg.RequestTimeout = 60 * time.Second
	tt := startTracker(t, cfg, nil, nil)
	gone := tt.dial()
	gone.send("sleep duration=30\r\n")
	admin := tt.dial()
	waitFor(t, 5*time.Second, "the sleep to take the slot", func() bool {
		admin.send("!stats\r\n")
		busy := false
		for l := admin.readLine(); l != ".\r\n"; l = admin.readLine() {
			busy = busy || l == "processing_queries 1\r\n"
		}
		return busy
	})
	gone.nc.Close()
	c := tt.dial()
	start := time.Now()
	c.want("noop", "OK ")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("noop waited %v for a query slot held by a client that hung up", d)
	}
}

// A pipelined request is not taken for a hangup, and replies keep their
// order.
func TestRequest_PipelinedStillAnswered(t *testing.T) {
	cfg := testConfig()
	cfg.SleepMax = 5 * time.Second
	tt := startTracker(t, cfg, nil, nil)
	c := tt.dial()
	c.send("sleep duration=1&callid=a\r\nnoop callid=b\r\n")
	if got := c.readLine(); got != "OK callid=a\r\n" {
		t.Errorf("first: %q", got)
	}
	if got := c.readLine(); got != "OK callid=b\r\n" {
		t.Errorf("second: %q", got)
	}
	// Several requests in a row on one connection, each watched.
	for range 3 {
		c.want("noop", "OK ")
	}
	c.want("sleep duration=1", "OK ")
}

// Reading a whole blob is bounded by node_timeout per wait, not by
// request_timeout: create_close verifies the checksum of a blob its node
// sends slower than request_timeout, and answers OK.
func TestRequest_ChecksumOfSlowBlobOutlivesDeadline(t *testing.T) {
	cfg := testConfig()
	cfg.RequestTimeout = time.Second
	tt := startTracker(t, cfg, nil, nil)
	c := tt.dial()
	// 4 × 400 ms: longer than request_timeout, each wait short.
	slowBlobNode(t, c, func(w http.ResponseWriter, r *http.Request, b []byte) {
		for i := range 4 {
			w.Write(b[i*len(b)/4 : (i+1)*len(b)/4])
			w.(http.Flusher).Flush()
			time.Sleep(400 * time.Millisecond)
		}
	})
	r := parseOK(t, c.do("create_open domain=d&key=big"))
	body := bytes.Repeat([]byte("slow "), 2000)
	put(t, r.Get("path"), body)
	start := time.Now()
	c.want(fmt.Sprintf("create_close domain=d&key=big&fid=%s&devid=1&path=%s&checksum=MD5:%x&checksumverify=1",
		r.Get("fid"), esc(r.Get("path")), md5.Sum(body)), "OK ")
	if d := time.Since(start); d < cfg.RequestTimeout {
		t.Errorf("create_close took %v; the slow node should have taken longer than request_timeout", d)
	}
}

// A node that stops sending a blob half way is given up on after
// node_timeout, however long request_timeout is.
func TestRequest_ChecksumOfStalledBlobFailsAfterNodeTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.RequestTimeout = 60 * time.Second
	cfg.NodeTimeout = time.Second
	tt := startTracker(t, cfg, nil, nil)
	c := tt.dial()
	slowBlobNode(t, c, func(w http.ResponseWriter, r *http.Request, b []byte) {
		w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	r := parseOK(t, c.do("create_open domain=d&key=big"))
	body := bytes.Repeat([]byte("stall "), 2000)
	put(t, r.Get("path"), body)
	start := time.Now()
	got := c.do(fmt.Sprintf("create_close domain=d&key=big&fid=%s&devid=1&path=%s&checksum=MD5:%x&checksumverify=1",
		r.Get("fid"), esc(r.Get("path")), md5.Sum(body)))
	if !strings.HasPrefix(got, "ERR checksum_mismatch ") {
		t.Errorf("create_close of a stalled blob: %s; want checksum_mismatch (unreadable)", got)
	}
	if d := time.Since(start); d > cfg.NodeTimeout+time.Second {
		t.Errorf("create_close took %v with a stalled node; node_timeout is %v", d, cfg.NodeTimeout)
	}
}

// slowBlobNode registers host h1 with device 1 in domain d: a storage node
// whose blob GETs are answered by send (headers already set), everything
// else by a real node.
func slowBlobNode(t *testing.T, c *lineConn, send func(w http.ResponseWriter, r *http.Request, blob []byte)) {
	t.Helper()
	real := startNode(t, "127.0.0.2", 1)
	target, _ := url.Parse("http://" + real.srv.HTTPAddr())
	proxy := httputil.NewSingleHostReverseProxy(target)
	slow := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, ".fid") {
			proxy.ServeHTTP(w, r)
			return
		}
		b, err := os.ReadFile(real.blobPath(1, fidOfURLPath(r.URL.Path)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		send(w, r, b)
	})}
	ln, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Fatal(err)
	}
	go slow.Serve(ln)
	t.Cleanup(func() { slow.Close() })
	c.want("create_domain domain=d", "OK domain=d")
	c.want(fmt.Sprintf("create_host host=h1&ip=127.0.0.3&port=%d&status=alive", ln.Addr().(*net.TCPAddr).Port), "OK hostid=1&hostname=h1")
	c.want("create_device hostname=h1&devid=1&state=alive", "OK ")
}

// fidOfURLPath is the fid of a blob path's last element.
func fidOfURLPath(p string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(p[strings.LastIndexByte(p, '/')+1:], ".fid"), 10, 64)
	return n
}
