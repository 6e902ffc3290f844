package migrate

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/dump"
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	os.Exit(testdb.Main(m))
}

func open(t testing.TB, dsn string) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", store.RedactDSN(dsn), err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func sqliteDSN(t *testing.T) string { return "sqlite:///" + filepath.Join(t.TempDir(), "db") }

// installation writes an installation into st through the contract: ids
// with gaps (a domain and a class deleted), files with copies, SHA-1
// checksums, a deleted file whose copies await the delete job, a row in
// every queue (one with failures behind it), fsck events, an upload in
// flight, settings. It returns the upload's fid.
func installation(t *testing.T, st *store.Store, nfiles int) int64 {
	ctx := t.Context()
	_, err := st.CreateDomain(ctx, "zeta")
	must(t, err, "CreateDomain")
	gone, err := st.CreateDomain(ctx, "gone")
	must(t, err, "CreateDomain")
	must(t, st.DeleteDomain(ctx, gone.ID), "DeleteDomain")
	alpha, err := st.CreateDomain(ctx, "alpha")
	must(t, err, "CreateDomain")
	x, err := st.CreateClass(ctx, store.Class{DomainID: alpha.ID, Name: "x", MinDevCount: 1})
	must(t, err, "CreateClass")
	must(t, st.DeleteClass(ctx, alpha.ID, x.ID), "DeleteClass")
	sha, err := st.CreateClass(ctx, store.Class{DomainID: alpha.ID, Name: "sha", MinDevCount: 2, HashType: store.HashSHA1})
	must(t, err, "CreateClass")
	_, err = st.CreateClass(ctx, store.Class{DomainID: alpha.ID, Name: "three", MinDevCount: 3, ReplPolicy: "MultipleHosts(3)"})
	must(t, err, "CreateClass")
	for i := 1; i <= 2; i++ {
		h, err := st.CreateHost(ctx, store.Host{ID: i * 10, Name: fmt.Sprintf("node%d", i), Status: store.HostAlive,
			IP: fmt.Sprintf("10.0.0.%d", i), HTTPPort: 7500})
		must(t, err, "CreateHost")
		for j := 1; j <= 2; j++ {
			_, err := st.CreateDevice(ctx, store.Device{ID: i*100 + j, HostID: h.ID, Status: store.DeviceAlive, Weight: 90 + j})
			must(t, err, "CreateDevice")
		}
	}
	must(t, st.SetDeviceState(ctx, 202, store.DeviceDead), "SetDeviceState")
	must(t, st.SetDeviceUsage(ctx, 101, 1000, 250), "SetDeviceUsage")
	must(t, st.SetServerSetting(ctx, "memcache_servers", "m:11211"), "SetServerSetting")
	must(t, st.SetServerSetting(ctx, "rebal_policy", "from_devices=101 to_hosts=20"), "SetServerSetting")
	var last int64
	for i := 0; i < nfiles; i++ {
		key := fmt.Sprintf("key/%05d", i)
		c := store.Commit{DomainID: alpha.ID, Key: key, Length: int64(i), DevIDs: []int{101, 201}}
		if i%3 == 0 {
			sum := sha1.Sum([]byte(key))
			c.ClassID, c.Checksum = sha.ID, &store.Checksum{HashType: store.HashSHA1, Sum: sum[:]}
		}
		fid, err := st.CreateTempFile(ctx, store.TempFile{DomainID: alpha.ID, Key: key, ClassID: c.ClassID})
		must(t, err, "CreateTempFile")
		c.Fid = fid
		_, err = st.CommitFile(ctx, c)
		must(t, err, "CommitFile")
		last = fid
	}
	f, err := st.FileByKey(ctx, alpha.ID, "key/00001")
	must(t, err, "FileByKey")
	must(t, st.DeleteFile(ctx, f.Fid), "DeleteFile")
	must(t, st.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: last, DevID: 101, After: time.Hour}), "Enqueue")
	must(t, st.Reschedule(ctx, store.QueueReplicate, last, 2*time.Hour, true), "Reschedule")
	must(t, st.Enqueue(ctx, store.QueueFsck, store.QueueEntry{Fid: 4, Arg: "x", After: store.Never}), "Enqueue")
	must(t, st.Enqueue(ctx, store.QueueRebalance, store.QueueEntry{Fid: 5, DevID: 102, Arg: "drain", After: time.Minute}), "Enqueue")
	for _, code := range []string{"NOPA", "REPL", "BSUM"} {
		must(t, st.AppendFsckLog(ctx, store.FsckEvent{Fid: 6, Code: code, DevID: 201}), "AppendFsckLog")
	}
	up, err := st.CreateTempFile(ctx, store.TempFile{DomainID: alpha.ID, Key: "uploading"})
	must(t, err, "CreateTempFile")
	return up
}

