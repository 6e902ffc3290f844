package tracker_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker"
	model "github.com/gomogile/gomogile/tracker/internal/cluster"
)

// Issue 21, point 4: create_open without create_close grew the metadata
// without bound (20,000 requests at 2,679/s, none refused). Open uploads
// are now bounded per client address and per tracker.

// dialFrom connects to the tracker from the loopback address ip, so that
// it counts as another client address.
func (tt *testTracker) dialFrom(ip string) *lineConn {
	tt.t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	nc, err := d.Dial("tcp", tt.addr)
	if err != nil {
		tt.t.Fatalf("dial from %s: %v", ip, err)
	}
	tt.t.Cleanup(func() { nc.Close() })
	return &lineConn{t: tt.t, nc: nc, br: bufio.NewReader(nc)}
}

// pipeline sends n request lines without waiting for the replies and
// returns the replies, as a flooding client would.
func (c *lineConn) pipeline(n int, line func(i int) string) []string {
	c.t.Helper()
	sent := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(c.nc)
		c.nc.SetWriteDeadline(time.Now().Add(5 * time.Minute))
		for i := range n {
			if _, err := w.WriteString(line(i) + "\r\n"); err != nil {
				sent <- err
				return
			}
		}
		sent <- w.Flush()
	}()
	replies := make([]string, 0, n)
	for range n {
		c.nc.SetReadDeadline(time.Now().Add(time.Minute))
		s, err := c.br.ReadString('\n')
		if err != nil {
			c.t.Fatalf("reply %d of %d: %v", len(replies)+1, n, err)
		}
		replies = append(replies, strings.TrimSuffix(s, "\r\n"))
	}
	if err := <-sent; err != nil {
		c.t.Fatalf("sending: %v", err)
	}
	return replies
}

