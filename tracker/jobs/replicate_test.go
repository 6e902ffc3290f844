package jobs_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	model "github.com/gomogile/gomogile/tracker/internal/cluster"
	"github.com/gomogile/gomogile/tracker/jobs"
)

func TestFidPath(t *testing.T) {
	for _, tc := range []struct {
		dev  int
		fid  int64
		want string
	}{
		{1, 123, "/dev1/0/000/000/0000000123.fid"},
		{7, 1234567890, "/dev7/1/234/567/1234567890.fid"},
		{12, 4500321, "/dev12/0/004/500/0004500321.fid"},
		{3, 98765432109, "/dev3/9/876/543/98765432109.fid"},
	} {
		if got := model.FidPath(tc.dev, tc.fid); got != tc.want {
			t.Errorf("FidPath(%d, %d) = %q; want %q", tc.dev, tc.fid, got, tc.want)
		}
	}
}

func TestReplicate_MinDevCount(t *testing.T) {
	for _, min := range []int{2, 3} {
		t.Run(fmt.Sprintf("Min%d", min), func(t *testing.T) {
			c := newCluster(t)
			c.addNode(1, 2)
			c.addNode(3)
			c.addNode(4)
			cls := c.class("c", min, store.HashNone)
			data := bytes.Repeat([]byte("replicate me "), 1000)
			fid := c.putFile("k", cls, data, 1)
			start(t, c.st, fastOptions(t))

			waitFor(t, 10*time.Second, "replication", func() bool { return !inQueue(t, c.st, store.QueueReplicate, fid) })
			on := fileOn(t, c.st, fid)
			if len(on) != min {
				t.Fatalf("file_on = %v; want %d devices", on, min)
			}
			hosts := map[int]bool{}
			for _, d := range on {
				hosts[c.nodeOf(d).host.ID] = true
				if got := c.blob(d, fid); !bytes.Equal(got, data) {
					t.Errorf("dev%d holds %d bytes; want the %d uploaded", d, len(got), len(data))
				}
			}
			if len(hosts) != min {
				t.Errorf("copies on %d hosts (%v); want %d distinct hosts", len(hosts), on, min)
			}
			f, err := c.st.File(t.Context(), fid)
			if err != nil {
				t.Fatal(err)
			}
			if f.DevCount != min {
				t.Errorf("devcount = %d; want %d", f.DevCount, min)
			}
			if n := queueLen(t, c.st, store.QueueReplicate); n != 0 {
				t.Errorf("replicate queue has %d rows; want 0", n)
			}
		})
	}
}

func TestReplicate_SourceMissing(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("c", 2, store.HashNone)
	fid := c.putFile("k", cls, []byte("gone soon"), 1)
	// The only copy vanishes from disk; file_on still names dev1.
	if err := removeFile(c.blobPath(1, fid)); err != nil {
		t.Fatal(err)
	}
	start(t, c.st, fastOptions(t))

	var it store.QueueItem
	waitFor(t, 10*time.Second, "a failed attempt", func() bool {
		var err error
		it, err = c.st.QueueItem(t.Context(), store.QueueReplicate, fid)
		return err == nil && it.FailCount > 0
	})
	if it.FailCount != 1 {
		t.Errorf("failcount = %d; want 1", it.FailCount)
	}
	now, _ := c.st.Now(t.Context())
	// First backoff is 15 s ±20%.
	if d := it.NextTry.Sub(now); d < 10*time.Second || d > 20*time.Second {
		t.Errorf("next try in %v; want about 15s", d)
	}
	if on := fileOn(t, c.st, fid); len(on) != 1 || c.hasBlob(2, fid) {
		t.Errorf("file_on = %v, blob on dev2 = %v; want nothing copied", on, c.hasBlob(2, fid))
	}
}

func TestReplicate_NoSourceParks(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("c", 2, store.HashNone)
	fid := c.putFile("k", cls, []byte("x"), 1)
	if _, err := c.st.RemoveFileOn(t.Context(), fid, 1); err != nil {
		t.Fatal(err)
	}
	start(t, c.st, fastOptions(t))
	waitFor(t, 10*time.Second, "parking", func() bool {
		it, err := c.st.QueueItem(t.Context(), store.QueueReplicate, fid)
		return err == nil && it.NextTry.Equal(store.EndOfTime)
	})
}

