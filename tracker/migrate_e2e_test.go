package tracker_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/client"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/dump"
	"github.com/gomogile/gomogile/store/migrate"
	"github.com/gomogile/gomogile/tracker"
)

// An installation made by real uploads — replicated, fsck run and logged,
// a rebalance queued, SHA-1 checksums — moves sqlite → postgres → mysql →
// sqlite with byte-identical canonical dumps at every step, and a tracker
// on each target serves every file and hands out fids above the old ones.
func TestE2E_MoveBetweenBackends(t *testing.T) {
	ctx := t.Context()
	dsns := []string{testDSN(t), testdb.Postgres(t), testdb.MySQL(t), "sqlite:///" + filepath.Join(t.TempDir(), "last.db")}
	if dsns[0] == dsns[3] || !bytes.HasPrefix([]byte(dsns[0]), []byte("sqlite:")) {
		t.Skip("starts from SQLite (GOMOGILE_TRACKER_TEST_BACKEND picks another)")
	}
	bodies := map[string][]byte{}
	var nodes []*node
	var lastFid int64
	func() {
		cfg := testConfig()
		cfg.JobMaster = true
		e := startE2ECfg(t, dsns[0], cfg, 1, 3, nil)
		nodes = e.nodes
		if err := e.cl.CreateClass(ctx, "e2e", client.Class{Name: "sha", MinDevCount: 2, HashType: "SHA-1"}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 12; i++ {
			key, class := fmt.Sprintf("file/%02d", i), "sha"
			if i%4 == 0 {
				class = "two"
			}
			body := bytes.Repeat([]byte{byte('a' + i)}, 1000+i)
			if _, err := e.cl.StoreFile(ctx, "", key, class, bytes.NewReader(body), int64(len(body))); err != nil {
				t.Fatal(err)
			}
			bodies[key] = body
		}
		st := e.trackers[0].st
		waitFor(t, 30*time.Second, "every file replicated", func() bool {
			n, err := st.QueueLength(ctx, store.QueueReplicate)
			if err != nil || n != 0 {
				return false
			}
			fs, err := st.Files(ctx, 1, 1<<40, 100)
			if err != nil || len(fs) != len(bodies) {
				return false
			}
			for _, f := range fs {
				if f.DevCount < 2 {
					return false
				}
			}
			lastFid = fs[len(fs)-1].Fid
			return true
		})
		// A copy gone from its node: fsck finds it, logs it and repairs it.
		f, err := e.cl.FileInfo(ctx, "", "file/03")
		if err != nil {
			t.Fatal(err)
		}
		on, err := st.FileOn(ctx, f.FID)
		if err != nil || len(on) == 0 {
			t.Fatalf("FileOn: %v %v", on, err)
		}
		if err := os.Remove(nodes[on[0]-1].blobPath(on[0], f.FID)); err != nil {
			t.Fatal(err)
		}
		c := e.trackers[0].dial()
		okDo := func(line string) {
			if r := c.do(line); !strings.HasPrefix(r, "OK") {
				t.Fatalf("%s: %s", line, r)
			}
		}
		okDo("fsck_reset")
		okDo("fsck_start")
		waitFor(t, 30*time.Second, "fsck to log the missing copy and finish", func() bool {
			evs, err := st.FsckEvents(ctx, 0, 10)
			r := parseOK(t, c.do("fsck_status"))
			n, _ := st.QueueLength(ctx, store.QueueFsck)
			m, _ := st.QueueLength(ctx, store.QueueReplicate)
			return err == nil && len(evs) > 0 && r.Get("running") == "0" && n == 0 && m == 0
		})
		// A rebalance queued and stopped, its rows and state kept.
		okDo("rebalance_set_policy policy=from_devices%3D1+to_devices%3D2")
		if err := st.Enqueue(ctx, store.QueueRebalance, store.QueueEntry{Fid: lastFid, DevID: 1, Arg: "1", After: store.Never}); err != nil {
			t.Fatal(err)
		}
		e.trackers[0].tr.Close() // the source at rest
	}()

	var first []byte
	for i := 0; i+1 < len(dsns); i++ {
		src, dst := openStore(t, dsns[i]), openStore(t, dsns[i+1])
		if err := migrate.Move(ctx, src, dst, migrate.Options{Batch: 5, SourceQuiesced: true, Source: store.RedactDSN(dsns[i])}); err != nil {
			t.Fatalf("move %s -> %s: %v", store.RedactDSN(dsns[i]), store.RedactDSN(dsns[i+1]), err)
		}
		var a, b bytes.Buffer
		if err := dump.Write(ctx, src, &a); err != nil {
			t.Fatal(err)
		}
		if err := dump.Write(ctx, dst, &b); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = a.Bytes()
			for _, want := range []string{`"t":"fsck_log"`, `"queue":"rebalance"`, `"hashtype":"SHA-1","sum":`, `"key":"rebal_policy"`} {
				if !bytes.Contains(first, []byte(want)) {
					t.Errorf("the installation's dump lacks %s", want)
				}
			}
		}
		if !bytes.Equal(b.Bytes(), first) {
			t.Fatalf("after the move to %s the dump differs from the first:\n%s\n---\n%s", store.RedactDSN(dsns[i+1]), first, b.Bytes())
		}
		src.Close()
		dst.Close()
	}

	// A tracker on each target serves every key, and its next upload gets
	// a fid above the old ones.
	for _, dsn := range dsns[1:] {
		st := openStore(t, dsn)
		cfg := testConfig()
		cfg.JobMaster = true
		tt := startTracker(t, cfg, st, &tracker.Options{Jobs: fastJobsCfg(st, nil, "target", cfg), Hostname: "target"})
		cl, err := client.New([]string{tt.addr}, &client.Options{Domain: "e2e"})
		if err != nil {
			t.Fatal(err)
		}
		waitWriteable(t, tt, 3)
		for key, body := range bodies {
			r, err := cl.FetchFile(ctx, "", key)
			if err != nil {
				t.Fatalf("%s: fetch %s: %v", store.RedactDSN(dsn), key, err)
			}
			got, err := io.ReadAll(r)
			r.Close()
			if err != nil || !bytes.Equal(got, body) {
				t.Errorf("%s: %s read %d bytes (%v); want its %d", store.RedactDSN(dsn), key, len(got), err, len(body))
			}
		}
		if _, err := cl.StoreFile(ctx, "", "new/"+dsn[:5], "two", bytes.NewReader([]byte("new")), 3); err != nil {
			t.Fatal(err)
		}
		fi, err := cl.FileInfo(ctx, "", "new/"+dsn[:5])
		if err != nil || fi.FID <= lastFid {
			t.Errorf("%s: a new upload got fid %d (%v); want above %d", store.RedactDSN(dsn), fi.FID, err, lastFid)
		}
		cl.Close()
		tt.tr.Close()
		st.Close()
	}
}
