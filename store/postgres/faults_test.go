package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/faultproxy"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/postgres"
)

// childDSNEnv makes the test binary run TestLocks_ChildHolder as a lock
// holder in a process of its own, which a test can SIGSTOP.
const childDSNEnv = "GOMOGILE_PG_CHILD_DSN"

// TestLocks_ChildHolder is not a test: it is the process that
// TestLocks_PausedDuplicateLearnsLoss pauses. It takes lock "paused",
// reports "held", and when Lost fires reports "lost" and what a further
// Lock returns; it exits when its stdin closes.
func TestLocks_ChildHolder(t *testing.T) {
	dsn := os.Getenv(childDSNEnv)
	if dsn == "" {
		t.Skip("runs only as the child of TestLocks_PausedDuplicateLearnsLoss")
	}
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		fmt.Printf("error open: %v\n", err)
		return
	}
	defer s.Close()
	l, err := s.Lock(ctx, "paused", 0)
	if err != nil {
		fmt.Printf("error lock: %v\n", err)
		return
	}
	fmt.Println("held")
	<-l.Lost()
	fmt.Println("lost")
	// Give the renewer time to try to register again.
	time.Sleep(time.Second)
	_, err = s.Lock(ctx, "paused-2", 0)
	switch {
	case errors.Is(err, store.ErrDuplicate):
		fmt.Println("relock duplicate")
	default:
		fmt.Printf("relock %v\n", err)
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// TestLocks_PausedDuplicateLearnsLoss: a holder paused (SIGSTOP) past its
// lease is taken over by a Store with its identity; resumed, it fires Lost
// at once, and it does not evict the new owner back: its next Lock is
// refused with ErrDuplicate, and the new owner keeps its lock.
func TestLocks_PausedDuplicateLearnsLoss(t *testing.T) {
	base := testdb.Postgres(t)
	dsn := withParams(base, "lock_owner=tracker-paused:7001")
	// Create the schema first, so the child's Open is quick.
	s0, err := store.Open(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	s0.Close()

	c := testdb.StartChild(t, []string{"-test.run=^TestLocks_ChildHolder$", "-test.count=1"}, childDSNEnv+"="+dsn)
	next := func(within time.Duration) string {
		t.Helper()
		switch line := c.Next(within); line {
		case "(exited)":
			t.Fatalf("child exited early")
		case "(nothing)":
			t.Fatalf("no word from the child within %v", within)
		default:
			return line
		}
		return ""
	}
	if got := next(30 * time.Second); got != "held" {
		t.Fatalf("child: %q; want held", got)
	}

	if err := c.Cmd.Process.Signal(sigStop); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	successor := open(t, dsn)
	t.Logf("successor opened %v into the pause (lease %v)", time.Since(stopped), lease)
	l := lock(t, successor, "paused", 0)

	if err := c.Cmd.Process.Signal(sigCont); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	if got := next(lease); got != "lost" {
		t.Fatalf("child after resuming: %q; want lost", got)
	}
	t.Logf("resumed child fired Lost %v after SIGCONT", time.Since(resumed))
	if got := next(5 * time.Second); got != "relock duplicate" {
		t.Errorf("resumed child's next Lock: %q; want it refused with %v", strings.TrimPrefix(got, "relock "), store.ErrDuplicate)
	}
	// Well past the child's renewal attempts, the successor still holds.
	time.Sleep(lease)
	if isClosed(l.Lost()) {
		t.Fatalf("the successor's lock was lost: the resumed child evicted it")
	}
	if id, _ := postgres.OwnerID(successor); id == 0 {
		t.Fatalf("successor has no incarnation")
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("successor's Release: %v", err)
	}
}

// behind returns dsn with its host and port replaced by addr (a proxy's).
func behind(t testing.TB, dsn, addr string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

// hostPort is the server address dsn names.
func hostPort(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestLocks_PartitionLosesBeforeRegrant: every connection of the holder is
// partitioned away (no FIN, no RST) for longer than the lease, starting at a
// random point of its renewal cycle. Lost fires by the holder's own
// deadline, whatever its renewer was doing, and before a Store that can
// still reach the server is granted the lock.
func TestLocks_PartitionLosesBeforeRegrant(t *testing.T) {
	dsn := testdb.Postgres(t)
	proxy, err := faultproxy.Start(hostPort(t, dsn), faultproxy.Options{Protocol: faultproxy.Postgres})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	holderDSN := behind(t, dsn, proxy.Addr())
	other := open(t, dsn)

	const runs = 6
	var gaps, losses []time.Duration
	for run := range runs {
		holder, err := store.Open(t.Context(), holderDSN)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("partition/%d", run)
		l := lock(t, holder, name, 0)
		// A random point of the renewal and reaping cycles.
		time.Sleep(time.Duration(rand.Int64N(int64(lease))))
		proxy.Blackhole(true)
		cut := time.Now()

		granted := make(chan time.Time, 1)
		go func() {
			lo, err := other.Lock(t.Context(), name, 10*lease)
			if err != nil {
				t.Errorf("run %d: other Store's Lock: %v", run, err)
				close(granted)
				return
			}
			granted <- time.Now()
			lo.Release(context.Background())
		}()
		var lostAt time.Time
		select {
		case <-l.Lost():
			lostAt = time.Now()
		case at := <-granted:
			proxy.Blackhole(false)
			holder.Close()
			t.Fatalf("run %d: another Store was granted the lock %v into the partition, before the holder's Lost", run, at.Sub(cut))
		case <-time.After(10 * lease):
			t.Fatalf("run %d: Lost not closed %v into the partition", run, 10*lease)
		}
		at, ok := <-granted
		proxy.Blackhole(false)
		holder.Close()
		if !ok {
			t.FailNow()
		}
		loss, gap := lostAt.Sub(cut), at.Sub(lostAt)
		losses, gaps = append(losses, loss), append(gaps, gap)
		if gap <= 0 {
			t.Errorf("run %d: granted to another Store %v before the holder's Lost", run, -gap)
		}
		// The deadline is at most lease - lease/5 after the partition began
		// (the last renewal was sent before it); allow the margin again
		// for a loaded machine's timer lateness.
		if loss > lease {
			t.Errorf("run %d: Lost fired %v into the partition; want by the deadline, under %v", run, loss, lease)
		}
	}
	slices.Sort(gaps)
	slices.Sort(losses)
	t.Logf("lease %v: Lost after partition start %v; Lost to other's grant %v", lease, losses, gaps)
}

// TestLocks_UnreachableIsUnavailable: with the server unreachable (the
// proxy in front of it gone: connections refused), Lock fails with
// store.ErrUnavailable, not with a bare driver error or a lock timeout that
// would blame a holder.
func TestLocks_UnreachableIsUnavailable(t *testing.T) {
	dsn := testdb.Postgres(t)
	proxy, err := faultproxy.Start(hostPort(t, dsn), faultproxy.Options{Protocol: faultproxy.Postgres})
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, behind(t, dsn, proxy.Addr()))
	lock(t, s, "reachable", 0).Release(t.Context())
	proxy.Close()
	for _, timeout := range []time.Duration{0, 300 * time.Millisecond, lease} {
		_, err := s.Lock(t.Context(), "unreachable", timeout)
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Lock(%v) with the server unreachable: got %v; want %v", timeout, err, store.ErrUnavailable)
		} else {
			t.Logf("Lock(%v): %v", timeout, err)
		}
	}
}