// Two trackers on one database replicate a batch; no fid is copied more
// often than its policy needs.
func TestReplicate_TwoTrackers(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	c.addNode(3)
	cls := c.class("c", 2, store.HashNone)
	const n = 30
	fids := make([]int64, n)
	for i := range fids {
		fids[i] = c.putFile(fmt.Sprintf("k%d", i), cls, []byte(fmt.Sprintf("file %d", i)), 1+i%3)
	}
	client, counter := newCountingClient()
	for i, st := range []*store.Store{c.st, c.openStore()} {
		o := fastOptions(t)
		o.HTTPClient = client
		o.ReplicateWorkers = 3
		o.Hostname = fmt.Sprintf("tracker-%d", i)
		start(t, st, o)
	}
	waitFor(t, 20*time.Second, "the batch", func() bool { return queueLen(t, c.st, store.QueueReplicate) == 0 })
	counter.mu.Lock()
	defer counter.mu.Unlock()
	for _, fid := range fids {
		if got := counter.puts[fmt.Sprint(fid)]; got != 1 {
			t.Errorf("fid %d was PUT %d times; want 1", fid, got)
		}
		if on := fileOn(t, c.st, fid); len(on) != 2 {
			t.Errorf("fid %d on %v; want 2 devices", fid, on)
		}
	}
}

// Close while a copy hangs: the row is due again at once and the fid's
// lock is free.
func TestManager_CloseHandsBack(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("c", 2, store.HashNone)
	fid := c.putFile("k", cls, []byte("slow"), 1)

	started := make(chan struct{}, 1)
	o := fastOptions(t)
	o.CloseGrace = 100 * time.Millisecond
	o.HTTPClient = newBlockingClient(started)
	m := jobs.New(c.st, o)
	if err := m.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		m.Close()
		t.Fatal("no PUT started")
	}
	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	it, err := c.st.QueueItem(t.Context(), store.QueueReplicate, fid)
	if err != nil {
		t.Fatalf("queue row after close: %v", err)
	}
	now, _ := c.st.Now(t.Context())
	if it.NextTry.After(now.Add(time.Second)) {
		t.Errorf("next try %v; want due now (%v)", it.NextTry, now)
	}
	if it.FailCount != 0 {
		t.Errorf("failcount = %d; want 0 (handing back is no failure)", it.FailCount)
	}
	l, err := c.st.Lock(t.Context(), fmt.Sprintf("mgfs:fid:%d:replicate", fid), 0)
	if err != nil {
		t.Fatalf("lock after close: %v", err)
	}
	l.Release(context.Background())
	for _, s := range m.Stats() {
		if s.Running != 0 {
			t.Errorf("%s: %d running after close; want 0", s.Name, s.Running)
		}
	}
}

// After Close no goroutine of the Manager is left.
func TestManager_CloseLeavesNoGoroutines(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("c", 2, store.HashNone)
	fid := c.putFile("k", cls, []byte("leak check"), 1)
	o := fastOptions(t)
	o.ReplicateWorkers, o.DeleteWorkers, o.FsckWorkers = 3, 2, 2
	m := jobs.New(c.st, o)
	if err := m.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "replication", func() bool { return len(fileOn(t, c.st, fid)) == 2 })
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Nothing of the Manager may run: no worker, no HTTP connection of its
	// client.
	leaked := func() string {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "gomogile/tracker/jobs.(*") || strings.Contains(g, "net/http.(*persistConn)") {
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

// failingTransport answers 500 to blob PUTs whose path has a given prefix.
type failingTransport struct {
	base   http.RoundTripper
	prefix string
	mu     sync.Mutex
	failed int
}

func (f *failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, f.prefix) {
		f.mu.Lock()
		f.failed++
		f.mu.Unlock()
		if r.Body != nil {
			r.Body.Close()
		}
		return &http.Response{StatusCode: http.StatusInternalServerError, Status: "500 broken disk",
			Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}, Request: r}, nil
	}
	return f.base.RoundTrip(r)
}