func dumpOf(t *testing.T, st *store.Store) []byte {
	t.Helper()
	var b bytes.Buffer
	must(t, dump.Write(t.Context(), st, &b), "dump")
	return b.Bytes()
}

// A round trip sqlite → postgres → mysql → sqlite keeps the installation
// byte for byte (the canonical dumps, clock stamps included), leaves no
// move record, and each target hands out fids above every fid the source
// had handed out (the upload in flight's included).
func TestMove_RoundTrip(t *testing.T) {
	hops := []string{sqliteDSN(t), testdb.Postgres(t), testdb.MySQL(t), sqliteDSN(t)}
	first := open(t, hops[0])
	upload := installation(t, first, 40)
	want := dumpOf(t, first)
	src := first
	for i, dsn := range hops[1:] {
		dst := open(t, dsn)
		var phases []string
		err := Move(t.Context(), src, dst, Options{Batch: 7, SourceQuiesced: true, Source: store.RedactDSN(hops[i]),
			Progress: func(p Progress) {
				if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
					phases = append(phases, p.Phase)
				}
			}})
		must(t, err, fmt.Sprintf("Move to %s", store.RedactDSN(dsn)))
		if got := dumpOf(t, dst); !bytes.Equal(got, want) {
			t.Fatalf("hop %d (%s): dump differs:\n--- want\n%s\n--- got\n%s", i+1, store.RedactDSN(dsn), want, got)
		}
		if v, err := dst.ServerSetting(t.Context(), store.MoveSetting); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("hop %d: the move's record is left: %q, %v", i+1, v, err)
		}
		if strings.Join(phases, ",") != "namespace,files,queues,fsck_log,verify,done" {
			t.Errorf("hop %d: phases %v", i+1, phases)
		}
		alpha, err := dst.Domains(t.Context())
		must(t, err, "Domains")
		fid, err := dst.CreateTempFile(t.Context(), store.TempFile{DomainID: alpha[0].ID, Key: "next"})
		must(t, err, "CreateTempFile")
		if fid <= upload {
			t.Errorf("hop %d: the target hands out fid %d; want above %d, the source's upload in flight", i+1, fid, upload)
		}
		must(t, dst.DeleteTempFile(t.Context(), fid), "DeleteTempFile")
		src = dst
	}
}

// A target with anything in it is refused, and left as it was; so is a
// source a tracker runs on (a usage report seconds old), unless the caller
// says it is quiesced; so is a source that is itself mid-move.
func TestMove_Refusals(t *testing.T) {
	ctx := t.Context()
	src := open(t, sqliteDSN(t))
	installation(t, src, 3)
	dst := open(t, sqliteDSN(t))
	must(t, dst.SetServerSetting(ctx, "memcache_servers", "other:11211"), "SetServerSetting")
	before := dumpOf(t, dst)
	if err := Move(ctx, src, dst, Options{SourceQuiesced: true}); !errors.Is(err, ErrTargetNotEmpty) {
		t.Errorf("Move into a target with a setting: %v; want ErrTargetNotEmpty", err)
	}
	if after := dumpOf(t, dst); !bytes.Equal(after, before) {
		t.Errorf("a refused move changed the target")
	}
	if _, err := dst.ServerSetting(ctx, store.MoveSetting); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused move left its record: %v", err)
	}

	empty := open(t, sqliteDSN(t))
	err := Move(ctx, src, empty, Options{})
	if !errors.Is(err, ErrSourceLive) || !strings.Contains(err.Error(), "dev101") {
		t.Errorf("Move from a source with a fresh usage report: %v; want ErrSourceLive naming dev101", err)
	}
	if _, err := empty.ServerSetting(ctx, store.MoveSetting); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused move marked the target: %v", err)
	}

	if err := Move(ctx, open(t, sqliteDSN(t)), empty, Options{SourceQuiesced: true}); !errors.Is(err, ErrSourceEmpty) {
		t.Errorf("Move from a new database: %v; want ErrSourceEmpty", err)
	}
	must(t, src.SetServerSetting(ctx, "slave_keys", "r1"), "SetServerSetting")
	if err := Move(ctx, src, empty, Options{SourceQuiesced: true}); !errors.Is(err, ErrSourceReplicas) {
		t.Errorf("Move from a source with read replicas: %v; want ErrSourceReplicas", err)
	}
	must(t, src.DeleteServerSetting(ctx, "slave_keys"), "DeleteServerSetting")
	must(t, src.SetServerSetting(ctx, store.MoveSetting, `{"source":"x","phase":"files"}`), "SetServerSetting")
	if err := Move(ctx, src, empty, Options{SourceQuiesced: true}); !errors.Is(err, ErrSourceMidMove) {
		t.Errorf("Move from a source mid-move: %v; want ErrSourceMidMove", err)
	}
}

