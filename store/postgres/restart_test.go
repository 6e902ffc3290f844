package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/faultproxy"
	"github.com/gomogile/gomogile/store"
)

// privatePostgres starts a PostgreSQL server of the test's own, which it
// may kill; it is removed when the test ends.
func privatePostgres(t *testing.T) *dbinstance.Postgres {
	t.Helper()
	if err := dbinstance.Available("postgres"); err != nil {
		t.Skipf("no private PostgreSQL instance: %v", err)
	}
	pg, err := dbinstance.StartPostgres(t.Context(), dbinstance.PGOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Cleanup() })
	return pg
}

// privateBouncer starts a PgBouncer of the test's own in transaction
// mode in front of pg; it is removed when the test ends.
func privateBouncer(t *testing.T, pg *dbinstance.Postgres) *dbinstance.PgBouncer {
	t.Helper()
	if err := dbinstance.Available("pgbouncer"); err != nil {
		t.Skipf("no PgBouncer: %v", err)
	}
	b, err := dbinstance.StartPgBouncer(t.Context(), pg.Addr(), dbinstance.BouncerOptions{PoolMode: "transaction", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Cleanup() })
	return b
}

// lostAt reports when l's Lost fires.
func lostAt(l store.Lock) <-chan time.Time {
	c := make(chan time.Time, 1)
	go func() {
		<-l.Lost()
		c <- time.Now()
	}()
	return c
}

