package dump

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func open(t *testing.T, dsn string) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", store.RedactDSN(dsn), err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// installation writes the same installation into st on any backend, by
// the same calls in the same order: namespace, settings, files with copies
// and checksums, a deleted file's copy still on a device, a row in every
// queue, and fsck events.
func installation(t *testing.T, st *store.Store, nfiles int) {
	ctx := t.Context()
	// Domains created out of name order, one deleted: names, not ids, in
	// the dump.
	_, err := st.CreateDomain(ctx, "zeta")
	must(t, err, "CreateDomain")
	gone, err := st.CreateDomain(ctx, "gone")
	must(t, err, "CreateDomain")
	must(t, st.DeleteDomain(ctx, gone.ID), "DeleteDomain")
	alpha, err := st.CreateDomain(ctx, "alpha")
	must(t, err, "CreateDomain")
	sha, err := st.CreateClass(ctx, store.Class{DomainID: alpha.ID, Name: "sha", MinDevCount: 2, HashType: store.HashSHA1})
	must(t, err, "CreateClass")
	_, err = st.CreateClass(ctx, store.Class{DomainID: alpha.ID, Name: "hosts3", MinDevCount: 3, ReplPolicy: "MultipleHosts(3)"})
	must(t, err, "CreateClass")
	for i := 1; i <= 2; i++ {
		h, err := st.CreateHost(ctx, store.Host{ID: i * 10, Name: fmt.Sprintf("node%d", i), Status: store.HostAlive,
			IP: fmt.Sprintf("10.0.0.%d", i), HTTPPort: 7500, HTTPGetPort: 7600, AltIP: fmt.Sprintf("192.168.0.%d", i), AltMask: "192.168.0.0/24"})
		must(t, err, "CreateHost")
		for j := 1; j <= 2; j++ {
			_, err := st.CreateDevice(ctx, store.Device{ID: i*100 + j, HostID: h.ID, Status: store.DeviceAlive, Weight: 50 + j})
			must(t, err, "CreateDevice")
		}
	}
	must(t, st.SetDeviceState(ctx, 202, store.DeviceDrain), "SetDeviceState")
	must(t, st.SetServerSetting(ctx, "memcache_servers", "m:11211"), "SetServerSetting")
	must(t, st.SetServerSetting(ctx, "case_sensitive_list_keys", "0"), "SetServerSetting")
	for i := 0; i < nfiles; i++ {
		key := fmt.Sprintf("key/%05d", i)
		c := store.Commit{DomainID: alpha.ID, Key: key, Length: int64(i), DevIDs: []int{101, 201}}
		if i%3 == 0 {
			sum := sha256.Sum256([]byte(key))
			c.ClassID, c.Checksum = sha.ID, &store.Checksum{HashType: store.HashSHA1, Sum: sum[:20]}
		}
		fid, err := st.CreateTempFile(ctx, store.TempFile{DomainID: alpha.ID, Key: key, ClassID: c.ClassID})
		must(t, err, "CreateTempFile")
		c.Fid = fid
		_, err = st.CommitFile(ctx, c)
		must(t, err, "CommitFile")
	}
	f, err := st.FileByKey(ctx, alpha.ID, "key/00001")
	must(t, err, "FileByKey")
	must(t, st.DeleteFile(ctx, f.Fid), "DeleteFile") // queued for deletion, its copies stay
	must(t, st.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: 3, DevID: 101, After: store.Never}), "Enqueue")
	must(t, st.Enqueue(ctx, store.QueueFsck, store.QueueEntry{Fid: 4, Arg: "x", After: store.Never}), "Enqueue")
	must(t, st.Enqueue(ctx, store.QueueRebalance, store.QueueEntry{Fid: 5, DevID: 102, Arg: "drain", After: store.Never}), "Enqueue")
	must(t, st.AppendFsckLog(ctx, store.FsckEvent{Fid: 6, Code: "NOPA"}), "AppendFsckLog")
	must(t, st.AppendFsckLog(ctx, store.FsckEvent{Fid: 7, Code: "REPL", DevID: 201}), "AppendFsckLog")
}

// clockFree drops what the database clock stamps (fsck events' times, the
// delete queue's due time), which no two runs share.
var clockFree = regexp.MustCompile(`("utime":)\d+|("queue":"delete".*"nexttry":)\d+`)

func dumpOf(t *testing.T, st *store.Store) []byte {
	t.Helper()
	var b bytes.Buffer
	must(t, Write(t.Context(), st, &b), "Write")
	return b.Bytes()
}

