package tracker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker"
	model "github.com/gomogile/gomogile/tracker/internal/cluster"
)

// usageTransport answers the monitor's GET /dev<N>/usage with the figures
// in mb (total and used, in MB) instead of the node's real disk, so that
// devices on one test filesystem can differ in free space; every other
// request goes to the real storage node.
type usageTransport struct {
	base http.RoundTripper
	mb   map[int][2]int64
}

var usagePathRE = regexp.MustCompile(`^/dev(\d+)/usage$`)

func (u *usageTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if m := usagePathRE.FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodGet {
		id, _ := strconv.Atoi(m[1])
		if f, ok := u.mb[id]; ok {
			body := fmt.Sprintf("available: %d\ndevice: /dev/test%d\ntotal: %d\nused: %d\n", (f[0]-f[1])*1024, id, f[0]*1024, f[1]*1024)
			return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{"Content-Type": {"text/plain"}}, ContentLength: int64(len(body)),
				Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
		}
	}
	return u.base.RoundTrip(r)
}

func newUsageClient(mb map[int][2]int64) *http.Client {
	return &http.Client{Transport: &usageTransport{base: http.DefaultTransport.(*http.Transport).Clone(), mb: mb}}
}

// min_free_space reaches every part that places copies: create_open, the
// replicate worker and the rebalance worker. dev1 has 500 MB free — above
// the original's fixed 100 MB, below the configured 1000 — and is the
// emptiest device by percentage, so any part still using a fixed 100 MB
// would prefer it.
func TestSettings_MinFreeSpaceEverywhere(t *testing.T) {
	cfg := testConfig()
	cfg.JobMaster = true
	cfg.MinFreeSpace = 1000
	hc := newUsageClient(map[int][2]int64{1: {600, 100}, 2: {1000000, 900000}, 3: {1000000, 900000}})
	e := startE2ECfg(t, testDSN(t), cfg, 1, 3, hc)
	ctx := t.Context()
	st := e.trackers[0].st
	c := e.trackers[0].dial()
	waitFor(t, 20*time.Second, "usage rows", func() bool {
		devs, err := st.Devices(ctx)
		return err == nil && len(devs) == 3 && devs[0].ID == 1 && devs[0].MBTotal == 600
	})

	var fids []int64
	for i := range 6 {
		fids = append(fids, e.store(t, fmt.Sprintf("minfree/%d", i), bytes.Repeat([]byte{byte(i)}, 1000)))
	}
	for _, fid := range fids {
		waitFor(t, 20*time.Second, "replication to 2 devices", func() bool {
			on, err := st.FileOn(ctx, fid)
			return err == nil && len(on) == 2
		})
	}
	for _, fid := range fids {
		if on, _ := st.FileOn(ctx, fid); slices.Contains(on, 1) || slices.Contains(e.blobs(fid), 1) {
			t.Errorf("fid %d: copies on %v (blobs %v); dev1 is below min_free_space", fid, on, e.blobs(fid))
		}
	}

	// Rebalance dev2 away: dev3 already has every file and dev1 is too
	// full, so nothing may land anywhere new.
	c.want("rebalance_set_policy policy=from_devices%3D2", "OK ")
	if got := c.do("rebalance_test"); got != "OK sdevs=2&ddevs=3" {
		t.Errorf("rebalance_test = %s; want dev3 as the only destination", got)
	}
	if got := c.do("rebalance_start"); !strings.HasPrefix(got, "OK ") {
		t.Fatalf("rebalance_start: %s", got)
	}
	waitFor(t, 30*time.Second, "rebalance to finish", func() bool {
		v, err := st.ServerSetting(ctx, "rebal_host")
		return err != nil && v == ""
	})
	for _, fid := range fids {
		if slices.Contains(e.blobs(fid), 1) {
			t.Errorf("fid %d: rebalance copied it to dev1, below min_free_space", fid)
		}
	}
}

// default_mindevcount is the replica count of the default class for the
// workers too, not only for the protocol.
func TestSettings_DefaultMinDevCountReachesReplication(t *testing.T) {
	cfg := testConfig()
	cfg.DefaultMinDevCount = 3
	e := startE2ECfg(t, testDSN(t), cfg, 1, 3, nil)
	ctx := t.Context()
	st := e.trackers[0].st
	if _, err := e.cl.StoreFile(ctx, "", "three/1", "", bytes.NewReader([]byte("hello")), 5); err != nil {
		t.Fatal(err)
	}
	fi, err := e.cl.FileInfo(ctx, "", "three/1")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "replication to 3 devices", func() bool {
		on, err := st.FileOn(ctx, fi.FID)
		return err == nil && len(on) == 3
	})
	if got := e.blobs(fi.FID); len(got) != 3 {
		t.Errorf("blobs on %v; want 3 devices", got)
	}
}

// hangingNode is a storage node that answers everything but blob PUTs,
// which it reads and then never answers; it records how long each hung
// PUT waited before the client gave up.
type hangingNode struct {
	srv  *http.Server
	ip   string
	port int
	mu   sync.Mutex
	hung []time.Duration
}

