package tracker_test

import (
	"bytes"
	"testing"
	"time"
)

// Point 9 of issue 9: a class with mindevcount=1 whose policy asks for
// more copies is replicated at upload (create_close queues it), not left at
// one copy until an fsck. No fsck runs here.
func TestCreateClose_ReplicatesWhenThePolicyNeedsIt(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		e := startE2E(t, dsn, 1, 3, nil)
		c := e.trackers[0].dial()
		for _, cls := range []string{"hosts2&replpolicy=MultipleHosts%282%29", "devs3&replpolicy=MultipleDevices%283%29"} {
			parseOK(t, c.do("create_class domain=e2e&mindevcount=1&class="+cls))
		}
		for _, tc := range []struct {
			class string
			want  int
		}{{"hosts2", 2}, {"devs3", 3}} {
			body := []byte("copies for " + tc.class)
			if _, err := e.cl.StoreFile(t.Context(), "", tc.class, tc.class, bytes.NewReader(body), int64(len(body))); err != nil {
				t.Fatal(err)
			}
			fi, err := e.cl.FileInfo(t.Context(), "", tc.class)
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, 20*time.Second, tc.class+" replicated", func() bool { return len(e.blobs(fi.FID)) == tc.want })
		}
	})
}
