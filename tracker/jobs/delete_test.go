package jobs_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

func TestDelete_RemovesEveryCopy(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	c.addNode(3)
	cls := c.class("c", 2, store.HashNone)
	fid := c.putFile("k", cls, []byte("delete me"), 1, 2)
	// dev3 is in file_on without a blob: its DELETE answers 404, which
	// counts as done.
	if _, err := c.st.AddFileOn(t.Context(), fid, 3); err != nil {
		t.Fatal(err)
	}
	if err := c.st.Finish(t.Context(), store.QueueReplicate, fid); err != nil {
		t.Fatal(err)
	}
	if err := c.st.DeleteFile(t.Context(), fid); err != nil {
		t.Fatal(err)
	}
	start(t, c.st, fastOptions(t))

	waitFor(t, 10*time.Second, "the delete queue to empty", func() bool { return !inQueue(t, c.st, store.QueueDelete, fid) })
	for _, d := range []int{1, 2, 3} {
		if c.hasBlob(d, fid) {
			t.Errorf("dev%d still holds fid %d", d, fid)
		}
	}
	if on := fileOn(t, c.st, fid); len(on) != 0 {
		t.Errorf("file_on = %v; want none", on)
	}
	if _, err := c.st.Checksum(t.Context(), fid); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("checksum after delete: err = %v; want ErrNotFound", err)
	}
}

// A copy on a device whose node is down is put off, the others go.
func TestDelete_UnreachableNodeReschedules(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	n2 := c.addNode(2)
	cls := c.class("c", 2, store.HashNone)
	fid := c.putFile("k", cls, []byte("half"), 1, 2)
	if err := c.st.Finish(t.Context(), store.QueueReplicate, fid); err != nil {
		t.Fatal(err)
	}
	n2.srv.Close()
	if err := c.st.DeleteFile(t.Context(), fid); err != nil {
		t.Fatal(err)
	}
	start(t, c.st, fastOptions(t))
	waitFor(t, 10*time.Second, "the reachable copy to go", func() bool {
		on := fileOn(t, c.st, fid)
		return len(on) == 1 && on[0] == 2
	})
	waitFor(t, 5*time.Second, "a reschedule", func() bool {
		it, err := c.st.QueueItem(t.Context(), store.QueueDelete, fid)
		return err == nil && it.FailCount > 0
	})
	it, _ := c.st.QueueItem(t.Context(), store.QueueDelete, fid)
	now, _ := c.st.Now(t.Context())
	if d := it.NextTry.Sub(now); d < 9*time.Minute {
		t.Errorf("next try in %v; want at least the original's 10 minutes", d)
	}
	if c.hasBlob(1, fid) {
		t.Errorf("dev1 still holds fid %d", fid)
	}
}
