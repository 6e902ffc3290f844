package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/migrate"
)

// dumpDB makes a SQLite database holding a domain and one file.
func dumpDB(t *testing.T) string {
	t.Helper()
	dsn := "sqlite:///" + filepath.Join(t.TempDir(), "db")
	st, err := store.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := st.CreateDomain(t.Context(), "photos")
	if err != nil {
		t.Fatal(err)
	}
	fid, err := st.CreateTempFile(t.Context(), store.TempFile{DomainID: d.ID, Key: "cat.jpg"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CommitFile(t.Context(), store.Commit{Fid: fid, DomainID: d.ID, Key: "cat.jpg", Length: 42}); err != nil {
		t.Fatal(err)
	}
	return dsn
}

// dump writes the dump to a file (whole, nothing else left beside it) and
// to standard output alike; --digest counts the tables; --config takes
// db_dsn from a mogilefsd.conf.
func TestDump(t *testing.T) {
	dsn := dumpDB(t)
	stdout, _, err := run(t, NewMain(), "dump", "--dsn", dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{"t":"dump","format":"gomogile-dump","version":1}` + "\n",
		`{"t":"domain","name":"photos"}` + "\n",
		`{"t":"file","fid":1,"domain":"photos","key":"cat.jpg","length":42,"class":"default","devcount":0}` + "\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dump lacks %s:\n%s", want, stdout)
		}
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "backup.jsonl")
	if _, _, err := run(t, NewMain(), "dump", "--dsn", dsn, "-o", out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != stdout {
		t.Errorf("dump -o wrote %q (%v); want what standard output got", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("dump -o left %d files in its directory; want only the dump", len(ents))
	}

	conf := filepath.Join(t.TempDir(), "mogilefsd.conf")
	if err := os.WriteFile(conf, []byte("db_dsn = "+dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	digest, _, err := run(t, NewMain(), "dump", "--config", conf, "--digest")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"domain    rows=1  sha256=", "file      rows=1  sha256=", "fsck_log  rows=0  sha256=", "all               sha256="} {
		if !strings.Contains(digest, want) {
			t.Errorf("digest lacks %q:\n%s", want, digest)
		}
	}
}

// Bad input gets a clear error, and -o leaves no file behind.
func TestDump_BadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "backup.jsonl")
	var u *usageError
	if _, _, err := run(t, NewMain(), "dump", "-o", out); !errors.As(err, &u) || !strings.Contains(err.Error(), "--dsn") {
		t.Errorf("dump without a DSN: %v; want a usage error naming --dsn", err)
	}
	if _, _, err := run(t, NewMain(), "dump", "--dsn", "nosuch://x/y", "-o", out); !errors.Is(err, store.ErrNoDriver) {
		t.Errorf("dump of an unknown backend: %v; want store.ErrNoDriver", err)
	}
	if _, _, err := run(t, NewMain(), "dump", "--dsn", "mysql://root@"+testdb.ClosedAddr(t)+"/mogilefs?op_timeout=2s", "-o", out); err == nil {
		t.Errorf("dump of a server nothing answers for succeeded")
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed dump left %s (%v)", out, err)
	}
	// A DSN naming a file that does not exist (a typo): refused, and the
	// file is not made.
	typo := filepath.Join(t.TempDir(), "metadata.db")
	if _, _, err := run(t, NewMain(), "dump", "--dsn", "sqlite:///"+typo); !errors.Is(err, store.ErrSchemaMismatch) {
		t.Errorf("dump of a missing database: %v; want ErrSchemaMismatch", err)
	}
	if _, _, err := run(t, NewMain(), "migrate", "--from", "sqlite:///"+typo, "--to", "sqlite:///"+filepath.Join(t.TempDir(), "to.db")); !errors.Is(err, store.ErrSchemaMismatch) {
		t.Errorf("migrate from a missing database: %v; want ErrSchemaMismatch", err)
	}
	if _, err := os.Stat(typo); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dump or migrate made the database a typo named (%v)", err)
	}
	failing := errors.New("the dump failed half-way")
	if err := writeFileWhole(out, func(f *os.File) error { f.WriteString("half"); return failing }); !errors.Is(err, failing) {
		t.Errorf("writeFileWhole = %v; want the write's error", err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 0 {
		t.Errorf("an interrupted write left %d files", len(ents))
	}
}

// migrate copies one database into another, checks it, and says so;
// --verify-only compares two and changes nothing; a second run into the
// same target is refused as not empty.
func TestMigrate(t *testing.T) {
	from := dumpDB(t)
	to := "sqlite:///" + filepath.Join(t.TempDir(), "db")
	stdout, stderr, err := run(t, NewMain(), "migrate", "--from", from, "--to", to)
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "migrate: done") || !strings.Contains(stderr, "migrate files: ") || !strings.Contains(stderr, "migrate done: 1/1 files (100.0%)") {
		t.Errorf("migrate printed %q and %q", stdout, stderr)
	}
	a, _, _ := run(t, NewMain(), "dump", "--dsn", from)
	b, _, _ := run(t, NewMain(), "dump", "--dsn", to)
	if a != b || !strings.Contains(b, `"key":"cat.jpg"`) {
		t.Errorf("dumps after migrate differ:\n%s\n---\n%s", a, b)
	}
	if out, _, err := run(t, NewMain(), "migrate", "--verify-only", "--from", from, "--to", to); err != nil || !strings.Contains(out, "same installation") {
		t.Errorf("migrate --verify-only of equal databases: %q, %v", out, err)
	}
	if _, _, err := run(t, NewMain(), "migrate", "--from", from, "--to", to); !errors.Is(err, migrate.ErrTargetNotEmpty) {
		t.Errorf("migrate into a full target: %v; want ErrTargetNotEmpty", err)
	}
	other := dumpDB(t)
	if _, _, err := run(t, NewMain(), "dump", "--dsn", other); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetServerSetting(t.Context(), "memcache_servers", "x:1"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, _, err := run(t, NewMain(), "migrate", "--verify-only", "--from", other, "--to", to); !errors.Is(err, migrate.ErrMismatch) ||
		!strings.Contains(err.Error(), "setting") {
		t.Errorf("migrate --verify-only of different databases: %v; want ErrMismatch naming the setting table", err)
	}
	if _, _, err := run(t, NewMain(), "migrate", "--to", to); err == nil || !strings.Contains(err.Error(), "--from") {
		t.Errorf("migrate without --from: %v; want a usage error naming --from", err)
	}
}
