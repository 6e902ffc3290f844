package torture_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/internal/testkit/torture"
	"github.com/gomogile/gomogile/store"
)

// The test binary is also the torture's tracker process: the coordinator
// re-executes it with torture.WorkerEnv set.
func TestMain(m *testing.M) {
	torture.MaybeWorker()
	// testdb.Main removes the test containers this binary started, when it
	// is their last user.
	os.Exit(testdb.Main(m))
}

func logf(t *testing.T) func(string, ...any) {
	return func(format string, args ...any) {
		t.Logf("%s "+format, append([]any{time.Now().Format("15:04:05.000000")}, args...)...)
	}
}

// short is the short edition: every fault kind that applies, a few times;
// long runs are the command's job (make torture).
func short(t *testing.T, dsn string, d time.Duration) torture.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+90*time.Second)
	defer cancel()
	rep, err := torture.Run(ctx, torture.Config{
		DSN:        dsn,
		Duration:   d,
		Workers:    3,
		FaultEvery: 600 * time.Millisecond,
		Seed:       20261201,
		Logf:       logf(t),
	})
	t.Log("\n" + rep.String())
	if err != nil {
		t.Fatalf("torture run: %v", err)
	}
	judge(t, rep)
	return rep
}

// judge fails the test for every violated invariant, and for a run that
// did nothing or made no fault of a kind that applies.
func judge(t *testing.T, rep torture.Report) {
	t.Helper()
	for _, c := range rep.Failed() {
		t.Errorf("invariant violated: %s: %s", c.Name, c.Detail)
	}
	// A run that did nothing proves nothing.
	for _, op := range []string{"lock", "set", "commit", "add_file_on", "lease", "finish"} {
		if rep.Count(op, "ok") == 0 {
			t.Errorf("no successful %s: the load did not run", op)
		}
	}
	for _, k := range rep.Faults.Applicable {
		if rep.Faults.Count[k] == 0 {
			t.Errorf("fault %s applies but was never made: %v", k, rep.Faults.Count)
		}
	}
	if !strings.HasPrefix(rep.Summary(), "torture: backend=") {
		t.Errorf("summary line %q", rep.Summary())
	}
	t.Log(rep.Summary())
}

func TestShortSQLite(t *testing.T) {
	short(t, "sqlite://"+filepath.Join(t.TempDir(), "torture.db"), 12*time.Second)
}

func TestShortMySQL(t *testing.T) {
	short(t, testdb.MySQL(t), 15*time.Second)
}

func TestShortPostgres(t *testing.T) {
	short(t, testdb.Postgres(t), 15*time.Second)
}

// The program must be able to fail: each negative control, a real Store
// broken on purpose in the worker processes, must trip its invariant.
func TestNegativeControls(t *testing.T) {
	backends := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "broken.db") },
		"mysql":    func(t *testing.T) string { return testdb.MySQL(t) },
		"postgres": func(t *testing.T) string { return testdb.Postgres(t) },
	}
	for _, b := range []string{"sqlite", "mysql", "postgres"} {
		for _, c := range torture.Controls() {
			if c.Locks != "" {
				continue // TestEtcdLocks runs it
			}
			t.Run(b+"/"+c.Name, func(t *testing.T) {
				d := c.Duration
				if d == 0 {
					d = 6 * time.Second
				}
				// A control shows when its fault meets the load at the
				// right moment; on a loaded machine a short run may miss.
				// It must show in one of five runs, each on a database of
				// its own. (PostgreSQL's late-lost needs a session kill to
				// land while another tracker waits for the holder's lock:
				// about half of its 15 s runs showed it here, so a run is
				// now 30 s, and three misses in a row, one CI run in ten,
				// were no longer rare enough.)
				tripControl(t, c, 5, d, 60*time.Second, func() torture.Config {
					return torture.Config{DSN: backends[b](t)}
				})
			})
		}
	}
}

// tripControl runs negative control c for d (each run on what base
// returns: a database of its own) until its invariant is reported
// violated, failing t after attempts runs that did not show it.
func tripControl(t *testing.T, c torture.Control, attempts int, d, slack time.Duration, base func() torture.Config) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		cfg := base()
		cfg.Duration, cfg.Workers, cfg.FaultEvery, cfg.Faults = d, 3, c.FaultEvery, c.Faults
		cfg.Seed, cfg.Broken = uint64(7+attempt), c.Name
		ctx, cancel := context.WithTimeout(context.Background(), d+slack)
		rep, err := torture.Run(ctx, cfg)
		cancel()
		if err != nil {
			t.Fatalf("torture run: %v", err)
		}
		if ch, ok := rep.Check(c.Invariant); ok && !ch.OK {
			t.Logf("%s: %s", c.Name, rep.Summary())
			return
		}
		if attempt == attempts {
			t.Fatalf("negative control %s (locks %q) did not trip %q in %d runs; the last:\n%s", c.Name, c.Locks, c.Invariant, attempt, rep.String())
		}
		t.Logf("run %d: %s did not show: %s", attempt, c.Name, rep.Summary())
	}
}

// The report must not hide a run that could not happen.
func TestBadDSN(t *testing.T) {
	_, err := torture.Run(context.Background(), torture.Config{DSN: "nosuch://x/y", Duration: time.Millisecond})
	if !errors.Is(err, store.ErrNoDriver) && !errors.Is(err, store.ErrBadDSN) {
		t.Fatalf("Run with an unknown backend: %v, want ErrNoDriver or ErrBadDSN", err)
	}
}

