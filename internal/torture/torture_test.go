package torture_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testdb"
	"github.com/gomogile/gomogile/internal/torture"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// smoke is a bounded run with every kind of fault; long runs are the
// command's job (cmd/gomogile-torture).
func smoke(t *testing.T, dsn string) torture.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	cfg := torture.Config{
		DSN:        dsn,
		Duration:   8 * time.Second,
		Trackers:   3,
		Workers:    3,
		KillEvery:  700 * time.Millisecond,
		CrashEvery: time.Second,
		Seed:       20261129,
		Logf: func(format string, args ...any) {
			t.Logf("%s "+format, append([]any{time.Now().Format("15:04:05.000000")}, args...)...)
		},
	}
	before := runtime.NumGoroutine()
	rep, err := torture.Run(ctx, cfg)
	t.Log("\n" + rep.String())
	if err != nil {
		t.Fatalf("torture run: %v", err)
	}
	// Every tracker, watcher and worker is gone once Run returns; drivers
	// may take a moment to end their connections' goroutines.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before Run, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range rep.Failed() {
		t.Errorf("invariant violated: %s: %s", c.Name, c.Detail)
	}
	// A run that did nothing proves nothing.
	for _, op := range []string{"lock", "set", "commit", "add_file_on", "lease", "finish"} {
		if rep.Count(op, "ok") == 0 {
			t.Errorf("no successful %s: the load did not run", op)
		}
	}
	if rep.Faults.Crashes == 0 || rep.Faults.HoldsCrashed == 0 {
		t.Errorf("faults: %+v: no lock holder was crashed", rep.Faults)
	}
	return rep
}

func TestSmokeSQLite(t *testing.T) {
	rep := smoke(t, "sqlite://"+filepath.Join(t.TempDir(), "torture.db"))
	if rep.Faults.Closes == 0 {
		t.Errorf("faults: %+v: no tracker was closed in place of a session kill", rep.Faults)
	}
}

func TestSmokeMySQL(t *testing.T) {
	rep := smoke(t, testdb.MySQL(t))
	if rep.Faults.SessionsKilled == 0 {
		t.Errorf("faults: %+v: no session was killed", rep.Faults)
	}
}

func TestSmokePostgres(t *testing.T) {
	rep := smoke(t, testdb.Postgres(t))
	if rep.Faults.SessionsKilled == 0 {
		t.Errorf("faults: %+v: no session was killed", rep.Faults)
	}
}

// The tool must be able to fail: a real Store broken on purpose, in two
// ways, each must trip its invariant.

// sharedLock makes every Lock succeed at once, as a backend that took a
// lock on a pooled connection or counted nested locks would.
type sharedLock struct{ store.Store }

func (s sharedLock) Lock(ctx context.Context, name string, timeout time.Duration) (store.Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &fakeHeld{name: name, lost: make(chan struct{})}, nil
}

type fakeHeld struct {
	name string
	lost chan struct{}
}

func (l *fakeHeld) Name() string                      { return l.name }
func (l *fakeHeld) Token() int64                      { return 0 }
func (l *fakeHeld) Lost() <-chan struct{}             { return l.lost }
func (l *fakeHeld) Release(ctx context.Context) error { return nil }

// rawFileOn adds file_on rows behind the Store's back, without devcount,
// as a backend that forgot the devcount update would.
type rawFileOn struct {
	store.Store
	db *sqlstore.Store
}

func (s rawFileOn) AddFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	res, err := s.db.DB().ExecContext(ctx, "INSERT OR IGNORE INTO file_on (fid, devid) VALUES (?, ?)", fid, devid)
	if err != nil {
		return false, fmt.Errorf("raw insert: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func TestCatchesBrokenStores(t *testing.T) {
	cases := []struct {
		name  string
		wrap  func(store.Store) store.Store
		trips []string
	}{
		{"shared lock", func(s store.Store) store.Store { return sharedLock{s} },
			[]string{"A: mutual exclusion", "B: lock-guarded counters"}},
		{"devcount not kept", func(s store.Store) store.Store {
			ss, ok := s.(*sqlstore.Store)
			if !ok {
				t.Errorf("%T is not an SQL store", s)
				return s
			}
			return rawFileOn{Store: s, db: ss}
		}, []string{"files: devcount"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rep, err := torture.Run(ctx, torture.Config{
				DSN:      "sqlite://" + filepath.Join(t.TempDir(), "broken.db"),
				Duration: 3 * time.Second,
				Trackers: 2,
				Workers:  3,
				Seed:     7,
				Wrap:     c.wrap,
			})
			if err != nil {
				t.Fatalf("torture run: %v", err)
			}
			if rep.OK() {
				t.Fatalf("a broken store passed:\n%s", rep.String())
			}
			for _, name := range c.trips {
				ch, ok := rep.Check(name)
				if !ok || ch.OK {
					t.Errorf("invariant %q did not trip:\n%s", name, rep.String())
				}
			}
			t.Log("\n" + rep.String())
		})
	}
}

// The report must not hide a run that could not happen.
func TestBadDSN(t *testing.T) {
	_, err := torture.Run(context.Background(), torture.Config{DSN: "nosuch://x/y", Duration: time.Millisecond})
	if !errors.Is(err, store.ErrNoDriver) && !errors.Is(err, store.ErrBadDSN) {
		t.Fatalf("Run with an unknown backend: %v, want ErrNoDriver or ErrBadDSN", err)
	}
}
