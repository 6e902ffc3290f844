package sqlite_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlite"
	"github.com/gomogile/gomogile/store/storemetrics"
)

const childEnv = "GOMOGILE_SQLITE_TEST_CHILD_DB"

// TestMain lets the test binary act as a second gomogile process: with
// childEnv set it only tries to open that database and reports the error.
func TestMain(m *testing.M) {
	if path := os.Getenv(childRawEnv); path != "" {
		os.Exit(rawChild(path))
	}
	if path := os.Getenv(childEnv); path != "" {
		s, err := store.Open(context.Background(), "sqlite://"+path)
		if err != nil {
			fmt.Println("ERROR:", err)
			if errors.Is(err, sqlite.ErrInUse) {
				os.Exit(3)
			}
			os.Exit(2)
		}
		s.Close()
		fmt.Println("OPENED")
		os.Exit(0)
	}
	os.Exit(testdb.Main(m))
}

func runChild(t *testing.T, path string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("running child: %v", err)
	}
	return 0, string(out)
}

func TestOpen_SecondProcessRefused(t *testing.T) {
	h := newHarness(t)
	s, err := store.Open(t.Context(), h.DSN())
	if err != nil {
		t.Fatal(err)
	}
	code, out := runChild(t, h.path)
	if code != 3 {
		t.Fatalf("child exit %d (%s); want 3 (refused with ErrInUse)", code, strings.TrimSpace(out))
	}
	for _, want := range []string{h.path, "pid " + fmt.Sprint(os.Getpid())} {
		if !strings.Contains(out, want) {
			t.Errorf("child error %q does not name %q", strings.TrimSpace(out), want)
		}
	}
	// A second Store in this process shares the guard.
	s2, err := store.Open(t.Context(), h.DSN())
	if err != nil {
		t.Fatalf("second Store in the same process: %v", err)
	}
	s2.Close()
	if code, out := runChild(t, h.path); code != 3 {
		t.Fatalf("after closing one of two Stores, child exit %d (%s); want 3", code, strings.TrimSpace(out))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if code, out := runChild(t, h.path); code != 0 {
		t.Fatalf("after closing every Store, child exit %d (%s); want 0", code, strings.TrimSpace(out))
	}
}

func TestOpen_BadDSN(t *testing.T) {
	dir := t.TempDir()
	for _, dsn := range []string{
		"sqlite::memory:",
		"sqlite://" + filepath.Join(dir, "a.db") + "?cache=shared",
		"sqlite://" + filepath.Join(dir, "a.db") + "?busy_timeout=soon",
		"sqlite://" + filepath.Join(dir, "a.db") + "?max_page_count=0",
		"sqlite://" + filepath.Join(dir, "a.db") + "?sql_driver=no-such-driver",
		"DBI:SQLite:dbname=" + filepath.Join(dir, "a.db") + ";foo=bar",
		"sqlite:",
	} {
		s, err := store.Open(t.Context(), dsn)
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("Open(%q) = %v; want ErrBadDSN", dsn, err)
		}
	}
	s, err := store.Open(t.Context(), "DBI:SQLite:dbname="+filepath.Join(dir, "b.db")+";busy_timeout=500")
	if err != nil {
		t.Fatalf("Open with busy_timeout: %v", err)
	}
	s.Close()
}

// connectCounter is a database/sql driver that wraps SQLite's and counts
// the connections opened through it.
type connectCounter struct {
	driver.Driver
	n *atomic.Int64
}

func (c connectCounter) Open(name string) (driver.Conn, error) {
	c.n.Add(1)
	return c.Driver.Open(name)
}

var countedConnects = sync.OnceValue(func() *atomic.Int64 {
	db, err := sql.Open("sqlite", "")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	n := new(atomic.Int64)
	sql.Register("sqlite-counted-test", connectCounter{db.Driver(), n})
	return n
})

// sql_driver opens the database through the driver a program registered
// under that name, which sees every connection.
func TestOpen_SQLDriver(t *testing.T) {
	n := countedConnects()
	before := n.Load()
	s, err := store.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "w.db")+"?sql_driver=sqlite-counted-test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateDomain(t.Context(), "d"); err != nil {
		t.Fatal(err)
	}
	if n.Load() == before {
		t.Error("no connection was opened through the driver sql_driver names")
	}
}

