package pglike_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/postgres"
	"github.com/gomogile/gomogile/store/sqlstore"

	pglike "example.com/outside-backend"
)

// envVariant selects, in a child test process, a deliberately broken
// variant of the backend (see TestBrokenVariantsFail).
const envVariant = "PGLIKE_TEST_VARIANT"

func init() {
	store.Register("pglike-leaky", pglike.Driver{WrapLocks: func(b store.LockService) store.LockService {
		return &leakyLocks{wrapped{b}}
	}})
	store.Register("pglike-shared", pglike.Driver{WrapLocks: func(b store.LockService) store.LockService {
		return &sharedLocks{wrapped{b}}
	}})
}

func TestConformance(t *testing.T) {
	scheme := pglike.Scheme
	if v := os.Getenv(envVariant); v != "" {
		scheme = v
	}
	conformance.Run(t, newHarness(t, scheme))
}

// TestBrokenVariantsFail runs the suite, in a child process, on two broken
// variants of the backend and checks that it fails them where it must: a
// lock backend that leaks a goroutine per Acquire fails the teardown check
// (the goroutine is in this module, not gomogile's), and one whose locks
// exclude nobody fails the lock cases.
func TestBrokenVariantsFail(t *testing.T) {
	for _, tc := range []struct {
		scheme, cases string
		want          []string
	}{
		{"pglike-leaky", "LockExclusion", []string{
			"--- FAIL: TestConformance/LockExclusion",
			"goroutines started during the case still running",
			"example.com/outside-backend_test.(*leakyLocks).Acquire",
		}},
		{"pglike-shared", "LockExclusion|LockTryOnce|LockMutualExclusion", []string{
			"--- FAIL: TestConformance/LockExclusion",
			"--- FAIL: TestConformance/LockTryOnce",
			"--- FAIL: TestConformance/LockMutualExclusion",
		}},
	} {
		t.Run(tc.scheme, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestConformance$/^("+tc.cases+")$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), envVariant+"="+tc.scheme)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed the %s variant:\n%s", tc.scheme, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the suite's output on %s lacks %q:\n%s", tc.scheme, w, out)
				}
			}
		})
	}
}

// wrapped forwards a lock mechanism's optional interfaces, which embedding
// the store.LockService interface alone would hide.
type wrapped struct{ store.LockService }

func (w wrapped) Start(ctx context.Context) error {
	if s, ok := w.LockService.(sqlstore.LockStarter); ok {
		return s.Start(ctx)
	}
	return nil
}

func (w wrapped) KillSession(ctx context.Context, l store.LockGrant) error {
	return w.LockService.(sqlstore.LockFaults).KillSession(ctx, l)
}

func (w wrapped) Crash() { w.LockService.(sqlstore.LockFaults).Crash() }

// leakyLocks are correct locks that leave one goroutine behind per grant.
type leakyLocks struct{ wrapped }

func (b *leakyLocks) Acquire(ctx context.Context, name string, timeout time.Duration) (store.LockGrant, error) {
	l, err := b.wrapped.Acquire(ctx, name, timeout)
	if err == nil {
		go func() { select {} }()
	}
	return l, err
}

// sharedLocks grant every name to everyone at once.
type sharedLocks struct{ wrapped }

func (b *sharedLocks) Acquire(ctx context.Context, name string, timeout time.Duration) (store.LockGrant, error) {
	return &sharedLock{name: name, lost: make(chan struct{})}, nil
}

func (b *sharedLocks) KillSession(ctx context.Context, l store.LockGrant) error {
	close(l.(*sharedLock).lost)
	return nil
}

type sharedLock struct {
	name string
	lost chan struct{}
}

func (l *sharedLock) Name() string                  { return l.name }
func (l *sharedLock) Token() int64                  { return 0 }
func (l *sharedLock) Lost() <-chan struct{}         { return l.lost }
func (l *sharedLock) Release(context.Context) error { return nil }

// harness runs the suite on a database of its own, created on the server
// of $GOMOGILE_TEST_POSTGRES_DSN and dropped when the test ends.
type harness struct {
	scheme string
	dsn    string // the backend's DSN
	admin  string // the same database, for database/sql with pgx
}

func newHarness(t *testing.T, scheme string) *harness {
	base := os.Getenv("GOMOGILE_TEST_POSTGRES_DSN")
	if base == "" {
		t.Fatal("$GOMOGILE_TEST_POSTGRES_DSN is unset: this example needs a PostgreSQL server (postgres://user@host:port/db)")
	}
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b [6]byte
	rand.Read(b[:])
	name := "gomogile_pglike_" + hex.EncodeToString(b[:])
	if _, err := db.ExecContext(t.Context(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	admin := u.String()
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			t.Error(err)
			return
		}
		defer db.Close()
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	q := u.Query()
	q.Set("lock_lease", "1s")
	u.RawQuery = q.Encode()
	u.Scheme = scheme
	return &harness{scheme: scheme, dsn: u.String(), admin: admin}
}

func (h *harness) Name() string { return h.scheme }
func (h *harness) DSN() string  { return h.dsn }

// Reset empties every table the backend has: schema 17's, sqlstore's own
// and the lease locks', and sets the lock epoch back to a new database's
// (no lock was ever held, so none waits out a lease).
func (h *harness) Reset(ctx context.Context) error {
	db, err := sql.Open("pgx", h.admin)
	if err != nil {
		return err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n); err != nil || n == 0 {
		return err // before the first Open there is nothing to empty
	}
	tables := append(append(append([]string(nil), sqlstore.Schema17Tables...), sqlstore.OwnTables...), postgres.LockTables...)
	if _, err := db.ExecContext(ctx, "TRUNCATE "+strings.Join(tables, ", ")+" RESTART IDENTITY CASCADE"); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	_, err = db.ExecContext(ctx, "INSERT INTO gomogile_lock_epoch (id, started_at) VALUES (1, '-infinity')")
	return err
}

// pathDriver is a backend of this module that records the DSN the
// registry hands it and opens nothing: a file-based backend needs its
// path exactly as written.
type pathDriver struct{ got chan *store.DSN }

var errNotOpened = errors.New("pathDriver opens nothing")

func (d pathDriver) Open(_ context.Context, dsn *store.DSN) (store.Backend, error) {
	d.got <- dsn
	return nil, errNotOpened
}

// TestOpen_PathArrivesIntact: a DSN of an outside backend reaches it with
// its path as written, leading '/' included.
func TestOpen_PathArrivesIntact(t *testing.T) {
	d := pathDriver{got: make(chan *store.DSN, 1)}
	store.Register("mybackend", d)
	if _, err := store.Open(t.Context(), "mybackend:///var/lib/x.db?op_timeout=2s"); !errors.Is(err, errNotOpened) {
		t.Fatalf("Open error = %v; want the driver's", err)
	}
	got := <-d.got
	if got.Driver != "mybackend" || got.Path != "/var/lib/x.db" || got.OpTimeout != 2*time.Second {
		t.Errorf("driver got %+v; want Driver mybackend, Path /var/lib/x.db, OpTimeout 2s", got)
	}
}