// The same installation dumps byte for byte alike on SQLite, MySQL and
// PostgreSQL (apart from the database clock's stamps), with every table's
// rows in key order.
func TestWrite_SameOnEveryBackend(t *testing.T) {
	dsns := map[string]string{
		"sqlite":   "sqlite:///" + filepath.Join(t.TempDir(), "db"),
		"mysql":    testdb.MySQL(t),
		"postgres": testdb.Postgres(t),
	}
	dumps := map[string][]byte{}
	for _, b := range []string{"sqlite", "mysql", "postgres"} {
		st := open(t, dsns[b])
		installation(t, st, 20)
		dumps[b] = clockFree.ReplaceAll(dumpOf(t, st), []byte("${1}${2}0"))
	}
	for _, b := range []string{"mysql", "postgres"} {
		if !bytes.Equal(dumps[b], dumps["sqlite"]) {
			t.Errorf("%s's dump differs from sqlite's:\n--- sqlite\n%s\n--- %s\n%s", b, dumps["sqlite"], b, dumps[b])
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(dumps["sqlite"]), "\n"), "\n")
	counts := map[string]int{}
	prevTable := -1
	for i, l := range lines {
		var v struct{ T string }
		must(t, json.Unmarshal([]byte(l), &v), "line "+l)
		counts[v.T]++
		if i == 0 {
			if l != `{"t":"dump","format":"gomogile-dump","version":1}` {
				t.Errorf("header %s", l)
			}
			continue
		}
		ti := indexOf(Tables, v.T)
		if ti < prevTable {
			t.Errorf("line %d: table %s after a later one", i, v.T)
		}
		prevTable = ti
	}
	for table, want := range map[string]int{"domain": 2, "class": 2, "host": 2, "device": 4, "file": 19,
		"file_on": 40, "checksum": 7, "queue": 4, "fsck_log": 2} {
		if counts[table] != want {
			t.Errorf("%d %s lines; want %d", counts[table], table, want)
		}
	}
	for _, want := range []string{
		`{"t":"domain","name":"alpha"}` + "\n" + `{"t":"domain","name":"zeta"}`,
		`{"t":"class","domain":"alpha","name":"hosts3","mindevcount":3,"replpolicy":"MultipleHosts(3)","hashtype":"NONE"}`,
		`{"t":"host","hostid":10,"name":"node1","status":"alive","ip":"10.0.0.1","http_port":7500,"http_get_port":7600,"altip":"192.168.0.1","altmask":"192.168.0.0/24"}`,
		`{"t":"device","devid":202,"hostid":20,"status":"drain","weight":52,`,
		`{"t":"file","fid":1,"domain":"alpha","key":"key/00000","length":0,"class":"sha","devcount":2}`,
		`{"t":"file_on","fid":2,"devid":101}`, // the deleted file's copy
		`{"t":"queue","queue":"delete","fid":2,`,
		`{"t":"queue","queue":"rebalance","fid":5,"devid":102,"arg":"drain",`,
		`{"t":"setting","key":"case_sensitive_list_keys","value":"0"}`,
	} {
		if !bytes.Contains(dumps["sqlite"], []byte(want)) {
			t.Errorf("dump lacks %s", want)
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// Digest's rows and hashes are those of Write's lines, table by table, and
// a table read over many pages gives the same lines as over one.
func TestDigest_IsTheDumpsLines(t *testing.T) {
	st := open(t, "sqlite:///"+filepath.Join(t.TempDir(), "db"))
	installation(t, st, 30)
	one := dumpOf(t, st)
	defer func(n int) { pageSize = n }(pageSize)
	pageSize = 3
	if many := dumpOf(t, st); !bytes.Equal(many, one) {
		t.Errorf("dump in pages of 3 differs from one page:\n%s\n---\n%s", many, one)
	}
	ds, err := Digest(t.Context(), st)
	must(t, err, "Digest")
	want := map[string]*TableDigest{}
	hs := map[string][]byte{}
	for _, l := range strings.SplitAfter(string(one), "\n") {
		var v struct{ T string }
		if l == "" || json.Unmarshal([]byte(l), &v) != nil || v.T == "dump" {
			continue
		}
		if want[v.T] == nil {
			want[v.T] = &TableDigest{Table: v.T}
		}
		want[v.T].Rows++
		hs[v.T] = append(hs[v.T], l...)
	}
	if len(ds) != len(Tables) {
		t.Fatalf("Digest has %d tables; want %d", len(ds), len(Tables))
	}
	for i, d := range ds {
		sum := sha256.Sum256(hs[d.Table])
		w := TableDigest{Table: Tables[i], SHA256: hex.EncodeToString(sum[:])}
		if want[d.Table] != nil {
			w.Rows = want[d.Table].Rows
		}
		if d != w {
			t.Errorf("Digest[%d] = %+v; want %+v", i, d, w)
		}
	}
}