func TestOpen_SymlinkSharesLocks(t *testing.T) {
	h := newHarness(t)
	a := openStore(t, h)
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(h.path, link); err != nil {
		t.Skipf("symlink: %v", err)
	}
	b, err := store.Open(t.Context(), "sqlite://"+link)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	l, err := a.Lock(t.Context(), "x", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(t.Context())
	if _, err := b.Lock(t.Context(), "x", 0); !errors.Is(err, store.ErrLockTimeout) {
		t.Fatalf("Lock through a symlink = %v; want ErrLockTimeout", err)
	}
}

func TestOpen_SchemaTooNew(t *testing.T) {
	h := newHarness(t)
	s := openStore(t, h)
	if err := s.SetServerSetting(t.Context(), "schema_version", "18"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := store.Open(t.Context(), h.DSN())
	if err == nil {
		s2.Close()
	}
	if !errors.Is(err, store.ErrSchemaMismatch) || !strings.Contains(err.Error(), "18") || !strings.Contains(err.Error(), "17") {
		t.Fatalf("Open on schema 18 = %v; want ErrSchemaMismatch naming 18 and 17", err)
	}
}

func TestOpen_ConcurrentOnEmptyDatabase(t *testing.T) {
	h := newHarness(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	stores := make([]*store.Store, 6)
	for i := range errs {
		wg.Go(func() { stores[i], errs[i] = store.Open(t.Context(), h.DSN()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
			continue
		}
		stores[i].Close()
	}
	s := openStore(t, h)
	v, err := s.ServerSetting(t.Context(), "schema_version")
	if err != nil || v != "17" {
		t.Fatalf("schema_version = %q, %v; want 17", v, err)
	}
}

// An external program writing the database while gomogile runs.
func TestStore_ExternalWriter(t *testing.T) {
	h := newHarness(t)
	s := openStore(t, h)
	ctx := t.Context()
	if _, err := s.CreateDomain(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	db, err := rawDB(h.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "INSERT INTO domain (dmid, namespace) VALUES (40, 'by-hand')"); err != nil {
		t.Fatalf("external insert: %v", err)
	}
	d, err := s.CreateDomain(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != 41 {
		t.Errorf("dmid after hand-made 40 = %d; want 41", d.ID)
	}
	ds, err := s.Domains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range ds {
		names = append(names, d.Name)
	}
	if want := []string{"one", "by-hand", "two"}; !slices.Equal(names, want) {
		t.Errorf("Domains = %v; want %v", names, want)
	}

	// The external program holds the write lock for a while: gomogile's
	// writes wait for it instead of failing with "database is locked".
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO domain (dmid, namespace) VALUES (50, 'in-tx')"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.CreateDomain(ctx, "waited")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("CreateDomain finished (%v) while another program held the write lock; want it to wait", err)
	default:
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("CreateDomain after the external transaction: %v", err)
	}
	if d, err := s.CreateDomain(ctx, "after"); err != nil || d.ID != 52 {
		t.Errorf("CreateDomain after both = %+v, %v; want dmid 52", d, err)
	}
}

func mkDomain(t *testing.T, s *store.Store) int {
	t.Helper()
	d, err := s.CreateDomain(t.Context(), "d")
	if err != nil {
		t.Fatal(err)
	}
	return d.ID
}

// Many goroutines over several Stores write at once; none may see
// "database is locked" or any other error.
func TestStore_ConcurrentWriters(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	const stores, workers, files = 3, 6, 15
	ss := make([]*store.Store, stores)
	for i := range ss {
		ss[i] = openStore(t, h)
	}
	dmid := mkDomain(t, ss[0])
	var mu sync.Mutex
	var fids []int64
	var wg sync.WaitGroup
	errc := make(chan error, stores*workers)
	for i := range stores * workers {
		s := ss[i%stores]
		wg.Go(func() {
			for j := range files {
				key := fmt.Sprintf("w%d/f%d", i, j)
				fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: key, DevIDs: []int{1, 2}})
				if err != nil {
					errc <- err
					return
				}
				if _, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: dmid, Key: key, Length: 1, DevIDs: []int{1}, Replicate: true}); err != nil {
					errc <- err
					return
				}
				if _, err := s.AddFileOn(ctx, fid, 2+j%3); err != nil {
					errc <- err
					return
				}
				if _, err := s.IncrServerSetting(ctx, "counter", 1); err != nil {
					errc <- err
					return
				}
				mu.Lock()
				fids = append(fids, fid)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("concurrent write: %v", err)
	}
	slices.Sort(fids)
	if n := len(slices.Compact(slices.Clone(fids))); n != stores*workers*files {
		t.Errorf("distinct fids = %d; want %d", n, stores*workers*files)
	}
	n, err := ss[1].IncrServerSetting(ctx, "counter", 0)
	if err != nil || n != stores*workers*files {
		t.Errorf("counter = %d, %v; want %d", n, err, stores*workers*files)
	}
	q, err := ss[2].QueueLength(ctx, store.QueueReplicate)
	if err != nil || q != stores*workers*files {
		t.Errorf("replicate queue = %d, %v; want %d", q, err, stores*workers*files)
	}
	for _, fid := range fids[:10] {
		f, err := ss[0].File(ctx, fid)
		if err != nil || f.DevCount != 2 {
			t.Errorf("File(%d) = %+v, %v; want devcount 2", fid, f, err)
		}
	}
}

// The classic MogileFS bug: a fid whose rows are gone must not come back.
func TestStore_FidNeverReused(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	s := openStore(t, h)
	dmid := mkDomain(t, s)
	var last int64
	for i := range 3 {
		fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: fmt.Sprint("k", i)})
		if err != nil {
			t.Fatal(err)
		}
		if fid <= last {
			t.Fatalf("fid %d after %d; want increasing", fid, last)
		}
		last = fid
		if _, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: dmid, Key: fmt.Sprint("k", i)}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteFile(ctx, fid); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ClearQueue(ctx, store.QueueDelete); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, h)
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: "again"})
	if err != nil {
		t.Fatal(err)
	}
	if fid <= last {
		t.Fatalf("fid after deleting every row and reopening = %d; want > %d", fid, last)
	}
	// A row written by someone else (an older tracker) with a higher fid:
	// the counter starts above it when a Store opens the database.
	db, err := rawDB(h.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "INSERT INTO file (fid, dmid, dkey, length, classid, devcount) VALUES (1000, ?, 'old', 0, 0, 0)", dmid); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, h)
	fid, err = s.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: "after-old"})
	if err != nil || fid != 1001 {
		t.Fatalf("fid after a foreign fid 1000 = %d, %v; want 1001", fid, err)
	}
	// One written while the Store runs, where the counter would go next:
	// the allocation that collides with it raises the counter and goes on.
	if _, err := db.ExecContext(ctx, "INSERT INTO tempfile (fid, dmid, dkey, classid, createtime) VALUES (1002, ?, 'foreign', 0, 0)", dmid); err != nil {
		t.Fatal(err)
	}
	fid, err = s.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: "after-foreign"})
	if err != nil || fid != 1003 {
		t.Fatalf("fid after a foreign tempfile 1002 = %d, %v; want 1003", fid, err)
	}
	if err := s.DeleteTempFile(ctx, 1002); err != nil {
		t.Fatal(err)
	}
	// A caller-named fid moves the counter too.
	if _, err := s.CreateTempFile(ctx, store.TempFile{Fid: 5000, DomainID: dmid, Key: "named"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTempFile(ctx, 5000); err != nil {
		t.Fatal(err)
	}
	fid, err = s.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: "after-named"})
	if err != nil || fid != 5001 {
		t.Fatalf("fid after named fid 5000 = %d, %v; want 5001", fid, err)
	}
}

