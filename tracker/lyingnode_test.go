package tracker_test

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomogile/gomogile/mogstored"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker"
	model "github.com/gomogile/gomogile/tracker/internal/cluster"
)

// Issue 21, point 1: no single read decides what a file is. Each test
// runs a tracker with its workers in front of storage nodes that lie — an
// HTTP front (liar) of a real mogstored, registered as the host, which
// passes everything through except what it is told to lie about — and
// checks that the good copy is kept and no bad one recorded, on every
// backend.

// liar is a lying storage node: a real mogstored behind an HTTP front on
// its own loopback address. Only blob requests (.fid) are lied about; the
// monitor's usage reads and test writes go through.
type liar struct {
	t    testing.TB
	ip   string
	port string
	real *mogstored.Server
	dir  string

	mu sync.Mutex
	// corrupt is how many more blob GETs get their first byte flipped
	// (same length, wrong bytes); < 0: every one.
	corrupt int
	// swallow answers blob PUTs 201 and stores nothing; truncate stores
	// the first half. Either way HEAD then answers the length sent.
	swallow, truncate bool
	claimed           map[string]int64

	gets, puts atomic.Int64
}

// startLiar starts a real node with devid on ip (its management port on
// mgmtPort when > 0, else a free one) and the lying front on a free port.
func startLiar(t testing.TB, ip string, devid, mgmtPort int) (*liar, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "dev"+itoa(devid)), 0o755); err != nil {
		t.Fatal(err)
	}
	mgmt := ip + ":0"
	if mgmtPort > 0 {
		mgmt = net.JoinHostPort(ip, itoa(mgmtPort))
	}
	srv := mogstored.New(mogstored.Config{DocRoot: dir, HTTPListen: ip + ":0", MgmtListen: mgmt,
		Logger: quietLogger(), UsageInterval: 200 * time.Millisecond})
	if err := srv.Open(t.Context()); err != nil {
		return nil, err
	}
	t.Cleanup(func() { srv.Close() })
	l := &liar{t: t, ip: ip, real: srv, dir: dir, claimed: map[string]int64{}}
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	_, l.port, _ = net.SplitHostPort(ln.Addr().String())
	hs := &http.Server{Handler: l, ErrorLog: slog.NewLogLogger(quietLogger().Handler(), slog.LevelError)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return l, nil
}

func (l *liar) base() string { return "http://" + l.real.HTTPAddr() }

func (l *liar) set(f func(l *liar)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l)
}

// onDisk is what the real node holds for fid on devid, nil when nothing.
func (l *liar) onDisk(devid int, fid int64) []byte {
	b, err := os.ReadFile(filepath.Join(l.dir, filepath.FromSlash(model.FidPath(devid, fid))))
	if err != nil {
		return nil
	}
	return b
}

