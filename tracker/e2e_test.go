package tracker_test

// End-to-end: the Go client speaks to real trackers (with the real jobs
// manager) on a real database, and real storage nodes hold the blobs. The
// backend is SQLite unless GOMOGILE_TRACKER_TEST_BACKEND says otherwise.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/client"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker"
	model "github.com/gomogile/gomogile/tracker/internal/cluster"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// putCounter counts replication PUTs per blob path across trackers.
type putCounter struct {
	mu   sync.Mutex
	puts map[string]int
	next http.RoundTripper
}

func (p *putCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, ".fid") {
		p.mu.Lock()
		p.puts[r.URL.Path]++
		p.mu.Unlock()
	}
	return p.next.RoundTrip(r)
}

// fastJobs runs the workers with short intervals; host must be the
// tracker's Hostname, which is what fsck_start and rebalance_start write.
func fastJobs(st *store.Store, hc *http.Client, host string) *jobs.Manager {
	return fastJobsCfg(st, hc, host, testConfig())
}

// fastJobsCfg is fastJobs with the workers' settings taken from cfg, as
// NewJobs takes them.
func fastJobsCfg(st *store.Store, hc *http.Client, host string, cfg tracker.Config) *jobs.Manager {
	o := tracker.JobsOptions(cfg)
	// testConfig turns the job master off for the query-command tests; the
	// workers run only with one (as in the original), so they get one. It
	// injects nothing unless a test starts fsck or rebalance for host.
	o.NoJobMaster = false
	o.Hostname = host
	o.MonitorInterval = 100 * time.Millisecond
	o.QueuePoll = 50 * time.Millisecond
	o.ReaperInterval = 200 * time.Millisecond
	o.CloseGrace = time.Second
	o.ReplicateWorkers = 2
	o.DeleteWorkers = 2
	o.HTTPClient = hc
	o.Logger = quietLogger()
	return jobs.New(st, o)
}

type e2e struct {
	trackers []*testTracker
	nodes    []*node
	cl       *client.Client
}

// startE2E runs ntrackers trackers, each on its own Store opened on the
// same database, and nnodes storage nodes with one device each.
func startE2E(t *testing.T, dsn string, ntrackers, nnodes int, hc *http.Client) *e2e {
	cfg := testConfig()
	cfg.JobMaster = true
	return startE2ECfg(t, dsn, cfg, ntrackers, nnodes, hc)
}