// Leases from several Stores never hand one row to two of them.
func TestStore_LeaseExclusive(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	ss := []*store.Store{openStore(t, h), openStore(t, h), openStore(t, h)}
	const rows = 300
	var entries []store.QueueEntry
	for i := range rows {
		entries = append(entries, store.QueueEntry{Fid: int64(i + 1)})
	}
	if err := ss[0].Enqueue(ctx, store.QueueFsck, entries...); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for i := range 9 {
		s := ss[i%len(ss)]
		wg.Go(func() {
			for {
				items, err := s.Lease(ctx, store.QueueFsck, 7, time.Hour)
				if err != nil {
					t.Errorf("Lease: %v", err)
					return
				}
				if len(items) == 0 {
					return
				}
				mu.Lock()
				for _, it := range items {
					seen[it.Fid]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != rows {
		t.Errorf("leased %d distinct rows; want %d", len(seen), rows)
	}
	for fid, n := range seen {
		if n != 1 {
			t.Errorf("fid %d leased %d times; want 1", fid, n)
		}
	}
	// Nothing is due any more, and the rows are still there.
	if items, err := ss[1].Lease(ctx, store.QueueFsck, 10, time.Hour); err != nil || len(items) != 0 {
		t.Errorf("Lease after all leased = %v, %v; want none", items, err)
	}
	if n, err := ss[2].QueueLength(ctx, store.QueueFsck); err != nil || n != rows {
		t.Errorf("QueueLength = %d, %v; want %d", n, err, rows)
	}
}

// Racing commits of one tempfile under different keys: exactly one wins.
func TestStore_CommitFileRace(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	ss := []*store.Store{openStore(t, h), openStore(t, h)}
	dmid := mkDomain(t, ss[0])
	for round := range 20 {
		fid, err := ss[0].CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: "x"})
		if err != nil {
			t.Fatal(err)
		}
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = ss[i%2].CommitFile(ctx, store.Commit{Fid: fid, DomainID: dmid, Key: fmt.Sprintf("r%d-%d", round, i), DevIDs: []int{1}})
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrNotFound):
				t.Errorf("losing commit = %v; want ErrNotFound", err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d commits won; want 1 (%v)", round, won, errs)
		}
	}
}

// Many fids committed to one key at once: one owns it, every other is
// queued for deletion, none is orphaned.
func TestStore_CommitFileSameKey(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	ss := []*store.Store{openStore(t, h), openStore(t, h)}
	dmid := mkDomain(t, ss[0])
	const n = 12
	fids := make([]int64, n)
	for i := range fids {
		var err error
		if fids[i], err = ss[0].CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	res := make([]store.CommitResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range fids {
		wg.Go(func() {
			res[i], errs[i] = ss[i%2].CommitFile(ctx, store.Commit{Fid: fids[i], DomainID: dmid, Key: "k"})
		})
	}
	wg.Wait()
	replaced := map[int64]bool{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("commit %d: %v", fids[i], err)
		}
		if r := res[i].ReplacedFid; r != 0 {
			if replaced[r] {
				t.Errorf("fid %d replaced twice", r)
			}
			replaced[r] = true
		}
	}
	owner, err := ss[1].FileByKey(ctx, dmid, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(replaced) != n-1 || replaced[owner.Fid] {
		t.Errorf("replaced %d fids (owner %d among them: %v); want %d others", len(replaced), owner.Fid, replaced[owner.Fid], n-1)
	}
	for _, fid := range fids {
		_, qerr := ss[0].QueueItem(ctx, store.QueueDelete, fid)
		if fid == owner.Fid {
			if !errors.Is(qerr, store.ErrNotFound) {
				t.Errorf("owner %d in delete queue: %v", fid, qerr)
			}
		} else if qerr != nil {
			t.Errorf("replaced fid %d not queued for delete: %v", fid, qerr)
		}
	}
}

// devcount stays COUNT(file_on) under concurrent adds and removes,
// including adds made while the fid is still a tempfile.
func TestStore_DevCountConcurrent(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	ss := []*store.Store{openStore(t, h), openStore(t, h), openStore(t, h)}
	dmid := mkDomain(t, ss[0])
	fid, err := ss[0].CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 12 {
		s := ss[i%3]
		wg.Go(func() {
			for j := range 20 {
				dev := 1 + (i*7+j)%9
				var err error
				if j%3 == 2 {
					_, err = s.RemoveFileOn(ctx, fid, dev)
				} else {
					_, err = s.AddFileOn(ctx, fid, dev)
				}
				if err != nil {
					t.Errorf("file_on change: %v", err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		time.Sleep(5 * time.Millisecond)
		if _, err := ss[1].CommitFile(ctx, store.Commit{Fid: fid, DomainID: dmid, Key: "k", DevIDs: []int{1}}); err != nil {
			t.Errorf("CommitFile: %v", err)
		}
	})
	wg.Wait()
	devs, err := ss[2].FileOn(ctx, fid)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ss[0].File(ctx, fid)
	if err != nil {
		t.Fatal(err)
	}
	if f.DevCount != len(devs) {
		t.Errorf("devcount = %d; want COUNT(file_on) = %d", f.DevCount, len(devs))
	}
}

func TestStore_ListKeysLiteralPrefix(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	s := openStore(t, h)
	dmid := mkDomain(t, s)
	keys := []string{"a%b", "a%c", "aXb", "a_b", "a\\b", "a\\\\", "ab", "é1", "é2", "ê", "\U0010FFFFz", "Z"}
	for _, k := range keys {
		fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: dmid, Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		prefix, after string
		limit         int
		want          []string
	}{
		{"a%", "", 10, []string{"a%b", "a%c"}},
		{"a_", "", 10, []string{"a_b"}},
		{"a\\", "", 10, []string{"a\\\\", "a\\b"}},
		{"é", "", 10, []string{"é1", "é2"}},
		{"", "", 3, []string{"Z", "a%b", "a%c"}},
		{"a", "a\\b", 10, []string{"a_b", "ab"}},
		{"\U0010FFFF", "", 10, []string{"\U0010FFFFz"}},
		{"", "ê", 10, []string{"\U0010FFFFz"}},
	} {
		got, err := s.ListKeys(ctx, dmid, c.prefix, c.after, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("ListKeys(%q, after %q) = %q; want %q", c.prefix, c.after, got, c.want)
		}
	}
}

func TestStore_Lock(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	a, b := openStore(t, h), openStore(t, h)
	l, err := a.Lock(ctx, "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := b.Lock(ctx, "job", 50*time.Millisecond); !errors.Is(err, store.ErrLockTimeout) {
		t.Fatalf("second Store's Lock = %v; want ErrLockTimeout", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("timeout after %v; want >= 50ms", d)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := b.Lock(ctx, "job", 5*time.Second)
		if err == nil {
			err = l2.Release(ctx)
		}
		got <- err
	}()
	a.Close() // frees the lock, Lost first
	select {
	case <-l.Lost():
	default:
		t.Error("Lost not closed after the holder's Store closed")
	}
	if err := <-got; err != nil {
		t.Fatalf("Lock after the holder closed: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("Release of a lost lock = %v; want ErrLockLost", err)
	}
	if _, err := a.Lock(ctx, "other", 0); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Lock after Close = %v; want ErrClosed", err)
	}
}

func TestStore_Accessors(t *testing.T) {
	h := newHarness(t)
	s := openStore(t, h)
	db, ok := sqlaccess.DB(s)
	if !ok {
		t.Fatalf("store.Open returned %T; want a Store of sqlstore's", s)
	}
	var mode string
	if err := db.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	if c := s.Capabilities(); c.LockMechanism != "in-process" || c.CrossProcess {
		t.Errorf("Capabilities = %+v", c)
	}
	info, err := s.Info(t.Context())
	if err != nil || info.Driver != "sqlite" || info.ServerVersion == "" {
		t.Errorf("Info = %+v, %v", info, err)
	}
}

// A database made by an older mogdbsetup: class lacks the columns MogileFS
// later added with ALTER TABLE.
func TestOpen_UpgradesOldSchema(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	db, err := rawDB(h.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE class (dmid SMALLINT UNSIGNED NOT NULL, classid TINYINT UNSIGNED NOT NULL,
			classname VARCHAR(50), mindevcount TINYINT UNSIGNED NOT NULL,
			UNIQUE (dmid, classid), UNIQUE (dmid, classname))`,
		`CREATE TABLE server_settings (field VARCHAR(50) PRIMARY KEY, value TEXT)`,
		`INSERT INTO server_settings VALUES ('schema_version', '10')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s := openStore(t, h)
	d, err := s.CreateDomain(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	want := store.Class{DomainID: d.ID, Name: "c", MinDevCount: 2, ReplPolicy: "MultipleHosts(2)", HashType: store.HashMD5}
	got, err := s.CreateClass(ctx, want)
	if err != nil {
		t.Fatalf("CreateClass on an upgraded class table: %v", err)
	}
	cs, err := s.Classes(ctx)
	want.ID = got.ID
	if err != nil || len(cs) != 1 || cs[0] != want {
		t.Errorf("Classes = %+v, %v; want [%+v]", cs, err, want)
	}
	if v, err := s.ServerSetting(ctx, "schema_version"); err != nil || v != "17" {
		t.Errorf("schema_version = %q, %v; want 17", v, err)
	}
}

// Closing a Store ends its own waits for a lock at once.
func TestStore_CloseEndsLockWait(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	a, b := openStore(t, h), openStore(t, h)
	l, err := a.Lock(ctx, "busy", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	got := make(chan error, 1)
	go func() {
		_, err := b.Lock(ctx, "busy", time.Minute)
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("Lock wait ended by Close = %v; want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Lock still waiting %v after its Store closed", time.Since(start))
	}
	if _, err := a.Lock(ctx, "busy", 0); !errors.Is(err, store.ErrLockTimeout) {
		t.Errorf("holder lost its lock when a waiter's Store closed: Lock = %v; want ErrLockTimeout", err)
	}
}

// A database at its size cap (max_page_count: SQLite's own SQLITE_FULL,
// the code a full disk gives) refuses writes with store.ErrNoSpace and
// changes nothing; once deletions free pages, the same Store writes again.
func TestStore_NoSpace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := store.Open(t.Context(), "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	dmid := mkDomain(t, s)
	s.Close()
	// Closing the last connection checkpoints the log into the file, so
	// its size is the database's.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	pages := fi.Size() / 4096
	reg := prometheus.NewRegistry()
	m, err := storemetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = store.Open(t.Context(), fmt.Sprintf("sqlite://%s?max_page_count=%d", path, pages+4), store.WithObserver(m)); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	var fids []int64
	var full error
	for i := range 100000 {
		fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: fmt.Sprintf("key-%06d", i), DevIDs: []int{1, 2, 3}})
		if err != nil {
			full = err
			break
		}
		fids = append(fids, fid)
	}
	if !errors.Is(full, store.ErrNoSpace) {
		t.Fatalf("after %d tempfiles: %v; want ErrNoSpace", len(fids), full)
	}
	if len(fids) == 0 {
		t.Fatal("no tempfile fitted under the cap")
	}
	if !strings.Contains(full.Error(), "full") {
		t.Errorf("error %q does not say the database is full", full)
	}
	if n := noSpaceErrors(t, reg); n != 1 {
		t.Errorf("gomogile_store_errors_total{op=CreateTempFile,error=no_space} = %v; want 1", n)
	}
	// The refused write left nothing behind (ExpiredTempFiles with age 0
	// lists the rows of earlier seconds of the database clock).
	time.Sleep(1100 * time.Millisecond)
	if rows, err := s.ExpiredTempFiles(ctx, 0, len(fids)+10); err != nil || len(rows) != len(fids) {
		t.Errorf("tempfiles after the refusal: %d, %v; want the %d accepted", len(rows), err, len(fids))
	}
	for _, fid := range fids[:len(fids)/2] {
		if err := s.DeleteTempFile(ctx, fid); err != nil {
			t.Fatalf("DeleteTempFile(%d) on a full database: %v", fid, err)
		}
	}
	if _, err := s.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: "after", DevIDs: []int{1}}); err != nil {
		t.Errorf("CreateTempFile after freeing space: %v; want it to succeed", err)
	}
}

func noSpaceErrors(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "gomogile_store_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["op"] == "CreateTempFile" && labels["error"] == "no_space" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
