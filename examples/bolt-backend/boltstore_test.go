package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/store"

	boltstore "example.com/bolt-backend"
)

// helperEnv names the DSN a re-executed test binary opens as a second
// process (TestMain).
const helperEnv = "BOLTSTORE_SECOND_PROCESS_DSN"

func TestMain(m *testing.M) {
	if dsn := os.Getenv(helperEnv); dsn != "" {
		// A second tracker process: open, report, exit.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := store.Open(ctx, dsn)
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(0)
		}
		s.Close()
		fmt.Println("opened")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestConformance(t *testing.T) {
	conformance.Run(t, newHarness(t))
}

func TestRestart(t *testing.T) {
	conformance.RunRestart(t, newHarness(t))
}

// harness runs the suite on a file in a directory of the test's.
type harness struct{ path string }

func newHarness(t *testing.T) *harness {
	return &harness{path: filepath.Join(t.TempDir(), "mogilefs.db")}
}

func (h *harness) Name() string { return boltstore.Scheme }
func (h *harness) DSN() string  { return boltstore.Scheme + "://" + h.path }

// Reset empties every bucket through bbolt itself, as another program
// would, keeping the schema: the layout's format and schema_version. The
// suite calls it with every Store closed, so the file's flock is free; were
// a Store still open, bbolt.Open would time out and Reset say so.
func (h *harness) Reset(ctx context.Context) error {
	if _, err := os.Stat(h.path); errors.Is(err, os.ErrNotExist) {
		return nil // before the first Open there is nothing to empty
	}
	db, err := bolt.Open(h.path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return fmt.Errorf("reset %s (a Store still open?): %w", h.path, err)
	}
	defer db.Close()
	return db.Update(func(tx *bolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var names [][]byte
		if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, bytes.Clone(name))
			return nil
		}); err != nil {
			return err
		}
		var format []byte
		if m := tx.Bucket([]byte("meta")); m != nil {
			format = bytes.Clone(m.Get([]byte("format")))
		}
		for _, n := range names {
			if err := tx.DeleteBucket(n); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(n); err != nil {
				return err
			}
		}
		if format != nil {
			if err := tx.Bucket([]byte("meta")).Put([]byte("format"), format); err != nil {
				return err
			}
		}
		if s := tx.Bucket([]byte("setting")); s != nil {
			return s.Put([]byte("schema_version"), []byte(fmt.Sprint(store.SchemaVersion)))
		}
		return nil
	})
}

// RestartServer: there is no server. Every Store is closed by then, so
// the file must be free: a bbolt.Open of its own proves it.
func (h *harness) RestartServer(context.Context) error {
	db, err := bolt.Open(h.path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("restart: %s still held: %w", h.path, err)
	}
	return db.Close()
}

// FaultsFor: the Store's locks live in its process and die with it, so
// killing a lock's "session" and crashing its owner are both its Close.
func (h *harness) FaultsFor(s *store.Store) conformance.Faults { return closeFaults{s} }

type closeFaults struct{ s *store.Store }

func (f closeFaults) KillLockSession(context.Context, store.Lock) error { return f.s.Close() }
func (f closeFaults) CrashOwner(context.Context) error                  { return f.s.Close() }

func TestOpen(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "meta.db")
	dsn := boltstore.Scheme + "://" + path

	s, err := store.Open(ctx, dsn+"?op_timeout=5s&nosync=false&file_lock_timeout=100ms")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Driver != boltstore.Scheme || !strings.HasPrefix(info.ServerVersion, "bbolt ") {
		t.Errorf("Info() = %+v; want driver %q, server bbolt", info, boltstore.Scheme)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("no database file: %v", err)
	}
	s.Close()

	for _, bad := range []string{
		boltstore.Scheme + ":",                                        // not a URL
		boltstore.Scheme + "://",                                      // no path
		dsn + "?colour=red",                                           // unknown parameter
		dsn + "?nosync=maybe",                                         // bad value
		dsn + "?file_lock_timeout=-1s",                                // bad value
		boltstore.Scheme + "://localhost:1234" + path,                 // a host
		dsn + "?lock_dsn=" + "etcd%3A%2F%2F127.0.0.1%3A2379%2Fmogile", // a lock service
	} {
		if s, err := store.Open(ctx, bad); !errors.Is(err, store.ErrBadDSN) {
			if err == nil {
				s.Close()
			}
			t.Errorf("Open(%q): %v; want ErrBadDSN", bad, err)
		}
	}

	// A tool asking for an existing database gets no new file.
	missing := filepath.Join(dir, "missing.db")
	if s, err := store.Open(ctx, boltstore.Scheme+"://"+missing, store.ExistingOnly()); !errors.Is(err, store.ErrSchemaMismatch) {
		if err == nil {
			s.Close()
		}
		t.Errorf("Open(ExistingOnly) of a missing file: %v; want ErrSchemaMismatch", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(ExistingOnly) created %s: %v", missing, err)
	}
	s, err = store.Open(ctx, dsn, store.ExistingOnly())
	if err != nil {
		t.Fatalf("Open(ExistingOnly) of an existing database: %v", err)
	}
	s.Close()

	// A file that is not a bbolt database is refused and left alone.
	junk := filepath.Join(dir, "junk.db")
	content := bytes.Repeat([]byte("not a database "), 400)
	if err := os.WriteFile(junk, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := store.Open(ctx, boltstore.Scheme+"://"+junk); err == nil {
		s.Close()
		t.Errorf("Open of a file that is no bbolt database succeeded")
	}
	if got, _ := os.ReadFile(junk); !bytes.Equal(got, content) {
		t.Errorf("refused Open changed the file")
	}
}

// Tokens never go backwards: they live in the file, so closing every Store
// and reopening continues from the last grant.
func TestTokensAcrossReopen(t *testing.T) {
	ctx := t.Context()
	dsn := boltstore.Scheme + "://" + filepath.Join(t.TempDir(), "meta.db")
	var last int64
	for round := range 3 {
		s, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			l, err := s.Lock(ctx, "tok", 0)
			if err != nil {
				t.Fatal(err)
			}
			if l.Token() <= last {
				t.Errorf("round %d: token %d after %d; want it to rise", round, l.Token(), last)
			}
			last = l.Token()
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		held, err := s.Lock(ctx, "tok", 0)
		if err != nil {
			t.Fatal(err)
		}
		last = held.Token()
		s.Close() // held goes with its Store
		select {
		case <-held.Lost():
		default:
			t.Errorf("round %d: Lost not closed by Close", round)
		}
	}
}

// A second process opening the file fails at once with ErrInUse's message
// instead of waiting for the first to exit; once the first has closed its
// Stores, the second may open it.
func TestSecondProcess(t *testing.T) {
	ctx := t.Context()
	dsn := boltstore.Scheme + "://" + filepath.Join(t.TempDir(), "meta.db")
	second := func() string {
		t.Helper()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+dsn)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("second process: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	a, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.Open(ctx, dsn) // same process: shares the file
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out := second()
	if !strings.HasPrefix(out, "refused:") || !strings.Contains(out, boltstore.ErrInUse.Error()) {
		t.Errorf("second process opening a held file: %q; want refused with %q", out, boltstore.ErrInUse)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("second process took %v to give up; want it quick", took)
	}
	a.Close()
	if out := second(); !strings.HasPrefix(out, "refused:") {
		t.Errorf("second process while one Store is still open: %q; want refused", out)
	}
	b.Close()
	if out := second(); out != "opened" {
		t.Errorf("second process after every Store closed: %q; want opened", out)
	}
}
