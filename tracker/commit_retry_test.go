package tracker_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker"
)

// ackLost is a real Store's Backend whose next CommitFile calls apply and then report
// store.ErrUnknownOutcome, as a COMMIT whose reply the network dropped.
type ackLost struct {
	store.Backend
	n atomic.Int32
}

func (s *ackLost) CommitFile(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	res, err := s.Backend.CommitFile(ctx, c)
	if err == nil && s.n.Add(-1) >= 0 {
		return store.CommitResult{}, fmt.Errorf("commit fid %d: %w", c.Fid, store.ErrUnknownOutcome)
	}
	return res, err
}

// uploadOnce runs create_open and the PUT, returning the create_close line.
func uploadOnce(t *testing.T, cl *cluster, c *lineConn, key string, body []byte) (string, int64) {
	t.Helper()
	r := parseOK(t, c.do("create_open domain=d&key="+key))
	fid, _ := strconv.ParseInt(r.Get("fid"), 10, 64)
	put(t, r.Get("path"), body)
	return fmt.Sprintf("create_close domain=d&key=%s&fid=%d&devid=%s&path=%s&size=%d",
		key, fid, r.Get("devid"), tracker.Escape(r.Get("path")), len(body)), fid
}

// A client that retries create_close because it lost the reply of one that
// applied learns that its upload succeeded; a close that does not match
// the committed file still gets no_temp_file.
func TestCreateClose_RetryAfterAppliedCommit(t *testing.T) {
	cl := startCluster(t, testConfig(), 1)
	c := cl.dial()
	c.want("create_domain domain=d", "OK domain=d")
	line, fid := uploadOnce(t, cl, c, "k", []byte("payload"))
	c.want(line, "OK ")
	c.want(line, "OK ")
	c.want(line[:len(line)-1]+"9", "ERR no_temp_file No+tempfile+or+file+already+closed")
	other := fmt.Sprintf("create_close domain=d&key=other&fid=%d&devid=1&path=%s", fid, tracker.Escape(cl.devURL(1, fid)))
	c.want(other, "ERR no_temp_file No+tempfile+or+file+already+closed")
	f, err := cl.st.FileByKey(t.Context(), 1, "k")
	if err != nil || f.Fid != fid || f.Length != 7 {
		t.Errorf("file k = %+v, %v; want fid %d of 7 bytes", f, err, fid)
	}
}

// A commit whose acknowledgement the store lost is retried by the tracker,
// and the client gets OK for the commit that applied.
func TestCreateClose_AmbiguousCommitRetried(t *testing.T) {
	st := &ackLost{Backend: openStore(t, testDSN(t))}
	tt := startTracker(t, testConfig(), store.New(st, &store.Options{OpTimeout: -1}), nil)
	cl := &cluster{testTracker: tt, nodes: map[int]*node{}}
	c := tt.dial()
	n := startNode(t, "127.0.0.2", 1)
	cl.nodes[1] = n
	c.want("create_host host=h1&ip="+n.ip+"&port="+n.port+"&status=alive", "OK hostid=1&hostname=h1")
	c.want("create_device devid=1&hostid=1", "OK ")
	c.want("create_domain domain=d", "OK domain=d")
	for _, lost := range []int32{1, 2} {
		key := "k" + strconv.Itoa(int(lost))
		line, fid := uploadOnce(t, cl, c, key, []byte("payload"))
		st.n.Store(lost)
		c.want(line, "OK ")
		if left := st.n.Load(); left > 0 {
			t.Errorf("%d lost acknowledgements left unused; want the tracker to have retried through all", left)
		}
		f, err := st.FileByKey(t.Context(), 1, key)
		if err != nil || f.Fid != fid {
			t.Errorf("file %s = %+v, %v; want fid %d", key, f, err, fid)
		}
	}
}
