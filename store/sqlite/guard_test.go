package sqlite_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlite"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// childRawEnv makes the test binary another program on the database: it
// opens the file with the SQLite driver alone (as the sqlite3 shell would),
// checks its integrity and counts the domains.
const childRawEnv = "GOMOGILE_SQLITE_TEST_RAW_DB"

func rawChild(path string) int {
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		fmt.Println("ERROR:", err)
		return 2
	}
	defer db.Close()
	var check string
	var n int
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil {
		fmt.Println("ERROR:", err)
		return 2
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM domain").Scan(&n); err != nil {
		fmt.Println("ERROR:", err)
		return 2
	}
	fmt.Printf("integrity %s domains %d\n", check, n)
	return 0
}

func runRawChild(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childRawEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("raw child: %v (%s)", err, out)
	}
	return strings.TrimSpace(string(out))
}

// A second process reaching the database through a hard link (as through
// a bind mount: same inode, another path) is refused, and the database
// stays intact and open to other programs. The guard used to be keyed on
// the path: a second tracker on a hard link corrupted the database.
func TestOpen_HardLinkSecondProcessRefused(t *testing.T) {
	h := newHarness(t)
	s := openStore(t, h)
	for i := 0; i < 20; i++ {
		if _, err := s.CreateDomain(t.Context(), fmt.Sprintf("d%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "elsewhere.db")
	if err := os.Link(h.path, link); err != nil {
		t.Skipf("hard link: %v", err)
	}
	code, out := runChild(t, link)
	if code != 3 {
		t.Fatalf("second process on a hard link: exit %d (%s); want 3 (refused with ErrInUse)", code, strings.TrimSpace(out))
	}
	for _, want := range []string{"in use by another gomogile process", link, "inode", "pid " + fmt.Sprint(os.Getpid())} {
		if !strings.Contains(out, want) {
			t.Errorf("refusal %q does not say %q", strings.TrimSpace(out), want)
		}
	}
	// The first Store goes on; the database is intact, and another program
	// (the SQLite driver alone, as the sqlite3 shell) opens it meanwhile,
	// by the path the tracker uses: SQLite names the write-ahead log after
	// the path, so through the link it would not see the log's commits.
	if _, err := s.CreateDomain(t.Context(), "after"); err != nil {
		t.Fatalf("first Store after the refusal: %v", err)
	}
	if got, want := runRawChild(t, h.path), "integrity ok domains 21"; got != want {
		t.Errorf("other program on the database: %q; want %q", got, want)
	}
	if sh, err := exec.LookPath("sqlite3"); err == nil {
		out, err := exec.CommandContext(t.Context(), sh, h.path, "SELECT COUNT(*) FROM domain").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "21" {
			t.Errorf("sqlite3 shell while the tracker holds the database: %v %q; want 21", err, out)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if code, out := runChild(t, link); code != 0 {
		t.Fatalf("after closing the first Store, child on the hard link exit %d (%s); want 0", code, strings.TrimSpace(out))
	}
}

// Stores in one process share the lock table of a file whatever path
// reaches it, and work on it through one path (one write-ahead log).
func TestOpen_HardLinkSharesLocks(t *testing.T) {
	h := newHarness(t)
	a := openStore(t, h)
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Link(h.path, link); err != nil {
		t.Skipf("hard link: %v", err)
	}
	b, err := store.Open(t.Context(), "sqlite://"+link)
	if err != nil {
		t.Fatalf("second Store in this process through a hard link: %v", err)
	}
	defer b.Close()
	l, err := a.Lock(t.Context(), "x", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(t.Context())
	if _, err := b.Lock(t.Context(), "x", 0); !errors.Is(err, store.ErrLockTimeout) {
		t.Fatalf("Lock through a hard link = %v; want ErrLockTimeout", err)
	}
	if _, err := a.CreateDomain(t.Context(), "seen"); err != nil {
		t.Fatal(err)
	}
	doms, err := b.Domains(t.Context())
	if err != nil || len(doms) != 1 || doms[0].Name != "seen" {
		t.Errorf("Store on the hard link sees domains %v, %v; want the one the other Store created", doms, err)
	}
}

// synchronous is chosen in the DSN; the default stays NORMAL.
func TestOpen_Synchronous(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		param string
		want  int // PRAGMA synchronous: 0 off, 1 normal, 2 full, 3 extra
	}{{"", 1}, {"?synchronous=full", 2}, {"?synchronous=NORMAL", 1}, {"?synchronous=extra", 3}, {"?synchronous=off", 0}} {
		s, err := sqlite.Open(t.Context(), mustDSN(t, "sqlite://"+filepath.Join(dir, "s.db")+c.param))
		if err != nil {
			t.Fatalf("%q: %v", c.param, err)
		}
		var got int
		err = rawConnPragma(s, &got)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%q: PRAGMA synchronous = %d; want %d", c.param, got, c.want)
		}
	}
	// A bad value, or a setting given twice (the second used to win
	// silently), is refused before the file is touched.
	for _, q := range []string{"?synchronous=sometimes", "?synchronous=full&synchronous=off", "?busy_timeout=-1", "?max_page_count=0", "?journal=wal"} {
		if _, err := store.Open(t.Context(), "sqlite://"+filepath.Join(dir, "s.db")+q); !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("%s: %v; want ErrBadDSN", q, err)
		}
	}
}

func mustDSN(t *testing.T, s string) *store.DSN {
	t.Helper()
	d, err := store.ParseDSN(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func rawConnPragma(s *sqlstore.Store, v *int) error {
	db, _ := sqlaccess.DB(s)
	return db.QueryRow("PRAGMA synchronous").Scan(v)
}