// grab takes name on s, retrying through the errors of a server that is
// coming back, for at most d; it reports when the grant came.
func grab(t *testing.T, s *store.Store, name string, d time.Duration) (store.Lock, time.Time) {
	t.Helper()
	until := time.Now().Add(d)
	for {
		l, err := s.Lock(t.Context(), name, time.Until(until))
		if err == nil {
			return l, time.Now()
		}
		if time.Now().After(until) || errors.Is(err, store.ErrLockTimeout) {
			t.Fatalf("Lock(%q) after the restart: %v", name, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLocks_ServerCrashRestart: the server is killed (SIGKILL) while a lock
// is held, and restarted; crash recovery empties the lock tables. Another
// Store asking at once must not be granted the lock before the holder's
// Lost has fired, in the default mode and in pooler mode (lock_notify=false,
// no listener to notice the crash at once). In CutOff the holder cannot
// notice the crash at all until its deadline: its connections go through a
// proxy that is partitioned from just before the kill until the other
// Store's grant, as a pooler holds a client's queries while its server is
// down (or as the network fails with the server). In PgBouncer the holder
// reaches the server through a real transaction-mode PgBouncer, whose
// client sessions outlive the server's. These two have a lease longer than
// a restart takes here, so that an acquirer that does not wait (the old
// backend) is granted while the holder still believes it holds.
func TestLocks_ServerCrashRestart(t *testing.T) {
	pg := privatePostgres(t) // one for the modes: initdb is slow
	pooler := []string{"lock_notify=false", "default_query_exec_mode=simple_protocol"}
	for _, mode := range []struct {
		name            string
		params          []string
		lease           time.Duration
		runs            int
		cutOff, bouncer bool
	}{
		{"Default", nil, 2 * time.Second, 2, false, false},
		{"Pooler", pooler, 2 * time.Second, 3, false, false},
		{"CutOff", pooler, 10 * time.Second, 1, true, false},
		{"PgBouncer", pooler, 10 * time.Second, 1, false, true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			lease := mode.lease
			dsn := withParams(pg.DSN("test"), append([]string{"lock_lease=" + lease.String()}, mode.params...)...)
			holderDSN := dsn
			if mode.bouncer {
				holderDSN = behind(t, dsn, privateBouncer(t, pg).Addr())
			}
			var proxy *faultproxy.Proxy
			if mode.cutOff {
				var err error
				if proxy, err = faultproxy.Start(pg.Addr(), faultproxy.Options{Protocol: faultproxy.Postgres}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { proxy.Close() })
				holderDSN = behind(t, dsn, proxy.Addr())
			}
			var gaps []time.Duration
			for run := range mode.runs {
				holder, other := open(t, holderDSN), open(t, dsn)
				name := fmt.Sprintf("crash/%d", run)
				// After the previous crash (of this mode or another) no
				// lock is granted until the epoch is a lease old.
				l := lock(t, holder, name, 2*lease)
				lost := lostAt(l)
				// A random point of the renewal cycle.
				time.Sleep(time.Duration(rand.Int64N(int64(lease / 3))))
				if proxy != nil {
					proxy.Blackhole(true)
				}
				if err := pg.Kill(); err != nil {
					t.Fatal(err)
				}
				killed := time.Now()
				if err := pg.Start(t.Context()); err != nil {
					t.Fatal(err)
				}
				t.Logf("run %d: server back %v after the kill", run, time.Since(killed))
				lo, granted := grab(t, other, name, 10*lease)
				if proxy != nil {
					proxy.Blackhole(false)
				}
				var at time.Time
				select {
				case at = <-lost:
				default:
					t.Fatalf("run %d: another Store was granted the lock %v after the kill while the holder's Lost was still open", run, granted.Sub(killed))
				}
				gap := granted.Sub(at)
				gaps = append(gaps, gap)
				if gap <= 0 {
					t.Errorf("run %d: another Store was granted the lock %v before the holder's Lost", run, -gap)
				}
				// Lost by the deadline: the last renewal was before the kill.
				if d := at.Sub(killed); d > lease {
					t.Errorf("run %d: Lost fired %v after the kill; want by the holder's deadline, within %v", run, d, lease)
				}
				lo.Release(t.Context())
				holder.Close()
				other.Close()
			}
			slices.Sort(gaps)
			t.Logf("lease %v: holder's Lost to another Store's grant after a crash restart: %v", lease, gaps)
		})
	}
}

// TestLocks_FailoverPromotedStandby: the primary dies while the holder is
// cut off from it (no FIN or RST reaches the holder, as when its host loses
// power), and a standby that has been running for longer than a lease is
// promoted. Its lock tables are empty (unlogged tables are not replicated),
// and its pg_postmaster_start_time() is long past; still, a Store on it
// must not be granted the lock before the holder's Lost has fired. The
// lease is longer than a promotion takes here, so that an acquirer that
// does not wait (the old backend) is granted while the holder still
// believes it holds.
func TestLocks_FailoverPromotedStandby(t *testing.T) {
	const lease = 10 * time.Second
	primary := privatePostgres(t)
	dsn := withParams(primary.DSN("test"), "lock_lease="+lease.String())
	open(t, dsn).Close() // the schema, replicated to the standby
	standby, err := primary.StartStandby(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { standby.Cleanup() })

	proxy, err := faultproxy.Start(primary.Addr(), faultproxy.Options{Protocol: faultproxy.Postgres})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	holder := open(t, behind(t, dsn, proxy.Addr()))
	l := lock(t, holder, "failover", 0)
	lost := lostAt(l)
	// The standby's start time is now more than a lease in the past, as it
	// would be on any real standby.
	time.Sleep(lease + time.Duration(rand.Int64N(int64(lease/3))))

	proxy.Blackhole(true)
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	failed := time.Now()
	if err := standby.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("standby promoted %v after the primary died", time.Since(failed))
	other := open(t, withParams(standby.DSN("test"), "lock_lease="+lease.String()))
	lo, granted := grab(t, other, "failover", 10*lease)
	defer lo.Release(context.Background())
	select {
	case at := <-lost:
		t.Logf("holder's Lost %v after the failure, the promoted standby's grant %v after that", at.Sub(failed), granted.Sub(at))
		if !at.Before(granted) {
			t.Errorf("granted on the promoted standby %v before the holder's Lost", at.Sub(granted))
		}
		if d := at.Sub(failed); d > lease {
			t.Errorf("Lost fired %v after the failure; want by the holder's deadline, within %v", d, lease)
		}
	default:
		t.Fatalf("granted on the promoted standby %v after the failure while the holder's Lost was still open", granted.Sub(failed))
	}
}

// restartHarness is the conformance harness on a private server that the
// suite may restart (a fast shutdown and a start).
type restartHarness struct {
	*harness
	pg *dbinstance.Postgres
}

func (h restartHarness) RestartServer(ctx context.Context) error {
	if err := h.pg.Stop(); err != nil {
		return err
	}
	return h.pg.Start(ctx)
}

// TestConformanceRestart runs the suite's restart cases (fencing tokens
// across a server restart) on a private server. The restart is a clean
// one: after a crash the lock tables start a new epoch and nothing is
// granted for a lease (# Restarts and failover), which the suite's
// Lock(name, 0) right after the restart does not wait for.
func TestConformanceRestart(t *testing.T) {
	pg := privatePostgres(t)
	conformance.RunRestart(t, restartHarness{
		harness: &harness{dsn: withParams(pg.DSN("test"), "lock_lease=1s")},
		pg:      pg,
	})
}

// Origin: the suite ran on a private instance.
func (h *restartHarness) Origin() string { return "private instance " + h.pg.Addr() }
