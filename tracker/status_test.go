package tracker_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gomogile/gomogile/client"
	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/storemetrics"
	"github.com/gomogile/gomogile/tracker"
)

// statusCluster is a tracker with its workers, a measured store and a
// status listener, and nnodes storage nodes with one device each, as
// Main.Serve wires them.
type statusCluster struct {
	tt   *testTracker
	st   *store.Store // the measured store
	base string       // http://status-address
	cl   *client.Client
}

func startStatusCluster(t *testing.T, dsn string, cfg tracker.Config, nnodes int) *statusCluster {
	t.Helper()
	reg := tracker.NewRegistry()
	m, err := storemetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.Context(), dsn, store.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := m.Watch(st); err != nil {
		t.Fatal(err)
	}
	cfg.StatusListen = "127.0.0.1:0"
	cfg.JobMaster = true
	const host = "statushost"
	tt := startTracker(t, cfg, st, &tracker.Options{Jobs: fastJobsCfg(st, nil, host, cfg), Hostname: host, Registry: reg})
	c := &statusCluster{tt: tt, st: st, base: "http://" + tt.tr.StatusAddr().String()}
	cl, err := client.New([]string{tt.addr}, &client.Options{Domain: "status"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	c.cl = cl
	ctx := t.Context()
	if err := cl.CreateDomain(ctx, "status"); err != nil {
		t.Fatal(err)
	}
	if err := cl.CreateClass(ctx, "status", client.Class{Name: "two", MinDevCount: 2}); err != nil {
		t.Fatal(err)
	}
	addNodes(t, cl, nnodes)
	waitWriteable(t, tt, nnodes)
	return c
}

// get fetches path from the status listener.
func (c *statusCluster) get(t *testing.T, path string) (int, string) {
	t.Helper()
	return httpGet(t, c.base+path)
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scrape reads /metrics in the text format.
func (c *statusCluster) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := c.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return mfs
}

// sum adds the samples of name whose labels include want (a histogram
// counts its observations).
func sum(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var total float64
	mf := mfs[name]
	if mf == nil {
		return 0
	}
metric:
	for _, m := range mf.GetMetric() {
		for k, v := range want {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue metric
			}
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

// TestStatus_MetricsDuringE2E scrapes /metrics during a real run (uploads
// replicated by the workers, which take named locks) on every backend.
func TestStatus_MetricsDuringE2E(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		c := startStatusCluster(t, dsn, testConfig(), 2)
		ctx := t.Context()
		// Park a replicate row, so the queue gauge has a row to count
		// whatever the workers have done by the time of the scrape.
		if err := c.st.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: 999999, After: store.Never}); err != nil {
			t.Fatal(err)
		}
		var fids []int64
		for i := range 3 {
			key := fmt.Sprintf("m/%d", i)
			if _, err := c.cl.StoreFile(ctx, "", key, "two", strings.NewReader("metrics body"), 12); err != nil {
				t.Fatalf("StoreFile: %v", err)
			}
			fi, err := c.cl.FileInfo(ctx, "", key)
			if err != nil {
				t.Fatal(err)
			}
			fids = append(fids, fi.FID)
		}
		waitFor(t, 30*time.Second, "replication of every upload", func() bool {
			for _, fid := range fids {
				if devs, err := c.st.FileOn(ctx, fid); err != nil || len(devs) != 2 {
					return false
				}
			}
			return true
		})
		mfs := c.scrape(t)
		checks := []struct {
			name   string
			labels map[string]string
		}{
			{"gomogile_lock_acquisitions_total", map[string]string{"lock": "mgfs:fid:N:replicate"}},
			{"gomogile_lock_wait_seconds", nil},
			{"gomogile_lock_hold_seconds", nil},
			{"gomogile_request_seconds", map[string]string{"cmd": "create_open"}},
			{"gomogile_request_seconds", map[string]string{"cmd": "create_close"}},
			{"gomogile_requests_total", map[string]string{"cmd": "create_close", "result": "ok"}},
			{"gomogile_queue_depth", map[string]string{"queue": "replicate"}},
			{"gomogile_queue_finished_total", map[string]string{"queue": "replicate"}},
			{"gomogile_queue_leased_total", map[string]string{"queue": "replicate"}},
			{"gomogile_store_call_seconds", map[string]string{"op": "CommitFile"}},
			{"gomogile_device_mb_total", map[string]string{"devid": "1"}},
			{"gomogile_device_state", map[string]string{"devid": "2", "state": "alive", "observed": "writeable"}},
			{"gomogile_job_workers", map[string]string{"job": "replicate"}},
			{"gomogile_build_info", nil},
			{"gomogile_locks_info", map[string]string{"mechanism": c.st.Capabilities().LockMechanism, "service": "database"}},
		}
		for _, ck := range checks {
			if got := sum(mfs, ck.name, ck.labels); got <= 0 {
				t.Errorf("%s%v = %v; want > 0", ck.name, ck.labels, got)
			}
		}
		caps := c.st.Capabilities()
		switch caps.LockMechanism {
		case "lease":
			for _, name := range []string{"gomogile_lock_reaped_total", "gomogile_lock_wakeups_total"} {
				if mfs[name] == nil {
					t.Errorf("lease backend: %s not exported", name)
				}
			}
			if got := sum(mfs, "gomogile_lock_owner_incarnation", nil); got <= 0 {
				t.Errorf("lease backend: gomogile_lock_owner_incarnation = %v; want a registered owner", got)
			}
		case "session":
			if mfs["gomogile_lock_sessions_pinned"] == nil {
				t.Errorf("session backend: gomogile_lock_sessions_pinned not exported")
			}
		}
		// Every queued row counts as enqueued, the replicate rows
		// create_close queues included, so enqueued - finished >= 0.
		repl := map[string]string{"queue": "replicate"}
		if enq, fin := sum(mfs, "gomogile_queue_enqueued_total", repl), sum(mfs, "gomogile_queue_finished_total", repl); enq < float64(len(fids)+1) || enq < fin {
			t.Errorf("replicate queue: enqueued %v, finished %v; want enqueued >= %d (the uploads and the parked row) and >= finished", enq, fin, len(fids)+1)
		}
		if got := sum(mfs, "gomogile_status_read_errors", nil); got != 0 {
			t.Errorf("gomogile_status_read_errors = %v; want 0", got)
		}
	})
}

