package tracker_test

import (
	"bytes"
	"testing"
	"time"
)

// Point 11 of issue 9: a Union of runnable policies is accepted and run:
// a file ends with what its most demanding member wants.
func TestReplPolicy_UnionReplicates(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		e := startE2E(t, dsn, 1, 3, nil)
		c := e.trackers[0].dial()
		c.want("create_class domain=e2e&class=u&mindevcount=1&replpolicy="+esc("Union(MultipleHosts(2), MultipleDevices(3))"),
			"OK class=u&mindevcount=1&domain=e2e")
		body := []byte("on three devices")
		if _, err := e.cl.StoreFile(t.Context(), "", "u", "u", bytes.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
		fi, err := e.cl.FileInfo(t.Context(), "", "u")
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "three copies", func() bool { return len(e.blobs(fi.FID)) == 3 })
		waitFor(t, 10*time.Second, "devcount 3", func() bool {
			fi, err := e.cl.FileInfo(t.Context(), "", "u")
			return err == nil && fi.DevCount == 3
		})
	})
}