func (l *liar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target, _ := url.Parse(l.base())
	if !strings.HasSuffix(r.URL.Path, ".fid") {
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
		return
	}
	l.mu.Lock()
	claimed, lied := l.claimed[r.URL.Path]
	l.mu.Unlock()
	switch r.Method {
	case http.MethodHead:
		if lied {
			w.Header().Set("Content-Length", strconv.FormatInt(claimed, 10))
			w.WriteHeader(http.StatusOK)
			return
		}
	case http.MethodGet:
		l.gets.Add(1)
		l.mu.Lock()
		flip := l.corrupt != 0
		if l.corrupt > 0 {
			l.corrupt--
		}
		l.mu.Unlock()
		if flip {
			resp, err := http.Get(l.base() + r.URL.Path)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode == http.StatusOK && len(body) > 0 {
				body[0] ^= 0xff
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(resp.StatusCode)
			w.Write(body)
			return
		}
	case http.MethodPut:
		l.puts.Add(1)
		l.mu.Lock()
		swallow, truncate := l.swallow, l.truncate
		l.mu.Unlock()
		if swallow || truncate {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			l.mu.Lock()
			l.claimed[r.URL.Path] = int64(len(body))
			l.mu.Unlock()
			if swallow {
				w.WriteHeader(http.StatusCreated)
				return
			}
			req, _ := http.NewRequest(http.MethodPut, l.base()+r.URL.Path, bytes.NewReader(body[:len(body)/2]))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			resp.Body.Close()
			w.WriteHeader(resp.StatusCode)
			return
		}
	case http.MethodDelete:
		l.mu.Lock()
		delete(l.claimed, r.URL.Path)
		l.mu.Unlock()
	}
	httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
}

// liarCluster is one tracker with its workers in front of lying nodes:
// dev<i> on liars[i-1].
type liarCluster struct {
	tt     *testTracker
	c      *lineConn
	st     *store.Store
	liars  []*liar
	domain int
}

// startLiars starts a tracker on dsn and n lying nodes. sideChannel gives
// the nodes a management port the tracker digests on (its
// mogstored_stream_port, honest: only HTTP lies); without, every digest is
// a GET through the liar.
func startLiars(t *testing.T, dsn string, n int, sideChannel bool) *liarCluster {
	t.Helper()
	var liars []*liar
	port := 0
	for try := 0; ; try++ {
		if sideChannel {
			port = freePort(t)
		}
		liars = nil
		var err error
		for i := 1; i <= n && err == nil; i++ {
			var l *liar
			l, err = startLiar(t, fmt.Sprintf("127.0.0.%d", i+1), i, port)
			liars = append(liars, l)
		}
		if err == nil {
			break
		}
		if try == 4 {
			t.Fatalf("storage nodes: %v", err)
		}
	}
	cfg := testConfig()
	cfg.JobMaster = true
	cfg.MogstoredStreamPort = port
	st := openStore(t, dsn)
	tt := startTracker(t, cfg, st, &tracker.Options{Jobs: fastJobsCfg(st, nil, "tracker0", cfg), Hostname: "tracker0"})
	c := tt.dial()
	c.want("create_domain domain=d", "OK domain=d")
	for i, l := range liars {
		parseOK(t, c.do(fmt.Sprintf("create_host host=h%d&ip=%s&port=%s&status=alive", i+1, l.ip, l.port)))
		c.want(fmt.Sprintf("create_device devid=%d&hostid=%d", i+1, i+1), "OK ")
	}
	c.want("clear_cache", "OK ")
	waitWriteable(t, tt, n)
	doms, err := st.Domains(t.Context())
	if err != nil || len(doms) != 1 {
		t.Fatalf("domains %v, %v; want d", doms, err)
	}
	return &liarCluster{tt: tt, c: c, st: st, liars: liars, domain: doms[0].ID}
}

// freePort is a TCP port free on 127.0.0.1 a moment ago; the nodes'
// addresses (127.0.0.2, …) are other addresses, so it is very likely free
// there too (startLiars tries again when not).
func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// class creates a class of mindevcount 2 with hashtype ("" for none).
func (lc *liarCluster) class(t *testing.T, name, hashtype string) int {
	t.Helper()
	req := "create_class domain=d&class=" + name + "&mindevcount=2"
	if hashtype != "" {
		req += "&hashtype=" + hashtype
	}
	parseOK(t, lc.c.do(req))
	lc.c.want("clear_cache", "OK ")
	classes, err := lc.st.Classes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range classes {
		if cl.DomainID == lc.domain && cl.Name == name {
			return cl.ID
		}
	}
	t.Fatalf("no class %s", name)
	return 0
}

// place stores data as fid on dev1 — written to the real node, so the
// copy there is good — and commits it with no checksum (an upload whose
// client sent none, the ordinary case), queued for replication.
func (lc *liarCluster) place(t *testing.T, key string, classid int, data []byte) int64 {
	t.Helper()
	ctx := t.Context()
	fid, err := lc.st.CreateTempFile(ctx, store.TempFile{DomainID: lc.domain, Key: key, ClassID: classid, DevIDs: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	put(t, lc.liars[0].base()+model.FidPath(1, fid), data)
	if _, err := lc.st.CommitFile(ctx, store.Commit{Fid: fid, DomainID: lc.domain, Key: key, ClassID: classid,
		Length: int64(len(data)), DevIDs: []int{1}, Replicate: true}); err != nil {
		t.Fatal(err)
	}
	return fid
}

// failedOnce waits until replication of fid failed at least once (its row
// rescheduled with a failure) or the fid reached two devices.
func (lc *liarCluster) failedOnce(t *testing.T, fid int64) {
	t.Helper()
	waitFor(t, 30*time.Second, "a replication attempt to end", func() bool {
		it, err := lc.st.QueueItem(t.Context(), store.QueueReplicate, fid)
		if err == nil && it.FailCount > 0 {
			return true
		}
		on, err := lc.st.FileOn(t.Context(), fid)
		return err == nil && len(on) >= 2
	})
}

// fsck runs a full fsck and waits until it and the replication it queued
// are over.
func (lc *liarCluster) fsck(t *testing.T) {
	t.Helper()
	lc.c.want("fsck_start", "OK ")
	ctx := t.Context()
	waitFor(t, 60*time.Second, "fsck to finish", func() bool {
		_, err := lc.st.ServerSetting(ctx, "fsck_host")
		return errors.Is(err, store.ErrNotFound) && queueLen(t, lc.st, store.QueueFsck) == 0
	})
}

func queueLen(t testing.TB, st *store.Store, q store.Queue) int64 {
	t.Helper()
	n, err := st.QueueLength(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checksumOf is fid's recorded checksum, nil when none.
func checksumOf(t testing.TB, st *store.Store, fid int64) *store.Checksum {
	t.Helper()
	c, err := st.Checksum(t.Context(), fid)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

func fileOnDevs(t testing.TB, st *store.Store, fid int64) []int {
	t.Helper()
	on, err := st.FileOn(t.Context(), fid)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(on)
	return on
}

// The reported loss: an MD5 class, no client checksum, and the source
// returns wrong bytes once while the file is replicated. The copy is
// refused (the second read of the source disagrees), made again from a
// good read, and fsck afterwards finds two good copies and records their
// checksum; before, the bad bytes' MD5 became the file's checksum and
// fsck replaced the good copy with the bad one.
func TestLyingNode_WrongBytesOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		lc := startLiars(t, dsn, 2, false)
		cls := lc.class(t, "md5", "MD5")
		data := bytes.Repeat([]byte("the bytes the client uploaded\n"), 100)
		want := md5.Sum(data)
		lc.liars[0].set(func(l *liar) { l.corrupt = 1 })
		fid := lc.place(t, "once", cls, data)
		waitFor(t, 30*time.Second, "replication", func() bool {
			return len(fileOnDevs(t, lc.st, fid)) == 2 && queueLen(t, lc.st, store.QueueReplicate) == 0
		})
		check := func(when string) {
			t.Helper()
			if c := checksumOf(t, lc.st, fid); c != nil && !bytes.Equal(c.Sum, want[:]) {
				t.Errorf("%s: checksum %x; want none or the upload's %x", when, c.Sum, want)
			}
			if on := fileOnDevs(t, lc.st, fid); !slices.Equal(on, []int{1, 2}) {
				t.Errorf("%s: file_on %v; want [1 2]", when, on)
			}
			for i, l := range lc.liars {
				if got := l.onDisk(i+1, fid); !bytes.Equal(got, data) {
					t.Errorf("%s: dev%d holds %d bytes, not the upload", when, i+1, len(got))
				}
			}
		}
		check("after replication")
		if n := lc.liars[0].gets.Load(); n < 2 {
			t.Errorf("the source served %d blob GETs; want the corrupted one and more", n)
		}
		lc.fsck(t)
		check("after fsck")
		if c := checksumOf(t, lc.st, fid); c == nil {
			t.Errorf("after fsck: no checksum; want the two agreeing copies' %x", want)
		}
	})
}

// A source whose every GET is wrong (its disk is right: its management
// port digests the true bytes): no copy is ever recorded, nothing is left
// on the destination, the good copy stays, and fsck records the checksum
// the node's own two digests agree on.
func TestLyingNode_WrongBytesAlways(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		lc := startLiars(t, dsn, 2, true)
		cls := lc.class(t, "md5", "MD5")
		data := bytes.Repeat([]byte("always misread\n"), 200)
		want := md5.Sum(data)
		lc.liars[0].set(func(l *liar) { l.corrupt = -1 })
		fid := lc.place(t, "always", cls, data)
		lc.failedOnce(t, fid)
		if on := fileOnDevs(t, lc.st, fid); !slices.Equal(on, []int{1}) {
			t.Errorf("file_on %v; want only the good copy, [1]", on)
		}
		if got := lc.liars[1].onDisk(2, fid); got != nil {
			t.Errorf("dev2 keeps %d bytes of a refused copy", len(got))
		}
		if c := checksumOf(t, lc.st, fid); c != nil {
			t.Errorf("checksum %x recorded from bad reads", c.Sum)
		}
		lc.fsck(t)
		if on := fileOnDevs(t, lc.st, fid); !slices.Contains(on, 1) {
			t.Errorf("after fsck: file_on %v lost the good copy on dev1", on)
		}
		if got := lc.liars[0].onDisk(1, fid); !bytes.Equal(got, data) {
			t.Errorf("after fsck: dev1 no longer holds the upload")
		}
		if c := checksumOf(t, lc.st, fid); c == nil || !bytes.Equal(c.Sum, want[:]) {
			t.Errorf("after fsck: checksum %v; want the upload's %x", c, want)
		}
	})
}

// A destination that acknowledges the PUT and answers HEAD with the right
// length but holds nothing: its copy is never recorded, on a class with no
// checksum.
func TestLyingNode_HeadLies(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		lc := startLiars(t, dsn, 2, false)
		cls := lc.class(t, "plain", "")
		data := []byte("only dev1 really holds me")
		lc.liars[1].set(func(l *liar) { l.swallow = true })
		fid := lc.place(t, "head", cls, data)
		lc.failedOnce(t, fid)
		if lc.liars[1].puts.Load() == 0 {
			t.Fatal("no copy was attempted to the lying node")
		}
		if on := fileOnDevs(t, lc.st, fid); !slices.Equal(on, []int{1}) {
			t.Errorf("file_on %v; want [1]: dev2 holds nothing", on)
		}
	})
}

// A destination that stores half of what it was sent and answers HEAD with
// the full length: the copy is refused and deleted.
func TestLyingNode_Truncates(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		lc := startLiars(t, dsn, 2, true)
		cls := lc.class(t, "plain", "")
		data := bytes.Repeat([]byte("half of me is lost\n"), 50)
		lc.liars[1].set(func(l *liar) { l.truncate = true })
		fid := lc.place(t, "short", cls, data)
		lc.failedOnce(t, fid)
		if lc.liars[1].puts.Load() == 0 {
			t.Fatal("no copy was attempted to the lying node")
		}
		if on := fileOnDevs(t, lc.st, fid); !slices.Equal(on, []int{1}) {
			t.Errorf("file_on %v; want [1]: dev2 holds a truncated copy", on)
		}
		if got := lc.liars[1].onDisk(2, fid); got != nil {
			t.Errorf("dev2 keeps %d bytes of a refused copy", len(got))
		}
	})
}
