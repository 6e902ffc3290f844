package main

// fsck, rebalance and drain against a real tracker (with its workers) and
// real storage nodes, on SQLite and, for the jobs run to their end, on
// MySQL and PostgreSQL as internal/testkit/testdb finds them.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/client"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/mogstored"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
	_ "github.com/gomogile/gomogile/store/sqlite"
	trackerd "github.com/gomogile/gomogile/tracker"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// testHost is the tracker's name in fsck_host and rebal_host.
const testHost = "mogtooltest"

type liveCluster struct {
	addr  string
	cl    *client.Client
	roots []string // each node's docroot; node i holds dev i+1
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestMain removes the test containers this binary started, when it is
// their last user (see testdb.Main).
func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// eachBackend runs f on a fresh database of each backend (MySQL and
// PostgreSQL skipped without a server, failed under CI).
func eachBackend(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, sqliteDSN(t)) })
	t.Run("mysql", func(t *testing.T) { f(t, testdb.MySQL(t)) })
	t.Run("postgres", func(t *testing.T) { f(t, testdb.Postgres(t)) })
}

func sqliteDSN(t *testing.T) string { return "sqlite:///" + filepath.Join(t.TempDir(), "db") }

// startCluster runs a tracker on the empty database dsn and nnodes
// storage nodes with one device each (dev1 on node1, ...), domain "d" with
// class "one" (one copy); withJobs runs the workers and the job master.
func startCluster(t *testing.T, dsn string, nnodes int, withJobs bool) *liveCluster {
	t.Helper()
	ctx := t.Context()
	oc, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := store.Open(oc, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := trackerd.DefaultConfig()
	cfg.Listen = []string{"127.0.0.1:0"}
	cfg.JobMaster = withJobs
	opts := &trackerd.Options{Hostname: testHost, Logger: quiet()}
	if withJobs {
		o := trackerd.JobsOptions(cfg)
		o.Hostname = testHost
		o.MonitorInterval = 100 * time.Millisecond
		o.QueuePoll = 50 * time.Millisecond
		o.ReaperInterval = 200 * time.Millisecond
		o.CloseGrace = time.Second
		o.Logger = quiet()
		opts.Jobs = jobs.New(st, o)
	}
	tr, err := trackerd.New(cfg, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	lc := &liveCluster{addr: tr.Addrs()[0].String()}
	if lc.cl, err = client.New([]string{lc.addr}, &client.Options{Domain: "d"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.cl.Close() })
	if err := lc.cl.CreateDomain(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if err := lc.cl.CreateClass(ctx, "d", client.Class{Name: "one", MinDevCount: 1}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= nnodes; i++ {
		// Each node on its own loopback address: host IPs are unique.
		ip := "127.0.0." + strconv.Itoa(i+1)
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "dev"+strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
		srv := mogstored.New(mogstored.Config{DocRoot: dir, HTTPListen: ip + ":0", MgmtListen: ip + ":0",
			Logger: quiet(), UsageInterval: 200 * time.Millisecond})
		if err := srv.Open(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		lc.roots = append(lc.roots, dir)
		_, port, _ := net.SplitHostPort(srv.HTTPAddr())
		p, _ := strconv.Atoi(port)
		name := "node" + strconv.Itoa(i)
		if _, err := lc.cl.CreateHost(ctx, client.Host{Name: name, IP: ip, Port: p, Status: "alive"}); err != nil {
			t.Fatal(err)
		}
		if err := lc.cl.CreateDevice(ctx, client.NewDevice{HostName: name, DevID: i}); err != nil {
			t.Fatal(err)
		}
	}
	if withJobs {
		waitUntil(t, "the monitor to see every device writeable", func() bool {
			devs, err := lc.cl.GetDevices(ctx)
			if err != nil || len(devs) != nnodes {
				return false
			}
			for _, d := range devs {
				if d.ObservedState != "writeable" {
					return false
				}
			}
			return true
		})
	}
	return lc
}

// mogtool runs a command line against the cluster.
func (lc *liveCluster) mogtool(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return run(t, nil, append([]string{"--trackers=" + lc.addr}, args...)...)
}

func (lc *liveCluster) upload(t *testing.T, key string) []int {
	t.Helper()
	body := "body of " + key
	if _, err := lc.cl.StoreFile(t.Context(), "d", key, "one", strings.NewReader(body), int64(len(body))); err != nil {
		t.Fatalf("store %s: %v", key, err)
	}
	fi, err := lc.cl.FileInfo(t.Context(), "d", key)
	if err != nil {
		t.Fatal(err)
	}
	return fi.DevIDs
}

// wantState checks a device's state as get_devices reports it.
func (lc *liveCluster) wantState(t *testing.T, devid int, state string) {
	t.Helper()
	devs, err := lc.cl.GetDevices(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.ID == devid {
			if d.Status != state {
				t.Errorf("dev%d is %s; want %s", devid, d.Status, state)
			}
			return
		}
	}
	t.Errorf("no dev%d", devid)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wantExit1 checks that err is what main reports on stderr with status 1.
func wantExit1(t *testing.T, err error, stderrHas string) {
	t.Helper()
	var b bytes.Buffer
	if code := exitCode(err, &b); code != 1 || !strings.Contains(b.String(), stderrHas) {
		t.Errorf("error %v: exit %d, stderr %q; want 1 and %q", err, code, b.String(), stderrHas)
	}
}

func TestDrain_MoveWatch(t *testing.T) { eachBackend(t, testDrainMoveWatch) }

func testDrainMoveWatch(t *testing.T, dsn string) {
	lc := startCluster(t, dsn, 2, true)
	var onDev1 []string
	for i := 0; len(onDev1) < 3; i++ {
		if i == 60 {
			t.Fatalf("after %d uploads only %d files on dev1", i, len(onDev1))
		}
		key := fmt.Sprintf("k%d", i)
		if slices.Contains(lc.upload(t, key), 1) {
			onDev1 = append(onDev1, key)
		}
	}

	out, _, err := lc.mogtool(t, "drain", "--move", "--watch", "--interval=50ms", "1")
	if err != nil {
		t.Fatalf("drain --move --watch: %v\n%s", err, out)
	}
	t.Logf("drain --move --watch printed:\n%s", out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if want := "dev1 (host node1): drain: no new files; its files stay until moved"; lines[0] != want {
		t.Errorf("first line %q; want %q", lines[0], want)
	}
	if want := `rebalance started with policy "from_devices=1 leave_in_drain_mode=1"`; lines[1] != want {
		t.Errorf("second line %q; want %q", lines[1], want)
	}
	// Not a terminal: one line per poll, no carriage returns.
	if strings.Contains(out, "\r") {
		t.Errorf("output to a non-terminal has a carriage return:\n%q", out)
	}
	last := lines[len(lines)-1]
	n := strconv.Itoa(len(onDev1))
	if !strings.HasPrefix(last, "rebalance done: "+n+"/"+n+" fids (100.0%) ") || !strings.Contains(last, " | devices 1/1 | ") {
		t.Errorf("last line %q; want rebalance done with %s/%s fids of 1/1 devices", last, n, n)
	}
	for _, l := range lines[2 : len(lines)-1] {
		if !strings.HasPrefix(l, "rebalance running: ") && !strings.HasPrefix(l, "rebalance finishing: ") {
			t.Errorf("progress line %q", l)
		}
	}
	for _, key := range onDev1 {
		fi, err := lc.cl.FileInfo(t.Context(), "d", key)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fi.DevIDs, []int{2}) {
			t.Errorf("%s on devices %v after the drain; want [2]", key, fi.DevIDs)
		}
	}
	// leave_in_drain_mode: the emptied device takes no new files.
	lc.wantState(t, 1, "drain")
}

// A drain whose files cannot move (two copies wanted, two devices) ends
// the watch with exit 1 naming the device, not with "done".
func TestDrain_MoveWatchFilesLeft(t *testing.T) {
	lc := startCluster(t, sqliteDSN(t), 2, true)
	if err := lc.cl.CreateClass(t.Context(), "d", client.Class{Name: "two", MinDevCount: 2}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "b"} {
		body := "body of " + key
		if _, err := lc.cl.StoreFile(t.Context(), "d", key, "two", strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, key+" on both devices", func() bool {
			fi, err := lc.cl.FileInfo(t.Context(), "d", key)
			return err == nil && len(fi.DevIDs) == 2
		})
	}
	out, _, err := lc.mogtool(t, "drain", "--move", "--watch", "--interval=50ms", "1")
	if !errors.Is(err, errNotEmpty) {
		t.Fatalf("drain --move --watch: %v; want errNotEmpty\n%s", err, out)
	}
	wantExit1(t, err, "drain: dev1 still holds files the rebalance could not move")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "rebalance done: 2/2 fids (100.0%)") || !strings.HasSuffix(last, " | files left on dev1") {
		t.Errorf("last line %q; want rebalance done, files left on dev1", last)
	}
	out, _, err = lc.mogtool(t, "rebalance", "status")
	if err != nil || !strings.Contains(out, "completed, still holding files: dev1\n") {
		t.Errorf("rebalance status = %q, %v; want dev1 still holding files", out, err)
	}
	lc.wantState(t, 1, "drain")
}

func TestDrain_WithoutMove(t *testing.T) {
	lc := startCluster(t, sqliteDSN(t), 2, false)
	out, _, err := lc.mogtool(t, "drain", "2", "1")
	if err != nil {
		t.Fatal(err)
	}
	want := "dev2 (host node2): drain: no new files; its files stay until moved\n" +
		"dev1 (host node1): drain: no new files; its files stay until moved\n" +
		"to move the files off: mogtool rebalance policy set 'from_devices=2,1 leave_in_drain_mode=1' && mogtool rebalance start\n" +
		"(or: mogtool drain --move 2 1)\n"
	if out != want {
		t.Errorf("drain printed\n%s\nwant\n%s", out, want)
	}
	lc.wantState(t, 1, "drain")
	lc.wantState(t, 2, "drain")
	// No rebalance was set up.
	if _, _, err := lc.mogtool(t, "rebalance", "status"); !errors.Is(err, client.ErrNoRebalState) {
		t.Errorf("rebalance status after a plain drain: %v; want ErrNoRebalState", err)
	}

	// An unknown device changes nothing, the known ones included.
	if _, _, err := lc.mogtool(t, "device", "mark", "node1", "1", "alive"); err != nil {
		t.Fatal(err)
	}
	_, _, err = lc.mogtool(t, "drain", "1", "9")
	if !errors.Is(err, errNoDevice) {
		t.Fatalf("drain of dev9: %v; want errNoDevice", err)
	}
	wantExit1(t, err, "dev9: no such device")
	lc.wantState(t, 1, "alive")
}

func TestRebalance_Commands(t *testing.T) {
	// No job master: a started rebalance stays running until stopped.
	lc := startCluster(t, sqliteDSN(t), 2, false)

	_, _, err := lc.mogtool(t, "rebalance", "status")
	if !errors.Is(err, client.ErrNoRebalState) {
		t.Fatalf("status before any rebalance: %v; want ErrNoRebalState", err)
	}
	wantExit1(t, err, "no_rebal_state")
	_, _, err = lc.mogtool(t, "rebalance", "policy", "set", "bogus_key=1")
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "bad_rebal_pol" {
		t.Fatalf("policy set bogus_key=1: %v; want bad_rebal_pol", err)
	}
	wantExit1(t, err, "Invalid setting bogus_key")

	// The policy's words as several arguments, and mogadm's --options form.
	if _, _, err := lc.mogtool(t, "rebalance", "policy", "--options=from_devices=2"); err != nil {
		t.Fatal(err)
	}
	if out, _, err := lc.mogtool(t, "rebalance", "policy", "show"); err != nil || out != "from_devices=2\n" {
		t.Fatalf("policy show after --options = %q, %v", out, err)
	}
	if _, _, err := lc.mogtool(t, "rebalance", "policy", "set", "from_devices=1", "to_devices=2"); err != nil {
		t.Fatal(err)
	}
	out, _, err := lc.mogtool(t, "rebalance", "policy", "show")
	if err != nil || out != "from_devices=1 to_devices=2\n" {
		t.Fatalf("policy show = %q, %v", out, err)
	}
	out, _, err = lc.mogtool(t, "rebalance", "test")
	if err != nil {
		t.Fatal(err)
	}
	if want := "policy:              from_devices=1 to_devices=2\nsource devices:      1\ndestination devices: 2\n"; out != want {
		t.Errorf("test printed %q; want %q", out, want)
	}

	if _, _, err := lc.mogtool(t, "rebalance", "start"); err != nil {
		t.Fatal(err)
	}
	out, _, err = lc.mogtool(t, "rebalance", "status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"running:", "yes (on " + testHost + ")", "queued, not moved:     0", "source_devs:           1", "time_started:"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	_, _, err = lc.mogtool(t, "rebalance", "reset")
	wantExit1(t, err, "rebal_running")
	_, _, err = lc.mogtool(t, "rebalance", "policy", "set", "from_devices=2")
	wantExit1(t, err, "no_set_rebal")
	if _, _, err := lc.mogtool(t, "rebalance", "stop"); err != nil {
		t.Fatal(err)
	}
	out, _, err = lc.mogtool(t, "rebalance", "settings")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rebal_host:   " + testHost, "rebal_signal: stop"} {
		if !strings.Contains(out, want) {
			t.Errorf("settings lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "rebal_state") {
		t.Errorf("settings shows rebal_state:\n%s", out)
	}
}

func TestFsck_WatchAndLog(t *testing.T) { eachBackend(t, testFsckWatchAndLog) }

func testFsckWatchAndLog(t *testing.T, dsn string) {
	lc := startCluster(t, dsn, 1, true)
	for i := range 4 {
		lc.upload(t, fmt.Sprintf("f%d", i))
	}
	// Lose one blob for fsck to find.
	fi, err := lc.cl.FileInfo(t.Context(), "d", "f2")
	if err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(lc.roots[0], "dev1", fmt.Sprintf("0/000/000/%010d.fid", fi.FID))
	if err := os.Remove(blob); err != nil {
		t.Fatal(err)
	}

	for _, verb := range []string{"reset", "start"} {
		if _, _, err := lc.mogtool(t, "fsck", verb); err != nil {
			t.Fatalf("fsck %s: %v", verb, err)
		}
	}
	_, _, err = lc.mogtool(t, "fsck", "start")
	if !errors.Is(err, client.ErrFsckRunning) {
		t.Errorf("second fsck start: %v; want ErrFsckRunning", err)
	}
	wantExit1(t, err, "fsck_running")

	out, _, err := lc.mogtool(t, "fsck", "status", "--watch", "--interval=50ms")
	if err != nil {
		t.Fatalf("fsck status --watch: %v\n%s", err, out)
	}
	t.Logf("fsck status --watch printed:\n%s", out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "fsck done: 4/4 fids (100.0%)") || !strings.Contains(last, " | 0 queued | ") ||
		!strings.Contains(last, "MISS=1") {
		t.Errorf("last line %q; want fsck done, 4/4 fids, MISS=1", last)
	}

	out, _, err = lc.mogtool(t, "fsck", "printlog")
	if err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != strings.TrimSuffix(fsckLogHeader, "\n") {
		t.Errorf("printlog header %q", lines[0])
	}
	var miss bool
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) == 4 && f[1] == "MISS" && f[2] == strconv.FormatInt(fi.FID, 10) && f[3] == "1" {
			miss = true
		}
	}
	if !miss {
		t.Errorf("printlog has no MISS row for fid %d on dev1:\n%s", fi.FID, out)
	}

	// taillog prints the same rows and follows until interrupted, then
	// exits cleanly.
	ctx, cancel := context.WithCancel(t.Context())
	var buf syncBuffer
	done := make(chan error, 1)
	go func() {
		m := &Main{Getenv: func(string) string { return "" }}
		done <- m.Run(ctx, []string{"--trackers=" + lc.addr, "fsck", "taillog", "--interval=50ms"}, &buf, io.Discard)
	}()
	waitUntil(t, "taillog to print the MISS row", func() bool { return strings.Contains(buf.String(), " MISS ") })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("taillog after interrupt: %v; want nil", err)
	}

	if _, _, err := lc.mogtool(t, "fsck", "clearlog"); err != nil {
		t.Fatal(err)
	}
	if out, _, err := lc.mogtool(t, "fsck", "printlog"); err != nil || out != fsckLogHeader {
		t.Errorf("printlog after clearlog = %q, %v; want the header only", out, err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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