func TestStatus_HealthAndPprof(t *testing.T) {
	c := startStatusCluster(t, testDSN(t), testConfig(), 1)
	for path, want := range map[string]int{
		"/healthz": 200, "/readyz": 200, "/debug/pprof/": 200, "/debug/pprof/cmdline": 200,
		"/": 200, "/nonexistent": 404,
	} {
		if code, body := c.get(t, path); code != want {
			t.Errorf("GET %s: %d; want %d (%s)", path, code, want, body)
		}
	}
	// A schema the tracker does not speak is not ready.
	ctx := t.Context()
	if err := c.st.SetServerSetting(ctx, "schema_version", "99"); err != nil {
		t.Fatal(err)
	}
	if code, body := c.get(t, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "schema") {
		t.Errorf("readyz with schema 99: %d %q; want 503 naming the schema", code, body)
	}
	if err := c.st.SetServerSetting(ctx, "schema_version", fmt.Sprint(store.SchemaVersion)); err != nil {
		t.Fatal(err)
	}
	if code, _ := c.get(t, "/readyz"); code != http.StatusOK {
		t.Errorf("readyz with the schema restored: %d; want 200", code)
	}
}

// The status listener answers only inside admin_networks when it is set.
func TestStatus_AdminNetworks(t *testing.T) {
	cfg := testConfig()
	cfg.AdminNetworks = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	cfg.StatusListen = "127.0.0.1:0"
	tt := startTracker(t, cfg, nil, nil)
	base := "http://" + tt.tr.StatusAddr().String()
	for _, p := range []string{"/metrics", "/debug/pprof/", "/"} {
		if code, _ := httpGet(t, base+p); code != http.StatusForbidden {
			t.Errorf("GET %s from outside admin_networks: %d; want 403", p, code)
		}
	}
	cfg.AdminNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	tt = startTracker(t, cfg, nil, nil)
	if code, _ := httpGet(t, "http://"+tt.tr.StatusAddr().String()+"/metrics"); code != http.StatusOK {
		t.Errorf("GET /metrics from inside admin_networks: %d; want 200", code)
	}
}

