package jobs_test

import (
	"bytes"
	"crypto/md5"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Issue 21, point 1, on fsck's side: no single read decides. These tests
// put a network that lies a given number of times between the workers and
// honest storage nodes (the tracker's tests put lying nodes behind every
// backend).

// lyingNet lies about the first few blob requests of one method to one
// path: a GET's body gets its first byte flipped, a HEAD answers 404.
type lyingNet struct {
	base   http.RoundTripper
	method string
	path   string // suffix of the URL path lied about

	mu    sync.Mutex
	left  int // lies still to tell
	asked int // requests of method to path seen
}

func newLyingNet(method, path string, times int) *lyingNet {
	return &lyingNet{base: http.DefaultTransport.(*http.Transport).Clone(), method: method, path: path, left: times}
}

func (l *lyingNet) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != l.method || !strings.HasSuffix(r.URL.Path, l.path) {
		return l.base.RoundTrip(r)
	}
	l.mu.Lock()
	l.asked++
	lie := l.left > 0
	if lie {
		l.left--
	}
	l.mu.Unlock()
	resp, err := l.base.RoundTrip(r)
	if err != nil || !lie {
		return resp, err
	}
	if r.Method == http.MethodHead {
		resp.Body.Close()
		return &http.Response{StatusCode: http.StatusNotFound, Status: "404 Not Found", Header: http.Header{},
			Body: http.NoBody, ContentLength: 0, Request: r, Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor}, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		body[0] ^= 0xff
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

func (l *lyingNet) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.asked
}

// runFsck starts a Manager on c whose storage-node client goes through ln, runs a full fsck and waits until
// it is over and nothing is left to replicate.
func runFsck(t *testing.T, c *cluster, ln *lyingNet) {
	t.Helper()
	ctx := t.Context()
	opts := fastOptions(t)
	opts.StreamPort = 0 // every digest is a GET, through the lying network
	opts.HTTPClient = &http.Client{Transport: ln}
	startFsck(t, c.st, opts.Hostname)
	start(t, c.st, opts)
	waitFor(t, 20*time.Second, "fsck to finish", func() bool {
		_, err := c.st.ServerSetting(ctx, "fsck_host")
		return errors.Is(err, store.ErrNotFound) && queueLen(t, c.st, store.QueueFsck) == 0 &&
			queueLen(t, c.st, store.QueueReplicate) == 0
	})
}

func eventsOf(t *testing.T, st *store.Store, fid int64) []string {
	t.Helper()
	evs, err := st.FsckEvents(t.Context(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.Fid != fid {
			continue
		}
		code := e.Code
		if e.DevID != 0 {
			code += "@" + strconv.Itoa(e.DevID)
		}
		out = append(out, code)
	}
	return out
}

// One wrong read of a good copy does not make fsck forget it: the copy is
// digested again before it is judged, and it matches.
func TestFsck_OneBadDigestForgetsNothing(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("hashed", 2, store.HashMD5)
	data := []byte("a good copy, read wrongly once")
	fid := c.putPlaced("k", cls, data, 1, 2)
	ln := newLyingNet(http.MethodGet, "/"+fidFile(fid), 1)
	runFsck(t, c, ln)
	if ln.count() < 3 {
		t.Fatalf("fsck read the copies %d times; want both and the misread one again", ln.count())
	}
	if on := fileOn(t, c.st, fid); !slices.Equal(sorted(on), []int{1, 2}) {
		t.Errorf("file_on %v; want [1 2]", on)
	}
	if codes := eventsOf(t, c.st, fid); len(codes) != 0 {
		t.Errorf("fsck events %v; want none", codes)
	}
}

// A HEAD that says "missing" twice in a row (fsck's quick look, then its
// first careful one) is asked a third time before the copy is judged.
func TestFsck_MissingIsAskedTwice(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("two", 2, store.HashNone)
	fid := c.putPlaced("k", cls, []byte("here all along"), 1, 2)
	ln := newLyingNet(http.MethodHead, "/"+fidFile(fid), 2)
	runFsck(t, c, ln)
	if on := fileOn(t, c.st, fid); !slices.Equal(sorted(on), []int{1, 2}) {
		t.Errorf("file_on %v; want [1 2]", on)
	}
	if codes := eventsOf(t, c.st, fid); len(codes) != 0 {
		t.Errorf("fsck events %v; want none", codes)
	}
}

// With no good copy anywhere, fsck reports the fid (GONE) and keeps the
// copies of devices that are still there: they may be the last bytes of
// the file (a device mounted again, a node that lied), and only an
// operator can tell.
func TestFsck_NoGoodCopyKeepsMappings(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("two", 2, store.HashNone)
	fid := c.putPlaced("k", cls, []byte("nowhere to be found"), 1, 2)
	for _, d := range []int{1, 2} {
		if err := os.Remove(c.blobPath(d, fid)); err != nil {
			t.Fatal(err)
		}
	}
	runFsck(t, c, newLyingNet("", "", 0))
	if on := fileOn(t, c.st, fid); !slices.Equal(sorted(on), []int{1, 2}) {
		t.Errorf("file_on %v; want [1 2] kept", on)
	}
	codes := eventsOf(t, c.st, fid)
	if !slices.Contains(codes, "GONE") || !slices.Contains(codes, "MISS@1") || !slices.Contains(codes, "MISS@2") {
		t.Errorf("fsck events %v; want MISS@1, MISS@2 and GONE", codes)
	}
}

// A hashed class's only copy with no checksum recorded: fsck records one
// only when two digests of it agree, so a single misread records nothing.
func TestFsck_OnlyCopyChecksumNeedsTwoReads(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("hashed", 1, store.HashMD5)
	data := []byte("the only copy")
	fid := c.putPlaced("k", cls, data, 1)
	if err := c.st.DeleteChecksum(t.Context(), fid); err != nil {
		t.Fatal(err)
	}
	runFsck(t, c, newLyingNet(http.MethodGet, "/"+fidFile(fid), 1))
	if sum, err := c.st.Checksum(t.Context(), fid); err == nil {
		if want := md5.Sum(data); !bytes.Equal(sum.Sum, want[:]) {
			t.Errorf("checksum %x recorded from a misread; want none or %x", sum.Sum, want)
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
}

// fidFile is the file name of fid's blob (as in its URL path).
func fidFile(fid int64) string {
	s := strconv.FormatInt(fid, 10)
	for len(s) < 10 {
		s = "0" + s
	}
	return s + ".fid"
}

func sorted(s []int) []int {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