func startHangingNode(t *testing.T, ip string, devid int) *hangingNode {
	real := startNode(t, ip, devid)
	target, _ := url.Parse("http://" + real.srv.HTTPAddr())
	proxy := httputil.NewSingleHostReverseProxy(target)
	h := &hangingNode{ip: ip}
	h.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, ".fid") {
			proxy.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
		h.mu.Lock()
		h.hung = append(h.hung, time.Since(start))
		h.mu.Unlock()
	})}
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	h.port = ln.Addr().(*net.TCPAddr).Port
	go h.srv.Serve(ln)
	t.Cleanup(func() { h.srv.Close() })
	return h
}

func (h *hangingNode) waits() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.hung)
}

// node_timeout reaches the workers' storage-node client: a destination
// that takes a PUT and never answers is given up on within node_timeout
// (the workers used a fixed 45 s before).
func TestSettings_NodeTimeoutReachesReplication(t *testing.T) {
	const nodeTimeout = time.Second
	cfg := testConfig()
	cfg.NodeTimeout = nodeTimeout
	dsn := testDSN(t)
	st := openStore(t, dsn)
	tt := startTracker(t, cfg, st, &tracker.Options{Jobs: fastJobsCfg(st, nil, "testhost", cfg), Hostname: "testhost"})
	ctx := t.Context()
	c := tt.dial()
	c.want("create_domain domain=d", "OK domain=d")
	good := startNode(t, "127.0.0.2", 1)
	hang := startHangingNode(t, "127.0.0.3", 2)
	goodPort, _ := strconv.Atoi(good.port)
	for i, h := range []struct {
		ip   string
		port int
	}{{good.ip, goodPort}, {hang.ip, hang.port}} {
		c.want(fmt.Sprintf("create_host host=h%d&ip=%s&port=%d&status=alive", i+1, h.ip, h.port), fmt.Sprintf("OK hostid=%d&hostname=h%d", i+1, i+1))
		c.want(fmt.Sprintf("create_device hostname=h%d&devid=%d&state=alive", i+1, i+1), "OK ")
	}
	waitFor(t, 20*time.Second, "both devices writeable", func() bool {
		r := parseOK(t, c.do("get_devices"))
		return r.Get("dev1_observed_state") == "writeable" && r.Get("dev2_observed_state") == "writeable"
	})
	doms, err := st.Domains(ctx)
	if err != nil || len(doms) != 1 {
		t.Fatal(doms, err)
	}
	dom := doms[0]
	// A file on dev1 only, committed as create_close does, for the
	// replicate worker to copy to dev2.
	fid, err := st.CreateTempFile(ctx, store.TempFile{DomainID: dom.ID, Key: "k", DevIDs: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("hang on")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+good.srv.HTTPAddr()+pathOf(fid, 1), bytes.NewReader(body))
	mkcolAll(t, "http://"+good.srv.HTTPAddr(), 1, fid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("PUT: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, err := st.CommitFile(ctx, store.Commit{Fid: fid, DomainID: dom.ID, Key: "k", Length: int64(len(body)), DevIDs: []int{1}, Replicate: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the worker to give up on the hung PUT", func() bool { return len(hang.waits()) > 0 })
	// The bound is node_timeout from the end of the request; the PUT is
	// read at once, so what the node sees is that plus scheduling noise.
	if w := hang.waits()[0]; w > nodeTimeout+500*time.Millisecond {
		t.Errorf("replicate waited %v for a hung node; node_timeout is %v", w, nodeTimeout)
	}
	if on, _ := st.FileOn(ctx, fid); len(on) != 1 {
		t.Errorf("file_on = %v; want only dev1", on)
	}
}

// fid_age=new is refused by rebalance_set_policy itself, with a message
// that says what works, rather than accepted and then refused by the
// worker on every pass.
func TestSettings_FidAgeNewRefusedBySetPolicy(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	c := tt.dial()
	got := c.do("rebalance_set_policy policy=fid_age%3Dnew")
	if !strings.HasPrefix(got, "ERR bad_rebal_pol ") || !strings.Contains(got, "fid_age%3Dold") {
		t.Errorf("rebalance_set_policy fid_age=new: %s; want bad_rebal_pol naming fid_age=old", got)
	}
	if _, err := tt.st.ServerSetting(context.Background(), "rebal_policy"); err == nil {
		t.Error("the refused policy was stored")
	}
	c.want("rebalance_set_policy policy=fid_age%3Dold", "OK ")
}

func pathOf(fid int64, devid int) string { return model.FidPath(devid, fid) }

// mkcolAll makes the collections of a blob path, as create_open does.
func mkcolAll(t *testing.T, base string, devid int, fid int64) {
	t.Helper()
	for _, d := range model.FidDirs(devid, fid) {
		req, _ := http.NewRequest("MKCOL", base+d+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("MKCOL: %v", err)
		}
		resp.Body.Close()
	}
}