// tempfileRows counts st's tempfile rows (those of earlier seconds of the
// database clock: it waits a second first).
func tempfileRows(t *testing.T, st *store.Store) int {
	t.Helper()
	time.Sleep(1100 * time.Millisecond)
	rows, err := st.ExpiredTempFiles(t.Context(), 0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// sqliteBytes is the size of a SQLite database and its write-ahead log,
// or -1 for another backend.
func sqliteBytes(dsn string) int64 {
	path, ok := strings.CutPrefix(dsn, "sqlite://")
	if !ok {
		return -1
	}
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// wantRefused sends a create_open that must be refused for too many open
// uploads, naming the limit key.
func wantRefused(t *testing.T, c *lineConn, key string) {
	t.Helper()
	r := c.do("create_open domain=d&key=refused")
	if !strings.HasPrefix(r, "ERR too_many_uploads ") || !strings.Contains(r, url.QueryEscape("("+key+")")) {
		t.Errorf("create_open past the limit: %q; want ERR too_many_uploads naming %s", r, key)
	}
}

func TestCreateOpen_FloodIsBounded(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig()
		cfg.MaxOpenUploadsPerIP = 50
		cfg.MaxOpenUploads = 80
		st := openStore(t, dsn)
		reg := tracker.NewRegistry()
		tt, c, _ := oneNodeClusterCfg(t, cfg, st, &tracker.Options{Registry: reg})
		c.want("set_server_setting key=skip_mkcol&value=1", "OK ")
		rowsBefore, bytesBefore := tempfileRows(t, st), sqliteBytes(dsn)

		const flood = 20000
		start := time.Now()
		replies := c.pipeline(flood, func(i int) string { return fmt.Sprintf("create_open domain=d&key=flood%d", i) })
		took := time.Since(start)
		ok, refused := 0, 0
		for _, r := range replies {
			switch {
			case strings.HasPrefix(r, "OK "):
				ok++
			case strings.HasPrefix(r, "ERR too_many_uploads ") && strings.Contains(r, "max_open_uploads_per_ip"):
				refused++
			default:
				t.Fatalf("flood reply %q; want OK or ERR too_many_uploads", r)
			}
		}
		rowsAfter, bytesAfter := tempfileRows(t, st), sqliteBytes(dsn)
		t.Logf("%d create_open in %v (%.0f/s) from one address: %d OK, %d refused; tempfile rows %d -> %d; SQLite file+WAL %d -> %d bytes",
			flood, took.Round(time.Millisecond), flood/took.Seconds(), ok, refused, rowsBefore, rowsAfter, bytesBefore, bytesAfter)
		if ok != cfg.MaxOpenUploadsPerIP || refused != flood-ok {
			t.Errorf("flood from one address: %d OK, %d refused; want %d OK (max_open_uploads_per_ip), the rest refused", ok, refused, cfg.MaxOpenUploadsPerIP)
		}
		if rowsAfter-rowsBefore != ok {
			t.Errorf("tempfile rows grew by %d; want the %d accepted", rowsAfter-rowsBefore, ok)
		}

		// Another address still gets slots, up to the overall limit.
		other := tt.dialFrom("127.0.0.3")
		for i := range cfg.MaxOpenUploads - cfg.MaxOpenUploadsPerIP {
			parseOK(t, other.do(fmt.Sprintf("create_open domain=d&key=other%d", i)))
		}
		wantRefused(t, other, "max_open_uploads")
		wantRefused(t, c, "max_open_uploads_per_ip")
		if n := tempfileRows(t, st); n != cfg.MaxOpenUploads {
			t.Errorf("tempfile rows = %d; want max_open_uploads %d", n, cfg.MaxOpenUploads)
		}
		mfs := gather(t, reg)
		for _, m := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"gomogile_uploads_open", nil, float64(cfg.MaxOpenUploads)},
			{"gomogile_uploads_refused_total", map[string]string{"reason": "max_open_uploads_per_ip"}, float64(refused + 1)},
			{"gomogile_uploads_refused_total", map[string]string{"reason": "max_open_uploads"}, 1},
		} {
			if got := sum(mfs, m.name, m.labels); got != m.want {
				t.Errorf("%s%v = %v; want %v", m.name, m.labels, got, m.want)
			}
		}
	})
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	mfs := map[string]*dto.MetricFamily{}
	for _, mf := range fams {
		mfs[mf.GetName()] = mf
	}
	return mfs
}

// A slot comes back when its upload ends (a create_close that commits or
// discards it) or its create_open fails; a create_close that decides
// nothing, from another address or for a fid nobody opened, frees none.
func TestCreateOpen_SlotsComeBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig()
		cfg.MaxOpenUploadsPerIP = 2
		cfg.MaxOpenUploads = 3
		tt, a, n := oneNodeClusterCfg(t, cfg, openStore(t, dsn), nil)
		open := func(c *lineConn, key string) url.Values {
			t.Helper()
			return parseOK(t, c.do("create_open domain=d&class=c&key="+key))
		}
		closeLine := func(u url.Values, key, extra string) string {
			return fmt.Sprintf("create_close domain=d&key=%s&fid=%s&devid=%s&path=%s%s",
				key, u.Get("fid"), u.Get("devid"), tracker.Escape(u.Get("path")), extra)
		}

		// A create_open that fails gives its slot back.
		u1 := open(a, "k1")
		for range 3 {
			a.want("create_open domain=d&key=k1b&fid="+u1.Get("fid"), "ERR fid_in_use fid_in_use")
		}
		u2 := open(a, "k2")
		wantRefused(t, a, "max_open_uploads_per_ip")

		// Another address frees none of a's slots with a create_close that
		// decides nothing, nor with one for a fid nobody opened; its own
		// slots are its own, within the overall limit.
		b := tt.dialFrom("127.0.0.3")
		b.want(fmt.Sprintf("create_close domain=d&key=k1&fid=%s&devid=1&path=http://elsewhere/x", u1.Get("fid")), "ERR bogus_args bogus_args")
		nobody := url.Values{"fid": {"999999"}, "devid": {"1"}, "path": {"http://" + n.ip + ":" + n.port + model.FidPath(1, 999999)}}
		b.want(closeLine(nobody, "k9", ""), "ERR no_temp_file No+tempfile+or+file+already+closed")
		wantRefused(t, a, "max_open_uploads_per_ip")
		open(b, "k3")
		wantRefused(t, b, "max_open_uploads")

		// create_close that commits the upload gives its slot back...
		put(t, u1.Get("path"), []byte("uploaded"))
		a.want(closeLine(u1, "k1", ""), "OK ")
		open(a, "k4")
		wantRefused(t, a, "max_open_uploads_per_ip")
		// ...and so does one that fails and discards it.
		put(t, u2.Get("path"), []byte("short"))
		if r := a.do(closeLine(u2, "k2", "&size=999")); !strings.HasPrefix(r, "ERR size_mismatch ") {
			t.Fatalf("create_close with the wrong size: %q; want ERR size_mismatch", r)
		}
		open(a, "k5")
		wantRefused(t, a, "max_open_uploads_per_ip")
	})
}