// private runs the short edition on a private server the run starts,
// crashes and removes; missing server binaries skip, or fail under CI=true.
// A set option changes the run's Config.
func private(t *testing.T, mode, kind string, d time.Duration, set ...func(torture.Config) torture.Config) torture.Report {
	t.Helper()
	if err := dbinstance.Available(kind); err != nil {
		testdb.Unavailable(t, kind, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+120*time.Second)
	defer cancel()
	cfg := torture.Config{
		Private:    mode,
		Duration:   d,
		Workers:    3,
		FaultEvery: 600 * time.Millisecond,
		Seed:       20261201,
		Logf:       logf(t),
	}
	for _, f := range set {
		cfg = f(cfg)
	}
	rep, err := torture.Run(ctx, cfg)
	t.Log("\n" + rep.String())
	if err != nil {
		t.Fatalf("torture run: %v", err)
	}
	judge(t, rep)
	return rep
}

func TestShortPrivatePostgres(t *testing.T) {
	private(t, torture.PrivatePostgres, "postgres", 20*time.Second)
}

func TestShortPrivateMariaDB(t *testing.T) {
	private(t, torture.PrivateMySQL, "mariadb", 20*time.Second)
}

// The pooler is killed once in the middle, as PgBouncer 1.18's own
// assertion failures end it now and then under this load: the run must
// start it again, say so, and pass (every tracker process opening its
// Stores within OpenBound).
func TestShortPgBouncer(t *testing.T) {
	if err := dbinstance.Available("postgres"); err != nil {
		testdb.Unavailable(t, "postgres", err.Error())
	}
	rep := private(t, torture.PrivatePgBouncer, "pgbouncer", 20*time.Second, func(c torture.Config) torture.Config {
		return torture.KillPoolerAfter(c, 8*time.Second)
	})
	// At least the one kill: PgBouncer may also die by itself under this
	// load, and every death is restarted alike (the count is all of them).
	if rep.PoolerRestarts < 1 {
		t.Errorf("PoolerRestarts = %d; want at least 1 (killed once)", rep.PoolerRestarts)
	}
	if want := fmt.Sprintf(" pooler_restarts=%d", rep.PoolerRestarts); !strings.HasSuffix(rep.Summary(), want) {
		t.Errorf("summary %q does not end with the pooler's restarts (%q)", rep.Summary(), want)
	}
	if _, ok := rep.Check("workers: every tracker process opened its Stores within OpenBound"); !ok {
		t.Errorf("no check of the Stores' opening")
	}
}

// On a 3-node Galera cluster with etcd locks, the processes writing
// through every node: every kind, dbcrash killing node 2 or 3 and having
// it rejoin. What it guards most is fencing across nodes: a stale holder's
// write through one node after the next grant was fenced in through
// another (TestGalera_FenceCheckCertified in store/mysql).
func TestShortGalera(t *testing.T) {
	if err := dbinstance.Available("etcd"); err != nil {
		testdb.Unavailable(t, "etcd", err.Error())
	}
	rep := private(t, torture.PrivateGalera, "galera", 25*time.Second, func(c torture.Config) torture.Config {
		c.Locks = torture.LocksEtcd
		c.FaultEvery = 400 * time.Millisecond
		return c
	})
	if !strings.Contains(rep.Summary(), " dbcrash=") || strings.Contains(rep.Summary(), " dbcrash=-") {
		t.Errorf("summary %q: no node was killed", rep.Summary())
	}
}

// Galera's GET_LOCK is per node: the run refuses to start without etcd
// locks, before it starts anything.
func TestGaleraNeedsLockService(t *testing.T) {
	_, err := torture.Run(context.Background(), torture.Config{Private: torture.PrivateGalera, Duration: time.Second})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "--locks etcd") {
		t.Fatalf("Run on private galera without etcd locks: %v; want ErrInvalid naming --locks etcd", err)
	}
}

// With etcd locks: the short edition on a private MariaDB, every kind
// including the etcd member and leader kills and the etcd partitions, then
// the unfenced control on etcd locks, which must erase a counter
// increment. Skipped (failed under CI) without etcd or MariaDB binaries.
func TestEtcdLocks(t *testing.T) {
	for _, kind := range []string{"etcd", "mariadb"} {
		if err := dbinstance.Available(kind); err != nil {
			testdb.Unavailable(t, kind, err.Error())
		}
	}
	t.Run("Short", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		rep, err := torture.Run(ctx, torture.Config{
			Private:    torture.PrivateMySQL,
			Locks:      torture.LocksEtcd,
			Duration:   15 * time.Second,
			Workers:    3,
			FaultEvery: 400 * time.Millisecond,
			Seed:       20261204,
			Logf:       logf(t),
		})
		t.Log("\n" + rep.String())
		if err != nil {
			t.Fatalf("torture run: %v", err)
		}
		judge(t, rep)
		for _, want := range []string{" etcdkill=", " etcdleader=", " etcdpartition="} {
			if strings.Contains(rep.Summary(), want+"-") {
				t.Errorf("summary %q: %s does not apply with etcd locks", rep.Summary(), strings.TrimSpace(want))
			}
		}
	})
	for _, c := range torture.Controls() {
		if c.Locks != torture.LocksEtcd {
			continue
		}
		t.Run("Control/"+c.Name, func(t *testing.T) {
			// As TestNegativeControls: it must show in one of three runs.
			tripControl(t, c, 3, c.Duration, 90*time.Second, func() torture.Config {
				return torture.Config{Private: torture.PrivateMySQL, Locks: c.Locks}
			})
		})
	}
}