func TestStatus_ListenKey(t *testing.T) {
	cfg := tracker.DefaultConfig()
	if cfg.StatusListen != "" {
		t.Errorf("status_listen defaults to %q; want off", cfg.StatusListen)
	}
	if err := cfg.Set("status_listen", "127.0.0.1:7080"); err != nil || cfg.StatusListen != "127.0.0.1:7080" {
		t.Fatalf("status_listen = 127.0.0.1:7080: %v, %q", err, cfg.StatusListen)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for _, bad := range []string{"7080", "127.0.0.1:http-alt", "127.0.0.1:70800"} {
		cfg.StatusListen = bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "status_listen") {
			t.Errorf("status_listen = %q: Validate got %v; want an error naming status_listen", bad, err)
		}
	}
	// A busy port fails Open and leaves nothing listening.
	cfg = testConfig()
	cfg.StatusListen = "127.0.0.1:0"
	tt := startTracker(t, cfg, nil, nil)
	cfg.StatusListen = tt.tr.StatusAddr().String()
	tr, err := tracker.New(cfg, tt.st, &tracker.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Open(t.Context()); err == nil || !strings.Contains(err.Error(), "status_listen") {
		tr.Close()
		t.Fatalf("Open with status_listen taken: got %v; want an error naming status_listen", err)
	}
	if n := len(tr.Addrs()); n != 0 {
		t.Errorf("after the failed Open %d protocol listeners stay open", n)
	}
}

// TestStatus_ReadyzFollowsDatabase stops a private database under a
// running tracker: /readyz turns 503 (while /healthz stays 200) and is
// ready again once the server is back.
func TestStatus_ReadyzFollowsDatabase(t *testing.T) {
	if err := dbinstance.Available("mariadb"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("private MariaDB needed under CI: %v", err)
		}
		t.Skipf("private MariaDB: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	m, err := dbinstance.StartMariaDB(ctx, dbinstance.MyOptions{Logf: t.Logf})
	if err != nil {
		t.Fatalf("private MariaDB: %v", err)
	}
	t.Cleanup(func() { m.Cleanup() })
	cfg := testConfig()
	cfg.StatusListen = "127.0.0.1:0"
	tt := startTracker(t, cfg, openStore(t, m.DSN("test")), nil)
	base := "http://" + tt.tr.StatusAddr().String()
	if code, body := httpGet(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("readyz with the database up: %d %s", code, body)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "readyz to report the stopped database", func() bool {
		code, _ := httpGet(t, base+"/readyz")
		return code == http.StatusServiceUnavailable
	})
	if code, _ := httpGet(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("healthz with the database down: %d; want 200", code)
	}
	// The page still renders, saying what it could not read.
	if code, body := httpGet(t, base+"/"); code != http.StatusOK || !strings.Contains(body, "Could not read") {
		t.Errorf("status page with the database down: %d; want 200 saying what is missing", code)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "readyz after the database returns", func() bool {
		code, _ := httpGet(t, base+"/readyz")
		return code == http.StatusOK
	})
}

// Main.Serve measures its store into the registry it serves: a store
// call made by a command shows on /metrics of --status_listen.
func TestMain_StatusListenServesStoreMetrics(t *testing.T) {
	dsn := "sqlite:///" + filepath.Join(t.TempDir(), "db")
	ready := make(chan *tracker.Tracker, 1)
	m := &tracker.Main{Environ: []string{}, Stderr: io.Discard, Ready: func(tr *tracker.Tracker) { ready <- tr }}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- m.Run(ctx, []string{"-s", "--dsn", dsn, "-l", "127.0.0.1:0", "--status_listen", "127.0.0.1:0"})
	}()
	var tr *tracker.Tracker
	select {
	case tr = <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	tt := &testTracker{t: t, tr: tr, addr: tr.Addrs()[0].String()}
	tt.dial().do("create_domain domain=main")
	_, body := httpGet(t, "http://"+tr.StatusAddr().String()+"/metrics")
	for _, want := range []string{
		`gomogile_store_call_seconds_count{op="CreateDomain"} 1`,
		`gomogile_requests_total{cmd="create_domain",result="ok"} 1`,
		`gomogile_queue_depth{queue="delete"} 0`,
		"go_goroutines", "process_open_fds",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestStatus_WarningsWithoutWatcher: the page's "Recent warnings" shows
// the tracker's warnings though no "!watch" client is connected (it once
// read the watch ring, which takes lines only while someone watches, and
// always said "none").
func TestStatus_WarningsWithoutWatcher(t *testing.T) {
	cfg := testConfig()
	cfg.StatusListen = "127.0.0.1:0"
	tt := startTracker(t, cfg, nil, nil)
	base := "http://" + tt.tr.StatusAddr().String()
	if _, body := httpGet(t, base+"/"); !strings.Contains(body, `<p id="warnings">none</p>`) {
		t.Fatalf("status page before any warning lacks \"none\":\n%s", body)
	}
	log := tracker.Logger(tt.tr)
	log.Info("not a warning", "n", 0)
	for i := range 25 {
		log.Warn("Port 127.0.0.1:7500 not listening", "n", i)
	}
	_, body := httpGet(t, base+"/")
	if strings.Contains(body, "not a warning") {
		t.Errorf("status page shows an info line")
	}
	// The last 20 warnings, newest first.
	newest, oldestKept, dropped := strings.Index(body, "n=24"), strings.Index(body, "n=5\n"), strings.Contains(body, "n=4\n")
	if newest < 0 || oldestKept < 0 || dropped || newest > oldestKept {
		t.Errorf("status page warnings: got\n%s\nwant n=24 down to n=5, newest first", body)
	}
}

// TestStatus_DownNodeOnPage: with a storage node down and nobody on
// "!watch", the monitor's warning reaches the page's "Recent warnings",
// and the workers' start-up is not listed there as a shortfall.
func TestStatus_DownNodeOnPage(t *testing.T) {
	c := startStatusCluster(t, testDSN(t), testConfig(), 1)
	ctx := t.Context()
	var port int
	fmt.Sscan(closedPort(t, "127.0.0.4"), &port)
	if _, err := c.cl.CreateHost(ctx, client.Host{Name: "down", IP: "127.0.0.4", Port: port, Status: "alive"}); err != nil {
		t.Fatal(err)
	}
	if err := c.cl.CreateDevice(ctx, client.NewDevice{HostName: "down", DevID: 4}); err != nil {
		t.Fatal(err)
	}
	var body string
	waitFor(t, 20*time.Second, "the down node on the status page", func() bool {
		_, body = c.get(t, "/")
		return strings.Contains(body, "not listening on 127.0.0.4")
	})
	waitFor(t, 20*time.Second, "the banner", func() bool {
		_, body = c.get(t, "/")
		return strings.Contains(body, fmt.Sprintf(`<div class="alert banner" id="banner"><p>Host down (127.0.0.4:%d) unreachable: dev4</p></div>`, port))
	})
	if strings.Contains(body, "has only") {
		t.Errorf("status page lists start-up as a shortfall of workers:\n%s", body)
	}
}

// TestStatus_ReplicasOnPage: the status page lists the Store's read
// replicas and why one is not used (here: nothing listens where the DSN
// says it is).
func TestStatus_ReplicasOnPage(t *testing.T) {
	dsn := testdb.Postgres(t)
	var port int
	fmt.Sscan(closedPort(t, "127.0.0.1"), &port)
	replica := fmt.Sprintf("postgres://root@127.0.0.1:%d/test?sslmode=disable&connect_timeout=2", port)
	c := startStatusCluster(t, dsn+"&replica="+url.QueryEscape(replica), testConfig(), 1)
	ctx := t.Context()
	if err := c.cl.CreateDomain(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	var body string
	waitFor(t, 20*time.Second, "the replica on the status page", func() bool {
		c.cl.ListKeys(ctx, "d", "", "", 1) // reads that may use a replica keep it measured
		_, body = c.get(t, "/")
		return strings.Contains(body, fmt.Sprintf("127.0.0.1:%d", port)) && strings.Contains(body, "not used:") &&
			strings.Contains(body, "connect")
	})
}

// TestStatus_CountsAndLocksOnPage: the page counts domains, classes and
// files (and the files with fewer copies than their class wants: here
// class "two" on one storage node), and lists the locks the tracker holds
// with their fencing tokens until they are released.
func TestStatus_CountsAndLocksOnPage(t *testing.T) {
	c := startStatusCluster(t, testDSN(t), testConfig(), 1)
	ctx := t.Context()
	for _, k := range []string{"a", "b", "c"} {
		if _, err := c.cl.StoreFile(ctx, "status", k, "two", strings.NewReader(k), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.cl.CreateDomain(ctx, "empty"); err != nil {
		t.Fatal(err)
	}
	l, err := c.st.Lock(ctx, "mgfs:fid:999:replicate", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, body := c.get(t, "/")
	for _, want := range []string{
		`<span id="ndomains">2</span> domains, <span id="nclasses">1</span> classes, <span id="nfiles">3</span> files, <span id="ntoofew" class="warn">3</span>`,
		`<tr data-domain="empty"><td>empty</td><td class="num classes">0</td><td class="num files">0</td><td class="num toofew ">0</td></tr>`,
		`<tr data-domain="status"><td>status</td><td class="num classes">1</td><td class="num files">3</td><td class="num toofew warn">3</td></tr>`,
		fmt.Sprintf(`<tr data-lock="mgfs:fid:999:replicate"><td>mgfs:fid:999:replicate</td><td class="num">%d</td>`, l.Token()),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("status page lacks %s:\n%s", want, body)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, body = c.get(t, "/"); strings.Contains(body, "mgfs:fid:999:replicate") {
		t.Errorf("status page still lists a released lock:\n%s", body)
	}
}