// An abandoned upload's slot comes back once tempfile_ttl has passed and
// the reaper (here another tracker's) has removed its tempfile, not
// before: with no reaper running the limit holds past the TTL.
func TestCreateOpen_SlotsComeBackOnExpiry(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig()
		cfg.MaxOpenUploadsPerIP = 2
		cfg.TempFileTTL = 2 * time.Second
		_, a, _ := oneNodeClusterCfg(t, cfg, openStore(t, dsn), nil)
		var fids []string
		for i := range 2 {
			fids = append(fids, parseOK(t, a.do(fmt.Sprintf("create_open domain=d&key=abandoned%d", i))).Get("fid"))
		}
		wantRefused(t, a, "max_open_uploads_per_ip")
		time.Sleep(cfg.TempFileTTL + 1500*time.Millisecond)
		wantRefused(t, a, "max_open_uploads_per_ip") // nobody reaped the rows

		st2 := openStore(t, dsn)
		startTracker(t, cfg, st2, &tracker.Options{Jobs: fastJobsCfg(st2, nil, "reaper", cfg), Hostname: "reaper"})
		waitFor(t, 30*time.Second, "a slot back after the reaper", func() bool {
			return strings.HasPrefix(a.do("create_open domain=d&key=after"), "OK ")
		})
		for _, fid := range fids {
			if r := a.do("file_debug fid=" + fid); strings.Contains(r, "tempfile_fid=") {
				t.Errorf("fid %s: tempfile still there after its slot came back: %s", fid, r)
			}
		}
	})
}