// A move cut short after some batches leaves its record on the target; a
// run from another source is refused; the same move run again finishes
// from where the record says, and the copy is whole.
func TestMove_Resume(t *testing.T) {
	ctx := t.Context()
	src := open(t, sqliteDSN(t))
	installation(t, src, 60)
	dst := open(t, testdb.Postgres(t))
	cut, cancel := context.WithCancel(ctx)
	batches := 0
	err := Move(cut, src, dst, Options{Batch: 5, SourceQuiesced: true, Source: "A", Progress: func(p Progress) {
		if p.Phase == "files" {
			if batches++; batches == 4 {
				cancel()
			}
		}
	}})
	if err == nil {
		t.Fatal("a move cancelled mid-copy succeeded")
	}
	rec, err := dst.ServerSetting(ctx, store.MoveSetting)
	must(t, err, "the move's record after the cut")
	if !strings.Contains(rec, `"phase":"files"`) || !strings.Contains(rec, `"source":"A"`) {
		t.Errorf("record after the cut = %s; want phase files from A", rec)
	}
	if err := Move(ctx, src, dst, Options{SourceQuiesced: true, Source: "B"}); !errors.Is(err, ErrOtherMove) {
		t.Errorf("a move from another source into the half-copied target: %v; want ErrOtherMove", err)
	}
	var resumed int64 = -1
	must(t, Move(ctx, src, dst, Options{Batch: 5, SourceQuiesced: true, Source: "A", Progress: func(p Progress) {
		if resumed < 0 {
			resumed = p.ResumedFrom
		}
	}}), "the move again")
	if resumed <= 0 {
		t.Errorf("the second run started from fid %d; want where the first stopped", resumed)
	}
	if !bytes.Equal(dumpOf(t, dst), dumpOf(t, src)) {
		t.Errorf("after the resumed move the dumps differ")
	}
}

// childEnv makes the test binary a mover (see child) instead of running
// tests: the kill -9 test's victim.
const childEnv = "GOMOGILE_MIGRATE_CHILD"

// child moves $GOMOGILE_MIGRATE_FROM into $GOMOGILE_MIGRATE_TO a batch of
// 20 files at a time, printing a line per batch.
func child() int {
	ctx := context.Background()
	src, err := store.Open(ctx, os.Getenv("GOMOGILE_MIGRATE_FROM"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dst, err := store.Open(ctx, os.Getenv("GOMOGILE_MIGRATE_TO"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	err = Move(ctx, src, dst, Options{Batch: 20, SourceQuiesced: true, Source: "victim", Progress: func(p Progress) {
		fmt.Printf("%s %d\n", p.Phase, p.Files)
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// kill -9 in the middle of a copy, then the same move again: it finishes,
// and the two dumps are equal; in between a tracker would refuse the
// target (store.MoveSetting is there).
func TestMove_KilledMidCopy(t *testing.T) {
	srcDSN, dstDSN := sqliteDSN(t), testdb.MySQL(t)
	func() {
		src := open(t, srcDSN)
		installation(t, src, 400)
		must(t, src.Close(), "close the source") // SQLite: one process at a time
	}()
	c := testdb.StartChild(t, nil, childEnv+"=1", "GOMOGILE_MIGRATE_FROM="+srcDSN, "GOMOGILE_MIGRATE_TO="+dstDSN)
	for {
		l := c.Next(60 * time.Second)
		if l == "(exited)" || l == "(nothing)" {
			t.Fatalf("the mover ended before it was killed: %s", l)
		}
		var n int
		if _, err := fmt.Sscanf(l, "files %d", &n); err == nil && n >= 100 {
			break
		}
	}
	must(t, c.Cmd.Process.Kill(), "kill -9 the mover")
	c.Cmd.Wait()
	dst := open(t, dstDSN)
	rec, err := dst.ServerSetting(t.Context(), store.MoveSetting)
	must(t, err, "the killed move's record")
	if !strings.Contains(rec, `"phase":"files"`) {
		t.Errorf("record after the kill = %s; want phase files", rec)
	}
	n, err := countFiles(t.Context(), dst)
	must(t, err, "count")
	if n < 100 || n >= 399 {
		t.Errorf("the target holds %d files after the kill; want the batches before it (100 to 398)", n)
	}
	src := open(t, srcDSN)
	must(t, Move(t.Context(), src, dst, Options{Batch: 20, SourceQuiesced: true, Source: "victim"}), "the move again")
	if !bytes.Equal(dumpOf(t, dst), dumpOf(t, src)) {
		t.Errorf("after the kill and the second run the dumps differ")
	}
}