// startE2ECfg is startE2E with every tracker and its workers configured by
// cfg (its Listen is kept).
func startE2ECfg(t *testing.T, dsn string, cfg tracker.Config, ntrackers, nnodes int, hc *http.Client) *e2e {
	e := &e2e{}
	var addrs []string
	for i := 0; i < ntrackers; i++ {
		st := openStore(t, dsn)
		host := fmt.Sprintf("tracker%d", i)
		tt := startTracker(t, cfg, st, &tracker.Options{Jobs: fastJobsCfg(st, hc, host, cfg), Hostname: host})
		e.trackers = append(e.trackers, tt)
		addrs = append(addrs, tt.addr)
	}
	cl, err := client.New(addrs, &client.Options{Domain: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	e.cl = cl
	ctx := t.Context()
	if err := cl.CreateDomain(ctx, "e2e"); err != nil {
		t.Fatal(err)
	}
	if err := cl.CreateClass(ctx, "e2e", client.Class{Name: "two", MinDevCount: 2}); err != nil {
		t.Fatal(err)
	}
	e.nodes = addNodes(t, cl, nnodes)
	// Upload only once every tracker's monitor sees every device writeable
	// (the original's create_open waits for the monitor the same way).
	for _, tt := range e.trackers {
		waitWriteable(t, tt, nnodes)
	}
	return e
}

// addNodes starts nnodes storage nodes, node<i> on 127.0.0.<i+1> with
// device i, and registers them through cl.
func addNodes(t *testing.T, cl *client.Client, nnodes int) []*node {
	t.Helper()
	ctx := t.Context()
	var nodes []*node
	for i := 1; i <= nnodes; i++ {
		n := startNode(t, fmt.Sprintf("127.0.0.%d", i+1), i)
		nodes = append(nodes, n)
		var port int
		fmt.Sscan(n.port, &port)
		if _, err := cl.CreateHost(ctx, client.Host{Name: fmt.Sprintf("node%d", i), IP: n.ip, Port: port, Status: "alive"}); err != nil {
			t.Fatal(err)
		}
		if err := cl.CreateDevice(ctx, client.NewDevice{HostName: fmt.Sprintf("node%d", i), DevID: i}); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

// waitWriteable waits until tt's monitor sees devices 1..nnodes writeable.
func waitWriteable(t *testing.T, tt *testTracker, nnodes int) {
	t.Helper()
	c := tt.dial()
	waitFor(t, 20*time.Second, "monitor to see every device writeable", func() bool {
		r := parseOK(t, c.do("get_devices"))
		for i := 1; i <= nnodes; i++ {
			if r.Get(fmt.Sprintf("dev%d_observed_state", i)) != "writeable" {
				return false
			}
		}
		return r.Get("devices") == fmt.Sprint(nnodes)
	})
}

// store uploads through the client and returns the fid (StoreFile
// returns the byte count).
func (e *e2e) store(t *testing.T, key string, body []byte) int64 {
	t.Helper()
	n, err := e.cl.StoreFile(t.Context(), "", key, "two", bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("StoreFile %s: %v", key, err)
	}
	if n != int64(len(body)) {
		t.Fatalf("StoreFile %s wrote %d bytes; want %d", key, n, len(body))
	}
	fi, err := e.cl.FileInfo(t.Context(), "", key)
	if err != nil {
		t.Fatalf("FileInfo %s: %v", key, err)
	}
	return fi.FID
}

// blobs lists the devices whose node holds fid's blob.
func (e *e2e) blobs(fid int64) []int {
	var out []int
	for i, n := range e.nodes {
		if _, err := os.Stat(n.blobPath(i+1, fid)); err == nil {
			out = append(out, i+1)
		}
	}
	return out
}

func TestE2E_FileLifecycle(t *testing.T) {
	eachBackend(t, testE2EFileLifecycle)
}

func testE2EFileLifecycle(t *testing.T, dsn string) {
	e := startE2E(t, dsn, 1, 3, nil)
	ctx := t.Context()
	st := e.trackers[0].st
	body := bytes.Repeat([]byte("gomogile "), 1000)

	fid := e.store(t, "photo/1", body)
	// Replicated to two devices on different hosts.
	waitFor(t, 20*time.Second, "replication to 2 devices", func() bool {
		devs, err := st.FileOn(ctx, fid)
		return err == nil && len(devs) == 2
	})
	devs, _ := st.FileOn(ctx, fid)
	ns, _ := st.Devices(ctx)
	hostOf := map[int]int{}
	for _, d := range ns {
		hostOf[d.ID] = d.HostID
	}
	if hostOf[devs[0]] == hostOf[devs[1]] {
		t.Errorf("both copies on host %d", hostOf[devs[0]])
	}
	if got := e.blobs(fid); len(got) != 2 {
		t.Errorf("blobs on devices %v; want 2", got)
	}
	f, err := st.File(ctx, fid)
	if err != nil || f.DevCount != 2 || f.Length != int64(len(body)) {
		t.Errorf("file row %+v, %v", f, err)
	}

	// Fetch matches, from each path.
	paths, err := e.cl.GetPaths(ctx, "", "photo/1", &client.PathOptions{Verify: true})
	if err != nil || len(paths) != 2 {
		t.Fatalf("GetPaths: %v, %v", paths, err)
	}
	for _, p := range paths {
		resp, err := http.Get(p)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(got, body) {
			t.Errorf("GET %s: %d bytes, content differs", p, len(got))
		}
	}
	rc, err := e.cl.FetchFile(ctx, "", "photo/1")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, body) {
		t.Errorf("FetchFile content differs")
	}

	// Rename, list.
	if err := e.cl.Rename(ctx, "", "photo/1", "photo/2"); err != nil {
		t.Fatal(err)
	}
	keys, next, err := e.cl.ListKeys(ctx, "", "photo/", "", 100)
	if err != nil || len(keys) != 1 || keys[0] != "photo/2" || next != "photo/2" {
		t.Errorf("ListKeys: %v %q %v", keys, next, err)
	}
	if _, err := e.cl.FetchFile(ctx, "", "photo/1"); !errors.Is(err, client.ErrUnknownKey) {
		t.Errorf("old key after rename: %v", err)
	}

	// Replace the key: the old fid is queued and its blobs go too.
	fid2 := e.store(t, "photo/2", []byte("v2"))
	waitFor(t, 20*time.Second, "old fid's blobs deleted after overwrite", func() bool { return len(e.blobs(fid)) == 0 })

	// Delete: blobs gone from every node.
	waitFor(t, 20*time.Second, "replication of the new fid", func() bool { return len(e.blobs(fid2)) == 2 })
	if err := e.cl.Delete(ctx, "", "photo/2"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "blobs deleted from every node", func() bool { return len(e.blobs(fid2)) == 0 })
	waitFor(t, 20*time.Second, "file_on rows gone", func() bool {
		devs, err := st.FileOn(ctx, fid2)
		return err == nil && len(devs) == 0
	})
	if _, err := st.File(ctx, fid2); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("file row after delete: %v", err)
	}
}

// Two trackers, two Stores on one database: a batch of files is
// replicated with no fid copied twice.
func TestE2E_TwoTrackersReplicateOnce(t *testing.T) {
	eachBackend(t, testE2ETwoTrackersReplicateOnce)
}

func testE2ETwoTrackersReplicateOnce(t *testing.T, dsn string) {
	pc := &putCounter{puts: map[string]int{}, next: http.DefaultTransport}
	e := startE2E(t, dsn, 2, 3, &http.Client{Transport: pc})
	ctx := t.Context()
	st := e.trackers[0].st

	// The client spreads uploads over both trackers; both trackers' workers
	// lease from the one replicate queue.
	const n = 30
	fids := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		fids = append(fids, e.store(t, fmt.Sprintf("batch/%03d", i), []byte(fmt.Sprintf("file %d", i))))
	}
	waitFor(t, 60*time.Second, "every fid on 2 devices", func() bool {
		for _, fid := range fids {
			devs, err := st.FileOn(ctx, fid)
			if err != nil || len(devs) < 2 {
				return false
			}
		}
		return true
	})
	// Let any straggling duplicate copy land before counting.
	time.Sleep(500 * time.Millisecond)
	if l, err := st.QueueLength(ctx, store.QueueReplicate); err != nil || l != 0 {
		t.Errorf("replicate queue length %d, %v; want 0", l, err)
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, fid := range fids {
		devs, _ := st.FileOn(ctx, fid)
		if len(devs) != 2 {
			t.Errorf("fid %d on %v; want exactly 2 devices", fid, devs)
		}
		copies := 0
		for i := range e.nodes {
			copies += pc.puts[model.FidPath(i+1, fid)]
		}
		if copies != 1 {
			t.Errorf("fid %d copied %d times; want once", fid, copies)
		}
		if got := e.blobs(fid); len(got) != 2 {
			t.Errorf("fid %d blobs on %v; want 2", fid, got)
		}
	}
}

// Namespace changes made through one tracker are seen at once by another
// on the same database (a cache miss reloads), and file rows are never
// cached: a delete through one is seen by the other's next request.
func TestTwoTrackers_SeeEachOthersChanges(t *testing.T) {
	dsn := testDSN(t)
	a := startTracker(t, testConfig(), openStore(t, dsn), nil)
	b := startTracker(t, testConfig(), openStore(t, dsn), nil)
	ca, cb := a.dial(), b.dial()
	n := startNode(t, "127.0.0.2", 1)
	cb.want("get_domains", "OK domains=0") // b caches an empty namespace
	ca.want("create_domain domain=d", "OK domain=d")
	ca.want("create_class domain=d&class=c&mindevcount=1", "OK class=c&mindevcount=1&domain=d")
	ca.want("create_host host=h&ip=127.0.0.2&port="+n.port+"&status=alive", "OK hostid=1&hostname=h")
	ca.want("create_device devid=1&hostid=1", "OK ")
	cb.want("clear_cache", "OK ")
	r := parseOK(t, cb.do("create_open domain=d&key=k&class=c"))
	put(t, r.Get("path"), []byte("x"))
	cb.want(fmt.Sprintf("create_close domain=d&key=k&fid=%s&devid=%s&path=%s", r.Get("fid"), r.Get("devid"), tracker.Escape(r.Get("path"))), "OK ")
	ca.want("file_info domain=d&key=k", "OK fid="+r.Get("fid")+"&domain=d&class=c&key=k&length=1&devcount=1")
	ca.want("delete domain=d&key=k", "OK ")
	cb.want("file_info domain=d&key=k", "ERR unknown_key unknown_key")
	// A class created on a after b cached the namespace: b finds it.
	cb.want("get_domains", "OK domain1=d&domain1class1name=default&domain1class1mindevcount=2&domain1class1replpolicy=MultipleHosts%28%29&domain1class1hashtype=NONE"+
		"&domain1class2name=c&domain1class2mindevcount=1&domain1class2replpolicy=MultipleHosts%28%29&domain1class2hashtype=NONE&domain1classes=2&domains=1")
	ca.want("create_class domain=d&class=late&mindevcount=1", "OK class=late&mindevcount=1&domain=d")
	r = parseOK(t, cb.do("create_open domain=d&key=k2&class=late"))
	if r.Get("fid") == "" {
		t.Errorf("create_open with a class just made on another tracker: %v", r)
	}
}
