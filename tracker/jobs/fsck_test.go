package jobs_test

import (
	"bytes"
	"database/sql"
	"errors"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// rawDB reaches the SQLite database behind the store, to corrupt rows the
// way a hand edit would; the contract itself never lets devcount drift.
func rawDB(t *testing.T, st *store.Store) *sql.DB {
	t.Helper()
	db, ok := sqlaccess.DB(st)
	if !ok {
		t.Fatalf("%T gives no raw database access", st)
	}
	return db
}

// startFsck sets the settings Query.pm's fsck_start writes.
func startFsck(t *testing.T, st *store.Store, host string) {
	t.Helper()
	ctx := t.Context()
	maxFid, err := st.MaxFid(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"fsck_highest_fid_checked": "0",
		"fsck_fid_at_end":          strconv.FormatInt(maxFid, 10),
		"fsck_start_time":          "1",
		"fsck_host":                host,
	} {
		if err := st.SetServerSetting(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFsck_FindsAndFixes(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	c.addNode(3)
	ctx := t.Context()
	two := c.class("two", 2, store.HashNone)
	hashed := c.class("hashed", 1, store.HashMD5)

	badCount := c.putFile("badcount", two, []byte("count me"), 1, 2)
	missing := c.putFile("missing", two, []byte("lost a copy"), 1, 2)
	badSum := c.putFile("badsum", hashed, []byte("checksummed"), 1)
	noPaths := c.putFile("nopaths", two, []byte("forgotten"), 1, 2)
	short := c.putFile("short", two, []byte("truncated later"), 1, 3)
	lonely := c.putFile("lonely", two, []byte("one copy"), 3)
	healthy := c.putFile("healthy", two, []byte("fine"), 2, 3)
	for _, fid := range []int64{badCount, missing, badSum, noPaths, short, lonely, healthy} {
		if err := c.st.Finish(ctx, store.QueueReplicate, fid); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rawDB(t, c.st).ExecContext(ctx, "UPDATE file SET devcount = 5 WHERE fid = ?", badCount); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(c.blobPath(2, missing)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.blobPath(1, badSum), []byte("CHECKSUMMED"), 0o644); err != nil {
		t.Fatal(err)
	}
	// file_on forgets both copies of noPaths; the blob on dev2 is removed,
	// the one on dev1 stays for fsck's search to find.
	for _, d := range []int{1, 2} {
		if _, err := c.st.RemoveFileOn(ctx, noPaths, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(c.blobPath(2, noPaths)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.blobPath(3, short), []byte("trunc"), 0o644); err != nil {
		t.Fatal(err)
	}

	o := fastOptions(t)
	startFsck(t, c.st, o.Hostname)
	start(t, c.st, o)

	waitFor(t, 20*time.Second, "fsck to finish", func() bool {
		_, err := c.st.ServerSetting(ctx, "fsck_host")
		return errors.Is(err, store.ErrNotFound) && queueLen(t, c.st, store.QueueFsck) == 0
	})
	if v, err := c.st.ServerSetting(ctx, "fsck_stop_time"); err != nil || v == "" {
		t.Errorf("fsck_stop_time = %q, %v; want set", v, err)
	}
	if v, _ := c.st.ServerSetting(ctx, "fsck_highest_fid_checked"); v != strconv.FormatInt(healthy, 10) {
		t.Errorf("fsck_highest_fid_checked = %q; want %d", v, healthy)
	}

	evs, err := c.st.FsckEvents(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64][]string{}
	for _, e := range evs {
		code := e.Code
		if e.DevID != 0 {
			code += "@" + strconv.Itoa(e.DevID)
		}
		got[e.Fid] = append(got[e.Fid], code)
	}
	want := map[int64][]string{
		badCount: {"BCNT"},
		missing:  {"MISS@2", "REPL"},
		badSum:   {"BSUM"},
		noPaths:  {"NOPA", "SRCH", "FOND", "REPL"},
		short:    {"BLEN@3", "REPL"},
		lonely:   {"POVI", "REPL"},
	}
	for fid, w := range want {
		if !slices.Equal(got[fid], w) {
			t.Errorf("fid %d events %v; want %v", fid, got[fid], w)
		}
	}
	if len(got[healthy]) != 0 {
		t.Errorf("healthy fid %d events %v; want none", healthy, got[healthy])
	}

	f, err := c.st.File(ctx, badCount)
	if err != nil {
		t.Fatal(err)
	}
	if f.DevCount != 2 {
		t.Errorf("devcount of fid %d = %d; want repaired to 2", badCount, f.DevCount)
	}
	// The copies fsck found missing are rebuilt by replication.
	waitFor(t, 10*time.Second, "re-replication", func() bool {
		return len(fileOn(t, c.st, missing)) == 2 && len(fileOn(t, c.st, noPaths)) == 2 &&
			len(fileOn(t, c.st, short)) == 2 && len(fileOn(t, c.st, lonely)) == 2 &&
			queueLen(t, c.st, store.QueueReplicate) == 0
	})
	for _, fid := range []int64{missing, noPaths, short, lonely} {
		for _, d := range fileOn(t, c.st, fid) {
			if !c.hasBlob(d, fid) {
				t.Errorf("fid %d: file_on names dev%d, which has no blob", fid, d)
			}
		}
	}
}

// Two copies, one corrupt: the bad copy is forgotten and rebuilt from the
// good one.
func TestFsck_BadCopyReplaced(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	ctx := t.Context()
	cls := c.class("hashed", 2, store.HashMD5)
	data := []byte("the right bytes")
	fid := c.putFile("k", cls, data, 1, 2)
	if err := c.st.Finish(ctx, store.QueueReplicate, fid); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.blobPath(2, fid), bytes.ToUpper(data), 0o644); err != nil {
		t.Fatal(err)
	}
	o := fastOptions(t)
	startFsck(t, c.st, o.Hostname)
	start(t, c.st, o)
	waitFor(t, 20*time.Second, "the copy to be rebuilt", func() bool {
		_, err := c.st.ServerSetting(ctx, "fsck_host")
		return errors.Is(err, store.ErrNotFound) && queueLen(t, c.st, store.QueueFsck) == 0 &&
			queueLen(t, c.st, store.QueueReplicate) == 0 && len(fileOn(t, c.st, fid)) == 2
	})
	if got := c.blob(2, fid); !bytes.Equal(got, data) {
		t.Errorf("dev2 holds %q; want %q", got, data)
	}
	counts, err := c.st.FsckEventCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts["REPL"] != 1 || counts["BSUM"] != 0 {
		t.Errorf("event counts %v; want one REPL and no BSUM", counts)
	}
}

// With NoJobMaster a tracker named by fsck_host injects nothing, and, as
// in the original (which spawns no fsck child without a job master), its
// fsck workers do not run either: what another tracker queues waits for a
// tracker with a job master. !want 1 job_master starts them.
func TestFsck_NoJobMaster(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	ctx := t.Context()
	cls := c.class("two", 2, store.HashNone)
	a := c.putFile("a", cls, []byte("a"), 1, 2)
	b := c.putFile("b", cls, []byte("b"), 1, 2)
	for _, fid := range []int64{a, b} {
		if err := c.st.Finish(ctx, store.QueueReplicate, fid); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rawDB(t, c.st).ExecContext(ctx, "UPDATE file SET devcount = 9 WHERE fid IN (?, ?)", a, b); err != nil {
		t.Fatal(err)
	}
	o := fastOptions(t)
	o.NoJobMaster = true
	m := start(t, c.st, o)
	// b is queued by hand, as another tracker's job master would.
	if err := c.st.Enqueue(ctx, store.QueueFsck, store.QueueEntry{Fid: b}); err != nil {
		t.Fatal(err)
	}
	// Give fsck workers, were there any, many polls to take b.
	time.Sleep(500 * time.Millisecond)
	if n := queueLen(t, c.st, store.QueueFsck); n != 1 {
		t.Errorf("fsck queue has %d rows; want b left queued", n)
	}
	for _, s := range m.Stats() {
		switch s.Name {
		case "job_master", "fsck", "replicate", "delete":
			if s.Running != 0 || s.Started {
				t.Errorf("%s running %d started %v without a job master; want none", s.Name, s.Running, s.Started)
			}
		}
	}
	// A job master brings the workers up; b is checked. (fsck_host is not
	// this tracker's, so the job master injects nothing of its own.)
	if err := m.SetWant(jobs.JobMaster, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "b to be checked", func() bool { return queueLen(t, c.st, store.QueueFsck) == 0 })
	fa, _ := c.st.File(ctx, a)
	fb, _ := c.st.File(ctx, b)
	if fa.DevCount != 9 || fb.DevCount != 2 {
		t.Errorf("devcount a=%d b=%d; want a untouched (9), b repaired (2)", fa.DevCount, fb.DevCount)
	}
}

// getCounter counts GETs of .fid blobs.
type getCounter struct {
	mu   sync.Mutex
	gets int
}

func (g *getCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".fid") {
		g.mu.Lock()
		g.gets++
		g.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// fsck digests a SHA-1 class's file with SHA-1 on the storage node's
// management port (no GET of the blob), and logs BALG for its MD5 row.
func TestFsck_SHA1OverTheSideChannel(t *testing.T) {
	c := newCluster(t)
	n := c.addNode(1)
	ctx := t.Context()
	cls := c.class("sha", 1, store.HashSHA1)
	fid := c.putFile("md5row", cls, []byte("summed with MD5 at upload"), 1) // an MD5 checksum row
	if err := c.st.Finish(ctx, store.QueueReplicate, fid); err != nil {
		t.Fatal(err)
	}
	o := fastOptions(t)
	o.StreamPort = portOf(t, n.srv.MgmtAddr())
	gc := &getCounter{}
	o.HTTPClient = &http.Client{Transport: gc}
	startFsck(t, c.st, o.Hostname)
	start(t, c.st, o)
	if codes := fsckCodes(t, c.st)[fid]; !slices.Equal(codes, []string{"BALG"}) {
		t.Errorf("events %v; want [BALG]", codes)
	}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gc.gets != 0 {
		t.Errorf("%d GETs of the blob; want the digest from the management port", gc.gets)
	}
}

// fsck_checksum = SHA-1 digests the files of a class without a hash type
// too (Fsck.pm's opt_checksum): copies that disagree, with no checksum
// known, are MSUM; copies that agree log nothing and store nothing.
func TestFsck_ChecksumSettingSHA1(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	ctx := t.Context()
	cls := c.class("plain", 2, store.HashNone)
	body := []byte("two copies, one changed")
	differ := c.putFile("differ", cls, body, 1, 2)
	agree := c.putFile("agree", cls, []byte("two equal copies"), 1, 2)
	for _, fid := range []int64{differ, agree} {
		if err := c.st.Finish(ctx, store.QueueReplicate, fid); err != nil {
			t.Fatal(err)
		}
		if err := c.st.DeleteChecksum(ctx, fid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(c.blobPath(2, differ), bytes.ToUpper(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.st.SetServerSetting(ctx, "fsck_checksum", "SHA-1"); err != nil {
		t.Fatal(err)
	}
	o := fastOptions(t)
	startFsck(t, c.st, o.Hostname)
	start(t, c.st, o)
	got := fsckCodes(t, c.st)
	if !slices.Equal(got[differ], []string{"MSUM"}) || len(got[agree]) != 0 {
		t.Errorf("events %v; want MSUM for fid %d only", got, differ)
	}
	if _, err := c.st.Checksum(ctx, agree); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("checksum of a class without hash type: %v; want none stored", err)
	}
}

// fsckCodes waits for the fsck that startFsck began to finish and returns
// the codes it logged, by fid.
func fsckCodes(t *testing.T, st *store.Store) map[int64][]string {
	t.Helper()
	ctx := t.Context()
	waitFor(t, 20*time.Second, "fsck to finish", func() bool {
		_, err := st.ServerSetting(ctx, "fsck_host")
		return errors.Is(err, store.ErrNotFound) && queueLen(t, st, store.QueueFsck) == 0
	})
	evs, err := st.FsckEvents(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64][]string{}
	for _, e := range evs {
		got[e.Fid] = append(got[e.Fid], e.Code)
	}
	return got
}