// A destination that refuses the PUT makes the policy pick another device
// in the same attempt; the file is not failed.
func TestReplicate_DestinationFailureTriesAnother(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	c.addNode(4)
	// dev4 is nearly weightless, so dev2 is almost always tried first.
	if err := c.st.SetDeviceWeight(t.Context(), 4, 1); err != nil {
		t.Fatal(err)
	}
	cls := c.class("c", 2, store.HashMD5)
	data := []byte("needs a second home")
	fid := c.putFile("k", cls, data, 1)
	ft := &failingTransport{base: http.DefaultTransport.(*http.Transport).Clone(), prefix: "/dev2/"}
	o := fastOptions(t)
	o.HTTPClient = &http.Client{Transport: ft}
	start(t, c.st, o)
	waitFor(t, 10*time.Second, "replication", func() bool { return !inQueue(t, c.st, store.QueueReplicate, fid) })
	if on := fileOn(t, c.st, fid); len(on) != 2 || on[0] != 1 || on[1] != 4 {
		t.Errorf("file_on = %v; want [1 4]", on)
	}
	if c.hasBlob(2, fid) {
		t.Errorf("dev2 holds a blob though its PUT failed")
	}
	if got := c.blob(4, fid); !bytes.Equal(got, data) {
		t.Errorf("dev4 holds %q; want %q", got, data)
	}
	t.Logf("PUTs refused by dev2: %d", ft.failed)
}

// Devices added while the Manager runs are not failures before the monitor
// has looked at them: the file is copied as soon as it has, not after the
// 15 s backoff of a failed attempt.
func TestReplicate_NewDevicesNotYetObserved(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	cls := c.class("c", 2, store.HashNone)
	o := fastOptions(t)
	o.MonitorInterval = 500 * time.Millisecond
	m := start(t, c.st, o)
	waitFor(t, 5*time.Second, "dev1 observed", func() bool { _, ok := m.Observed(1); return ok })
	c.addNode(2)
	c.addNode(3)
	fid := c.putFile("k", cls, []byte("fresh"), 2)
	begin := time.Now()
	waitFor(t, 8*time.Second, "replication", func() bool { return !inQueue(t, c.st, store.QueueReplicate, fid) })
	if on := fileOn(t, c.st, fid); len(on) != 2 {
		t.Errorf("file_on = %v; want 2 devices", on)
	}
	t.Logf("replicated %v after the devices appeared", time.Since(begin))
}

// repl_use_get_port: the copy is read from the source host's
// http_get_port (Replicate::http_copy), and from its http_port without it.
func TestReplicate_UseGetPort(t *testing.T) {
	for _, use := range []bool{true, false} {
		t.Run(fmt.Sprintf("UseGetPort=%v", use), func(t *testing.T) {
			c := newCluster(t)
			src := c.addNode(1)
			c.addNode(2)
			// The get port is a second listener in front of the same node,
			// counting what it serves.
			var gets atomic.Int64
			target, _ := url.Parse("http://" + src.srv.HTTPAddr())
			proxy := httputil.NewSingleHostReverseProxy(target)
			tr := &http.Transport{}
			proxy.Transport = tr
			ln, err := net.Listen("tcp", src.host.IP+":0")
			if err != nil {
				t.Fatal(err)
			}
			hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".fid") {
					gets.Add(1)
				}
				proxy.ServeHTTP(w, r)
			})}
			go hs.Serve(ln)
			// Keep no idle connection: leak checks count transport goroutines.
			t.Cleanup(func() { hs.Close(); tr.CloseIdleConnections() })
			h := src.host
			h.HTTPGetPort = portOf(t, ln.Addr().String())
			if err := c.st.UpdateHost(t.Context(), h); err != nil {
				t.Fatal(err)
			}
			cls := c.class("c", 2, store.HashNone)
			data := []byte("read me from the get port")
			fid := c.putFile("k", cls, data, 1)
			o := fastOptions(t)
			o.ReplUseGetPort = use
			start(t, c.st, o)
			waitFor(t, 10*time.Second, "replication", func() bool { return !inQueue(t, c.st, store.QueueReplicate, fid) })
			if got := c.blob(2, fid); !bytes.Equal(got, data) {
				t.Fatalf("dev2 holds %q; want %q", got, data)
			}
			if n := gets.Load(); use && n == 0 || !use && n != 0 {
				t.Errorf("%d GETs of the blob on the get port with repl_use_get_port=%v", n, use)
			}
		})
	}
}
