package jobs_test

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/jobs"
)

func TestReaper_ExpiredTempFiles(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("c", 2, store.HashNone)
	ctx := t.Context()
	// An upload that never reached create_close: a blob on dev1, dev2
	// offered but unused.
	fid, err := c.st.CreateTempFile(ctx, store.TempFile{DomainID: c.dmid, Key: "abandoned", ClassID: cls, DevIDs: []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	c.upload(1, fid, []byte("half an upload"))
	// Age it past the TTL; the database clock counts whole seconds.
	time.Sleep(2100 * time.Millisecond)
	// A fresh tempfile must survive.
	young, err := c.st.CreateTempFile(ctx, store.TempFile{DomainID: c.dmid, Key: "young", ClassID: cls, DevIDs: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	o := fastOptions(t)
	o.TempFileTTL = 2 * time.Second
	start(t, c.st, o)

	waitFor(t, 10*time.Second, "the tempfile to go", func() bool {
		_, err := c.st.TempFile(ctx, fid)
		return errors.Is(err, store.ErrNotFound)
	})
	waitFor(t, 10*time.Second, "the blob to be deleted", func() bool {
		return !c.hasBlob(1, fid) && !inQueue(t, c.st, store.QueueDelete, fid)
	})
	if on := fileOn(t, c.st, fid); len(on) != 0 {
		t.Errorf("file_on = %v; want none", on)
	}
	if _, err := c.st.TempFile(ctx, young); err != nil {
		t.Errorf("young tempfile: %v; want it kept", err)
	}
}

func TestReaper_DeadDevice(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	c.addNode(3)
	cls := c.class("c", 2, store.HashNone)
	fid := c.putFile("k", cls, []byte("survivor"), 1, 2)
	if err := c.st.Finish(t.Context(), store.QueueReplicate, fid); err != nil {
		t.Fatal(err)
	}
	if err := c.st.SetDeviceState(t.Context(), 1, store.DeviceDead); err != nil {
		t.Fatal(err)
	}
	start(t, c.st, fastOptions(t))
	waitFor(t, 10*time.Second, "a new copy off the dead device", func() bool {
		on := fileOn(t, c.st, fid)
		return slices.Equal(on, []int{2, 3}) && !inQueue(t, c.st, store.QueueReplicate, fid)
	})
	if !c.hasBlob(3, fid) {
		t.Errorf("dev3 has no blob for fid %d", fid)
	}
	f, err := c.st.File(t.Context(), fid)
	if err != nil {
		t.Fatal(err)
	}
	if f.DevCount != 2 {
		t.Errorf("devcount = %d; want 2", f.DevCount)
	}
}

// queue_rate_for_reaper and queue_size_for_reaper bound how many fids of a
// dead device the reaper queues, as the original's reaper_inject_limit:
// with the replicate queue allowed 3 entries (and nothing draining it),
// 3 of 5 fids are queued and forgotten on the dead device, 2 wait.
func TestReaper_QueueSizeForReaper(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("c", 2, store.HashNone)
	ctx := t.Context()
	var fids []int64
	for i := range 5 {
		fid := c.putFile("k"+string(rune('a'+i)), cls, []byte("x"), 1, 2)
		if err := c.st.Finish(ctx, store.QueueReplicate, fid); err != nil {
			t.Fatal(err)
		}
		fids = append(fids, fid)
	}
	for k, v := range map[string]string{"queue_size_for_reaper": "3", "queue_rate_for_reaper": "2"} {
		if err := c.st.SetServerSetting(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.st.SetDeviceState(ctx, 1, store.DeviceDead); err != nil {
		t.Fatal(err)
	}
	o := fastOptions(t)
	o.ReplicateWorkers = 0 // nothing drains the replicate queue
	start(t, c.st, o)
	waitFor(t, 10*time.Second, "the reaper to fill the replicate queue to 3", func() bool {
		return queueLen(t, c.st, store.QueueReplicate) == 3
	})
	time.Sleep(10 * o.ReaperInterval) // more passes must not add more
	if n := queueLen(t, c.st, store.QueueReplicate); n != 3 {
		t.Errorf("replicate queue = %d; want queue_size_for_reaper 3", n)
	}
	still := 0
	for _, fid := range fids {
		if slices.Contains(fileOn(t, c.st, fid), 1) {
			still++
		}
	}
	if still != 2 {
		t.Errorf("%d fids still on the dead device; want 2 waiting for room in the queue", still)
	}
}

// reaper_jobs = 0 (NoReaper): this tracker reaps nothing, and !jobs says
// so.
func TestReaper_NoReaper(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("c", 2, store.HashNone)
	fid := c.putFile("k", cls, []byte("x"), 1, 2)
	if err := c.st.Finish(t.Context(), store.QueueReplicate, fid); err != nil {
		t.Fatal(err)
	}
	if err := c.st.SetDeviceState(t.Context(), 1, store.DeviceDead); err != nil {
		t.Fatal(err)
	}
	o := fastOptions(t)
	o.NoReaper = true
	m := start(t, c.st, o)
	time.Sleep(20 * o.ReaperInterval)
	if on := fileOn(t, c.st, fid); !slices.Contains(on, 1) {
		t.Errorf("file_on = %v; the dead device was reaped with no reaper", on)
	}
	for _, s := range m.Stats() {
		if s.Name == "reaper" && (s.Wanted != 0 || s.Running != 0) {
			t.Errorf("reaper stats %+v; want none wanted or running", s)
		}
	}
}

// One pass reaps every expired tempfile, not one read of 50 (the
// original's old_tempfiles LIMIT, which capped the reaper at 10 rows every
// 5 s whatever the backlog): a flood's leftovers go in the first pass.
func TestReaper_OnePassReapsTheBacklog(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	cls := c.class("c", 1, store.HashNone)
	ctx := t.Context()
	const n = 700
	for i := range n {
		if _, err := c.st.CreateTempFile(ctx, store.TempFile{DomainID: c.dmid, Key: "flood" + strconv.Itoa(i), ClassID: cls, DevIDs: []int{1}}); err != nil {
			t.Fatal(err)
		}
	}
	// Age them past the TTL; the database clock counts whole seconds.
	time.Sleep(2100 * time.Millisecond)
	o := fastOptions(t)
	o.TempFileTTL = time.Second
	o.ReaperInterval = time.Hour // the first pass only
	o.DeleteWorkers = 0          // keep the queued deletions to count them
	started := time.Now()
	m := start(t, c.st, o)
	waitFor(t, time.Minute, "the reaper's first pass", func() bool {
		for _, s := range m.Stats() {
			if s.Name == jobs.JobReaper && s.Processed > 0 {
				return true
			}
		}
		return false
	})
	t.Logf("first pass done %v after start", time.Since(started))
	left, err := c.st.ExpiredTempFiles(ctx, 0, n+1)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d of %d expired tempfiles left after the first pass; want 0", len(left), n)
	}
	if q := queueLen(t, c.st, store.QueueDelete); q != n {
		t.Errorf("delete queue = %d; want the %d reaped fids", q, n)
	}
}

// A pass that has used its time budget with expired tempfiles left yields
// (to the dead devices) and the next pass starts at once, not a
// ReaperInterval later: with a budget of 0, each pass reads one batch,
// and three batches go within one interval of an hour.
func TestReaper_BacklogPassesFollowAtOnce(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	cls := c.class("c", 1, store.HashNone)
	ctx := t.Context()
	const n = 120 // two full batches of 50 and 20
	for i := range n {
		if _, err := c.st.CreateTempFile(ctx, store.TempFile{DomainID: c.dmid, Key: "flood" + strconv.Itoa(i), ClassID: cls, DevIDs: []int{1}}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2100 * time.Millisecond)
	o := fastOptions(t)
	o.TempFileTTL = time.Second
	o.ReaperInterval = time.Hour
	m := jobs.New(c.st, o)
	jobs.SetTempfileBudget(m, 0)
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	waitFor(t, time.Minute, "every expired tempfile reaped", func() bool {
		left, err := c.st.ExpiredTempFiles(ctx, 0, n+1)
		return err == nil && len(left) == 0
	})
	// A pass is counted once it has ended, a moment after its last row
	// went: wait for the count, not only for the rows.
	passes := func() int64 {
		for _, s := range m.Stats() {
			if s.Name == jobs.JobReaper {
				return int64(s.Processed)
			}
		}
		return 0
	}
	waitFor(t, 10*time.Second, "three reaper passes counted, one per batch", func() bool { return passes() >= 3 })
}
