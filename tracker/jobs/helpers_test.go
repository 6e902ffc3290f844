package jobs_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/mogstored"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
	model "github.com/gomogile/gomogile/tracker/internal/cluster"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// node is one real storage node on its own loopback address.
type node struct {
	srv     *mogstored.Server
	docroot string
	host    store.Host
	devs    []int
}

// cluster is a SQLite database plus storage nodes registered in it.
type cluster struct {
	t      *testing.T
	dbPath string
	st     *store.Store
	nodes  []*node
	dmid   int
	nextIP int
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{t: t, dbPath: filepath.Join(t.TempDir(), "db"), nextIP: 2}
	c.st = c.openStore()
	d, err := c.st.CreateDomain(t.Context(), "testdom")
	if err != nil {
		t.Fatalf("create domain: %v", err)
	}
	c.dmid = d.ID
	return c
}

// openStore opens another independent Store on the cluster's database, as
// a second tracker would.
func (c *cluster) openStore() *store.Store {
	c.t.Helper()
	st, err := store.Open(c.t.Context(), "sqlite:///"+c.dbPath)
	if err != nil {
		c.t.Fatalf("open store: %v", err)
	}
	c.t.Cleanup(func() { st.Close() })
	return st
}

// addNode starts a mogstored with the given device ids on the next
// loopback address and registers host and devices.
func (c *cluster) addNode(devids ...int) *node {
	t := c.t
	t.Helper()
	ip := "127.0.0." + strconv.Itoa(c.nextIP)
	c.nextIP++
	root := t.TempDir()
	for _, id := range devids {
		if err := os.Mkdir(filepath.Join(root, "dev"+strconv.Itoa(id)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv := mogstored.New(mogstored.Config{
		DocRoot: root, HTTPListen: ip + ":0", MgmtListen: ip + ":0",
		UsageInterval: 200 * time.Millisecond, NoIOStat: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err := srv.Open(t.Context()); err != nil {
		t.Fatalf("mogstored on %s: %v", ip, err)
	}
	t.Cleanup(func() { srv.Close() })
	port := portOf(t, srv.HTTPAddr())
	h, err := c.st.CreateHost(t.Context(), store.Host{Name: "node" + ip, Status: store.HostAlive, IP: ip, HTTPPort: port})
	if err != nil {
		t.Fatalf("create host: %v", err)
	}
	for _, id := range devids {
		if _, err := c.st.CreateDevice(t.Context(), store.Device{ID: id, HostID: h.ID, Status: store.DeviceAlive, Weight: 100}); err != nil {
			t.Fatalf("create device %d: %v", id, err)
		}
	}
	n := &node{srv: srv, docroot: root, host: h, devs: devids}
	c.nodes = append(c.nodes, n)
	return n
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	i := strings.LastIndexByte(addr, ':')
	p, err := strconv.Atoi(addr[i+1:])
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return p
}

// nodeOf finds the node holding devid.
func (c *cluster) nodeOf(devid int) *node {
	for _, n := range c.nodes {
		for _, d := range n.devs {
			if d == devid {
				return n
			}
		}
	}
	c.t.Fatalf("no node has dev%d", devid)
	return nil
}

// blobPath is where devid's node keeps fid on disk.
func (c *cluster) blobPath(devid int, fid int64) string {
	return filepath.Join(c.nodeOf(devid).docroot, filepath.FromSlash(model.FidPath(devid, fid)))
}

func (c *cluster) hasBlob(devid int, fid int64) bool {
	_, err := os.Stat(c.blobPath(devid, fid))
	return err == nil
}

func (c *cluster) blob(devid int, fid int64) []byte {
	b, err := os.ReadFile(c.blobPath(devid, fid))
	if err != nil {
		return nil
	}
	return b
}

// class creates a class and returns its id.
func (c *cluster) class(name string, mindev int, hash store.HashType) int {
	c.t.Helper()
	cl, err := c.st.CreateClass(c.t.Context(), store.Class{DomainID: c.dmid, Name: name, MinDevCount: mindev, HashType: hash})
	if err != nil {
		c.t.Fatalf("create class: %v", err)
	}
	return cl.ID
}

// upload writes a blob to a storage node over HTTP, as a client would.
func (c *cluster) upload(devid int, fid int64, data []byte) {
	c.t.Helper()
	n := c.nodeOf(devid)
	base := "http://" + n.srv.HTTPAddr()
	p := model.FidPath(devid, fid)
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i := 2; i < len(parts); i++ {
		req, _ := http.NewRequest("MKCOL", base+"/"+strings.Join(parts[:i], "/")+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			c.t.Fatalf("MKCOL: %v", err)
		}
		resp.Body.Close()
	}
	req, _ := http.NewRequest(http.MethodPut, base+p, bytes.NewReader(data))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("PUT: %v", err)
	}
	resp.Body.Close()
	// Keep no idle connection: leak checks count transport goroutines.
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode/100 != 2 {
		c.t.Fatalf("PUT %s: HTTP %d", p, resp.StatusCode)
	}
}

// putFile stores a file the way create_open/create_close do: reserve a
// fid, upload to the given devices, commit (queued for replication).
func (c *cluster) putFile(key string, classid int, data []byte, devids ...int) int64 {
	c.t.Helper()
	ctx := c.t.Context()
	fid, err := c.st.CreateTempFile(ctx, store.TempFile{DomainID: c.dmid, Key: key, ClassID: classid, DevIDs: devids})
	if err != nil {
		c.t.Fatalf("create tempfile: %v", err)
	}
	for _, d := range devids {
		c.upload(d, fid, data)
	}
	sum := md5.Sum(data)
	if _, err := c.st.CommitFile(ctx, store.Commit{
		Fid: fid, DomainID: c.dmid, Key: key, ClassID: classid, Length: int64(len(data)),
		DevIDs: devids, Checksum: &store.Checksum{HashType: store.HashMD5, Sum: sum[:]}, Replicate: true,
	}); err != nil {
		c.t.Fatalf("commit: %v", err)
	}
	return fid
}

// putPlaced is putFile for a file already where it belongs: nothing is
// left queued for replication, so a test's workers only do what it asks.
func (c *cluster) putPlaced(key string, classid int, data []byte, devids ...int) int64 {
	c.t.Helper()
	fid := c.putFile(key, classid, data, devids...)
	if err := c.st.Finish(c.t.Context(), store.QueueReplicate, fid); err != nil {
		c.t.Fatalf("finish replication of fid %d: %v", fid, err)
	}
	return fid
}

// setSettings stores server settings, as set_server_setting would.
func setSettings(t *testing.T, st *store.Store, kv map[string]string) {
	t.Helper()
	for k, v := range kv {
		if err := st.SetServerSetting(t.Context(), k, v); err != nil {
			t.Fatalf("set %s: %v", k, err)
		}
	}
}

// runRebalance starts a Manager on c after setting rebal_policy to policy
// and rebal_host to the Manager's host (what rebalance_start does, with
// the state left for the job master to begin) plus any extra settings, and
// waits until the run is over: rebal_host cleared and every queued move
// worked off. It returns the run's saved rebal_state.
func runRebalance(t *testing.T, c *cluster, o jobs.Options, policy string, extra map[string]string) string {
	t.Helper()
	ctx := t.Context()
	setSettings(t, c.st, map[string]string{"rebal_policy": policy, "rebal_host": o.Hostname})
	setSettings(t, c.st, extra)
	start(t, c.st, o)
	waitFor(t, 20*time.Second, "the rebalance to end", func() bool {
		_, err := c.st.ServerSetting(ctx, "rebal_host")
		return errors.Is(err, store.ErrNotFound) && queueLen(t, c.st, store.QueueRebalance) == 0
	})
	st, err := c.st.ServerSetting(ctx, "rebal_state")
	if err != nil {
		t.Fatalf("rebal_state after the run: %v", err)
	}
	return st
}

// deviceStatus is devid's state in the database.
func deviceStatus(t *testing.T, st *store.Store, devid int) store.DeviceState {
	t.Helper()
	devs, err := st.Devices(t.Context())
	if err != nil {
		t.Fatalf("devices: %v", err)
	}
	for _, d := range devs {
		if d.ID == devid {
			return d.Status
		}
	}
	t.Fatalf("no dev%d", devid)
	return ""
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fastOptions keep every interval short.
func fastOptions(t *testing.T) jobs.Options {
	o := jobs.DefaultOptions()
	o.MonitorInterval = 100 * time.Millisecond
	o.ReaperInterval = 100 * time.Millisecond
	o.QueuePoll = 50 * time.Millisecond
	o.CloseGrace = 2 * time.Second
	o.Hostname = "tracker-test"
	o.Logger = testLogger(t)
	return o
}

// start opens a Manager on st and closes it at cleanup.
func start(t *testing.T, st *store.Store, o jobs.Options) *jobs.Manager {
	t.Helper()
	if os.Getenv("GOMOGILE_TEST_JOB_PROCESSES") == "1" && o.Process == nil && o.HTTPClient == nil {
		o.Process = func(class string) *exec.Cmd { return exec.Command(os.Args[0], jobs.WorkerArgs(class)...) }
	}
	m := jobs.New(st, o)
	if err := m.Open(t.Context()); err != nil {
		t.Fatalf("open manager: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fileOn(t *testing.T, st *store.Store, fid int64) []int {
	t.Helper()
	on, err := st.FileOn(context.Background(), fid)
	if err != nil {
		t.Fatalf("file_on %d: %v", fid, err)
	}
	return on
}

func queueLen(t *testing.T, st *store.Store, q store.Queue) int64 {
	t.Helper()
	n, err := st.QueueLength(context.Background(), q)
	if err != nil {
		t.Fatalf("queue length: %v", err)
	}
	return n
}

func inQueue(t *testing.T, st *store.Store, q store.Queue, fid int64) bool {
	t.Helper()
	_, err := st.QueueItem(context.Background(), q, fid)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	if err != nil {
		t.Fatalf("queue item: %v", err)
	}
	return true
}

// countingTransport counts requests by method and fid on the real
// transport.
type countingTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	puts map[string]int // path -> PUTs of .fid blobs
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, ".fid") {
		c.mu.Lock()
		c.puts[fidOfPath(r.URL.Path)]++
		c.mu.Unlock()
	}
	return c.base.RoundTrip(r)
}

// fidOfPath extracts the fid's digits from a blob path.
func fidOfPath(p string) string {
	base := p[strings.LastIndexByte(p, '/')+1:]
	n, _ := strconv.ParseInt(strings.TrimSuffix(base, ".fid"), 10, 64)
	return fmt.Sprint(n)
}

func newCountingClient() (*http.Client, *countingTransport) {
	ct := &countingTransport{base: http.DefaultTransport.(*http.Transport).Clone(), puts: map[string]int{}}
	return &http.Client{Transport: ct}, ct
}

func removeFile(p string) error { return os.Remove(p) }

// blockingTransport lets everything through except blob PUTs, which hang
// until their request is cancelled: a copy in flight for as long as the
// test wants.
type blockingTransport struct {
	base    http.RoundTripper
	started chan<- struct{}
}

func (b *blockingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, ".fid") {
		select {
		case b.started <- struct{}{}:
		default:
		}
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return b.base.RoundTrip(r)
}

func newBlockingClient(started chan<- struct{}) *http.Client {
	return &http.Client{Transport: &blockingTransport{base: http.DefaultTransport.(*http.Transport).Clone(), started: started}}
}