// A full metadata database (SQLite at its max_page_count: SQLite's own
// SQLITE_FULL, as a full disk gives) refuses uploads with ERR db_full and
// the tracker logs why; once space is freed, the same tracker accepts them
// again.
func TestCreateOpen_DatabaseFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	ctx := t.Context()
	st0, err := store.Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	setup := func() error {
		if _, err := st0.CreateDomain(ctx, "d"); err != nil {
			return err
		}
		h, err := st0.CreateHost(ctx, store.Host{Name: "h", Status: store.HostAlive, IP: "127.0.0.2", HTTPPort: 7500})
		if err != nil {
			return err
		}
		if _, err := st0.CreateDevice(ctx, store.Device{ID: 1, HostID: h.ID, Status: store.DeviceAlive, Weight: 100}); err != nil {
			return err
		}
		return st0.SetServerSetting(ctx, "skip_mkcol", "1")
	}
	if err := setup(); err != nil {
		t.Fatal(err)
	}
	st0.Close() // checkpoints the log into the file: its size is the database's
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t, fmt.Sprintf("sqlite://%s?max_page_count=%d", path, fi.Size()/4096+4))
	var logs syncBuffer
	cfg := testConfig()
	cfg.MaxOpenUploadsPerIP, cfg.MaxOpenUploads = 0, 0 // the database is the only bound here
	reg := tracker.NewRegistry()
	tt := startTracker(t, cfg, st, &tracker.Options{Registry: reg,
		Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logs, testLogWriter()), nil))})
	c := tt.dial()

	var fids []int64
	full := ""
	for i := 0; i < 100000 && full == ""; i++ {
		r := c.do(fmt.Sprintf("create_open domain=d&key=k%d", i))
		if !strings.HasPrefix(r, "OK ") {
			full = r
			break
		}
		var fid int64
		fmt.Sscan(parseOK(t, r).Get("fid"), &fid)
		fids = append(fids, fid)
	}
	t.Logf("%d uploads fitted before the database was full", len(fids))
	const want = "ERR db_full Metadata+database+out+of+space:+uploads+are+refused+until+space+is+freed"
	if full != want || len(fids) == 0 {
		t.Fatalf("create_open on a full database: %q after %d uploads; want %q", full, len(fids), want)
	}
	c.want("create_open domain=d&key=still-full", want)
	if !strings.Contains(logs.String(), "metadata database out of space") {
		t.Errorf("the tracker did not log the full database:\n%s", logs.String())
	}
	if got := sum(gather(t, reg), "gomogile_uploads_refused_total", map[string]string{"reason": "no_space"}); got != 2 {
		t.Errorf("gomogile_uploads_refused_total{reason=no_space} = %v; want 2", got)
	}

	// Space comes back (the abandoned uploads' rows go, as the reaper or an
	// operator would remove them): the same tracker takes uploads again.
	for _, fid := range fids[:len(fids)/2] {
		if err := st.DeleteTempFile(ctx, fid); err != nil {
			t.Fatal(err)
		}
	}
	parseOK(t, c.do("create_open domain=d&key=after"))
}

// testLogWriter shows the tracker's log with TRACKER_TEST_LOG set.
func testLogWriter() io.Writer {
	if os.Getenv("TRACKER_TEST_LOG") != "" {
		return os.Stderr
	}
	return io.Discard
}

// The upload keys: defaults, values, what reaches the reaper, refusals.
func TestConfig_UploadKeys(t *testing.T) {
	d := tracker.DefaultConfig()
	if d.MaxOpenUploadsPerIP != 1000 || d.MaxOpenUploads != 10000 || d.TempFileTTL != time.Hour {
		t.Errorf("defaults: per ip %d, overall %d, ttl %v; want 1000, 10000, 1h", d.MaxOpenUploadsPerIP, d.MaxOpenUploads, d.TempFileTTL)
	}
	if o := tracker.JobsOptions(d); o.TempFileTTL != time.Hour {
		t.Errorf("reaper TTL by default = %v; want 1h, the original's", o.TempFileTTL)
	}
	c, err := tracker.ParseConfig(strings.NewReader("max_open_uploads_per_ip = 20\nmax_open_uploads = 0\ntempfile_ttl = 600\n"))
	if err == nil {
		err = c.Validate()
	}
	if err != nil || c.MaxOpenUploadsPerIP != 20 || c.MaxOpenUploads != 0 || c.TempFileTTL != 10*time.Minute {
		t.Errorf("parsed %d, %d, %v, %v; want 20, 0 (no bound), 10m", c.MaxOpenUploadsPerIP, c.MaxOpenUploads, c.TempFileTTL, err)
	}
	if o := tracker.JobsOptions(c); o.TempFileTTL != 10*time.Minute {
		t.Errorf("reaper TTL = %v; want tempfile_ttl's 10m", o.TempFileTTL)
	}
	for _, line := range []string{"max_open_uploads_per_ip = -1", "max_open_uploads = -5", "tempfile_ttl = 0", "tempfile_ttl = soon"} {
		c, err := tracker.ParseConfig(strings.NewReader(line + "\n"))
		if err == nil {
			err = c.Validate()
		}
		key, _, _ := strings.Cut(line, " ")
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v; want an error naming %s", line, err, key)
		}
	}
}
