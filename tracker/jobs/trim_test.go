package jobs_test

import (
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Issue 9, point 7: a file with more copies than its class wants (here a
// mindevcount lowered to 2 after it was on 3 hosts) loses the surplus when
// it is replicated, as in the original; the copies that stay satisfy the
// policy and still hold the blob.
func TestReplicate_TrimsSurplusCopies(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	c.addNode(3)
	cls := c.class("two", 2, store.HashNone)
	fid := c.putFile("k", cls, []byte("three copies"), 1, 2, 3) // queued for replication
	start(t, c.st, fastOptions(t))
	gone := func() (n int) {
		for _, d := range []int{1, 2, 3} {
			if !c.hasBlob(d, fid) {
				n++
			}
		}
		return n
	}
	// The trim forgets the copy first and deletes its blob after, so both
	// are waited for: between the two, file_on already says 2.
	waitFor(t, 20*time.Second, "the surplus copy trimmed", func() bool { return len(fileOn(t, c.st, fid)) == 2 && gone() > 0 })
	on := fileOn(t, c.st, fid)
	for _, d := range []int{1, 2, 3} {
		if !c.hasBlob(d, fid) {
			for _, o := range on {
				if o == d {
					t.Errorf("dev%d listed in file_on but its blob is gone", d)
				}
			}
		}
	}
	if n := gone(); n != 1 {
		t.Errorf("%d blobs deleted; want 1", n)
	}
	waitFor(t, 10*time.Second, "the replicate row done", func() bool { return queueLen(t, c.st, store.QueueReplicate) == 0 })
	if f, err := c.st.File(t.Context(), fid); err != nil || f.DevCount != 2 {
		t.Errorf("devcount = %d, %v; want 2", f.DevCount, err)
	}
}

// A file on exactly as many devices as it needs is never trimmed.
func TestReplicate_NoTrimWhenHappy(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("two", 2, store.HashNone)
	fid := c.putFile("k", cls, []byte("two copies"), 1, 2)
	start(t, c.st, fastOptions(t))
	waitFor(t, 10*time.Second, "the replicate row done", func() bool { return queueLen(t, c.st, store.QueueReplicate) == 0 })
	if on := fileOn(t, c.st, fid); len(on) != 2 || !c.hasBlob(1, fid) || !c.hasBlob(2, fid) {
		t.Errorf("file on %v; want both copies kept", on)
	}
}
