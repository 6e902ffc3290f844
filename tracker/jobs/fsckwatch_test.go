package jobs_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// headFails makes every HEAD of a blob fail as a connection would.
type headFails struct{ base http.RoundTripper }

func (h headFails) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodHead && strings.HasSuffix(r.URL.Path, ".fid") {
		return nil, errors.New("connection reset (test)")
	}
	return h.base.RoundTrip(r)
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// fsckOneCopy is a cluster with one node holding device 1 and one file
// on it, queued for fsck.
func fsckOneCopy(t *testing.T) (*cluster, *node) {
	t.Helper()
	c := newCluster(t)
	n := c.addNode(1)
	cls := c.class("one", 1, store.HashNone)
	fid := c.putFile("k", cls, []byte("x"), 1)
	ctx := t.Context()
	if err := c.st.Finish(ctx, store.QueueReplicate, fid); err != nil {
		t.Fatal(err)
	}
	if err := c.st.Enqueue(ctx, store.QueueFsck, store.QueueEntry{Fid: fid}); err != nil {
		t.Fatal(err)
	}
	return c, n
}

// waitConnectivityLine waits until buf has the original's line for
// device 1 on n.
func waitConnectivityLine(t *testing.T, buf *syncBuf, n *node) {
	t.Helper()
	want := fmt.Sprintf("Connectivity problem reaching device 1 on host %s", n.host.IP)
	defer func() {
		if t.Failed() {
			t.Log(buf.String())
		}
	}()
	waitFor(t, 20*time.Second, "the connectivity line", func() bool { return strings.Contains(buf.String(), want) })
}

// Issue 9, point 3: fsck logs the original's "Connectivity problem reaching
// device N on host IP" (scripts wait for it on !watch) when a copy cannot
// be checked.
func TestFsck_LogsConnectivityProblemAsOriginal(t *testing.T) {
	c, n := fsckOneCopy(t)
	var buf syncBuf
	o := fastOptions(t)
	o.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	o.HTTPClient = &http.Client{Transport: headFails{base: http.DefaultTransport.(*http.Transport).Clone()}}
	start(t, c.st, o)
	waitConnectivityLine(t, &buf, n)
	if !strings.Contains(buf.String(), "job=fsck") {
		t.Errorf("the line is not the fsck job's: %s", buf.String())
	}
}

// The original's fsck tries every copy whatever the monitor last saw and
// logs the connectivity line when it cannot reach one; ours skips a copy
// the monitor saw unreachable, and must still say so, or a script waiting
// on !watch for the line waits for ever once the monitor was quicker than
// fsck (as recorded in ../testdata/original-2.73-jobs.txt).
func TestFsck_LogsConnectivityProblemForADeviceSeenUnreachable(t *testing.T) {
	c, n := fsckOneCopy(t)
	// Down before the workers start: fsck waits for the monitor's first
	// look, which sees the device unreachable.
	n.srv.Close()
	var buf syncBuf
	o := fastOptions(t)
	o.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	start(t, c.st, o)
	waitConnectivityLine(t, &buf, n)
}
