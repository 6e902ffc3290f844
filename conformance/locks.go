package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// mustLock takes name on s, failing the test otherwise.
func mustLock(t *testing.T, s *store.Store, name string, timeout time.Duration) store.Lock {
	t.Helper()
	l, err := s.Lock(t.Context(), name, timeout)
	ok(t, err, "Lock(%q, %v)", short(name), timeout)
	if l.Name() != name {
		t.Fatalf("Lock(%q).Name() = %q; want %q", short(name), short(l.Name()), short(name))
	}
	return l
}

// mustRelease releases l, failing the test otherwise.
func mustRelease(t *testing.T, l store.Lock) {
	t.Helper()
	ok(t, l.Release(t.Context()), "Release(%q)", short(l.Name()))
}

// heldElsewhere checks that name is taken: s cannot get it with timeout 0.
func heldElsewhere(t *testing.T, s *store.Store, name string) {
	t.Helper()
	l, err := s.Lock(t.Context(), name, 0)
	if err == nil {
		l.Release(t.Context())
		t.Fatalf("Lock(%q, 0) by another Store succeeded; want %v: the lock should be held", short(name), store.ErrLockTimeout)
	}
	isErr(t, err, store.ErrLockTimeout, "Lock(%q, 0) while held by another Store", short(name))
}

// notLost checks that Lost has not fired.
func notLost(t *testing.T, l store.Lock) {
	t.Helper()
	if closed(l.Lost()) {
		t.Fatalf("Lost() of %q is closed; want open: the lock was never lost", short(l.Name()))
	}
}

func testLockExclusion(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	a, b := e.open(t), e.open(t)

	la := mustLock(t, a, name, 0)
	heldElsewhere(t, b, name)
	_, err := b.Lock(t.Context(), name, 200*time.Millisecond)
	isErr(t, err, store.ErrLockTimeout, "second Store Lock(%q, 200ms) while held", name)
	notLost(t, la)

	mustRelease(t, la)
	lb := mustLock(t, b, name, 0)
	heldElsewhere(t, a, name)
	mustRelease(t, lb)
	mustRelease(t, mustLock(t, a, name, 0))
}

func testLockTimeoutNotEarly(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	a, b := e.open(t), e.open(t)
	l := mustLock(t, a, name, 0)
	for _, timeout := range []time.Duration{100 * time.Millisecond, 700 * time.Millisecond} {
		start := time.Now()
		_, err := b.Lock(t.Context(), name, timeout)
		took := time.Since(start)
		isErr(t, err, store.ErrLockTimeout, "Lock(%q, %v) while held", name, timeout)
		if took < timeout {
			t.Errorf("Lock(%v) gave up after %v; want no earlier than the timeout", timeout, took)
		}
		if took > timeout+timingSlack {
			t.Errorf("Lock(%v) gave up after %v; want at most %v", timeout, took, timeout+timingSlack)
		}
	}
	notLost(t, l)
	heldElsewhere(t, b, name) // the timed-out waits took nothing away
	mustRelease(t, l)
}

func testLockTryOnce(t *testing.T, e *env) {
	name, free := lockName(t, ""), lockName(t, "/free")
	e.expectFree(t, name, free)
	a, b := e.open(t), e.open(t)
	l := mustLock(t, a, name, 0)
	start := time.Now()
	_, err := b.Lock(t.Context(), name, 0)
	took := time.Since(start)
	isErr(t, err, store.ErrLockTimeout, "Lock(%q, 0) while held", name)
	if took > timingSlack {
		t.Errorf("Lock(0) on a held name took %v; want one try, at most %v", took, timingSlack)
	}
	heldElsewhere(t, b, name)
	notLost(t, l)
	lf := mustLock(t, b, free, 0)
	mustRelease(t, lf)
	mustRelease(t, l)
}

func testLockContextCancel(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	a, b, c := e.open(t), e.open(t), e.open(t)
	l := mustLock(t, a, name, 0)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		lb, err := b.Lock(ctx, name, 30*time.Second)
		if err == nil {
			lb.Release(context.Background())
		}
		done <- err
	}()
	// Let the waiter really wait before cancelling it.
	time.Sleep(200 * time.Millisecond)
	cancelled := time.Now()
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(timingSlack + 5*time.Second):
		t.Fatalf("Lock still waiting %v after its context was cancelled", time.Since(cancelled))
	}
	if took := time.Since(cancelled); took > timingSlack {
		t.Errorf("Lock returned %v after cancellation; want at most %v", took, timingSlack)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a cancelled context: got error %v; want %v", err, context.Canceled)
	}
	notLost(t, l)
	heldElsewhere(t, c, name)

	// The abandoned wait must not turn into a hold once a lets go.
	mustRelease(t, l)
	lc, err := c.Lock(t.Context(), name, 2*time.Second)
	ok(t, err, "Lock after the holder released and the cancelled waiter gave up")

	// A context already done when the wait would begin ends it at once.
	start := time.Now()
	_, err = b.Lock(ctx, name, 10*time.Second)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Lock of a held name with a cancelled context: got error %v; want %v", err, context.Canceled)
	}
	if took := time.Since(start); took > timingSlack {
		t.Errorf("Lock with a cancelled context took %v; want at most %v", took, timingSlack)
	}
	notLost(t, lc)
	heldElsewhere(t, a, name)
	mustRelease(t, lc)
}

func testLockContextDeadline(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	a, b := e.open(t), e.open(t)
	l := mustLock(t, a, name, 0)

	const d = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	start := time.Now()
	_, err := b.Lock(ctx, name, 30*time.Second)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock(30s) with a %v context deadline: got error %v; want %v", d, err, context.DeadlineExceeded)
	}
	if took > d+timingSlack {
		t.Errorf("Lock returned after %v; want at most %v", took, d+timingSlack)
	}
	notLost(t, l)
	mustRelease(t, l)
	mustRelease(t, mustLock(t, a, name, 2*time.Second))
}

func testLockNotReentrant(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	a, b := e.open(t), e.open(t)
	l := mustLock(t, a, name, 0)

	_, err := a.Lock(t.Context(), name, 0)
	isErr(t, err, store.ErrLockTimeout, "same Store Lock(%q, 0) while it holds it", name)
	start := time.Now()
	_, err = a.Lock(t.Context(), name, 300*time.Millisecond)
	isErr(t, err, store.ErrLockTimeout, "same Store Lock(%q, 300ms) while it holds it", name)
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("reentrant Lock gave up after %v; want it to wait the 300ms timeout like anyone", took)
	}
	heldElsewhere(t, b, name)
	notLost(t, l)

	// One release frees it: the refused attempts left no nesting count.
	mustRelease(t, l)
	mustRelease(t, mustLock(t, b, name, 0))
}

func testLockManyPerHolder(t *testing.T, e *env) {
	var names []string
	for i := range 12 {
		names = append(names, lockName(t, "/"+strconv.Itoa(i)))
	}
	e.expectFree(t, names...)
	a, b := e.open(t), e.open(t)
	locks := make([]store.Lock, len(names))
	for i, n := range names {
		locks[i] = mustLock(t, a, n, 0)
	}
	for _, n := range names {
		heldElsewhere(t, b, n)
	}
	for i := 0; i < len(names); i += 2 {
		mustRelease(t, locks[i])
	}
	for i, n := range names {
		if i%2 == 0 {
			mustRelease(t, mustLock(t, b, n, 0))
		} else {
			heldElsewhere(t, b, n)
			notLost(t, locks[i])
		}
	}
	for i := 1; i < len(names); i += 2 {
		mustRelease(t, locks[i])
	}
}

func testLockNameMaxLength(t *testing.T, e *env) {
	names := []string{
		strings.Repeat("x", 255),
		strings.Repeat("é", 127) + "a",  // 255 bytes, 128 characters
		strings.Repeat("日", 85),         // 255 bytes, 85 characters
		strings.Repeat("🔒", 63) + "abc", // 255 bytes, 4-byte characters
	}
	for _, n := range names {
		if len(n) != 255 {
			t.Fatalf("test bug: name of %d bytes", len(n))
		}
	}
	e.expectFree(t, names...)
	a, b := e.open(t), e.open(t)
	for _, n := range names {
		l := mustLock(t, a, n, 0)
		heldElsewhere(t, b, n)
		mustRelease(t, l)
		mustRelease(t, mustLock(t, b, n, 0))
	}
}

func testLockNameInvalid(t *testing.T, e *env) {
	long := strings.Repeat("y", 256)
	longUTF8 := strings.Repeat("é", 128)
	e.expectFree(t, long[:255], longUTF8[:254])
	a, b := e.open(t), e.open(t)
	for _, n := range []string{"", long, longUTF8, "\xff", "lock\xc3", "a\x80b"} {
		l, err := a.Lock(t.Context(), n, 0)
		if err == nil {
			l.Release(t.Context())
		}
		isErr(t, err, store.ErrInvalid, "Lock(%q)", short(n))
	}
	// The refused long names were not silently truncated and taken.
	mustRelease(t, mustLock(t, b, long[:255], 0))
	mustRelease(t, mustLock(t, b, longUTF8[:254], 0))
}

func testLockNegativeTimeout(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	a, b := e.open(t), e.open(t)
	l, err := a.Lock(t.Context(), name, -time.Second)
	if err == nil {
		l.Release(t.Context())
	}
	isErr(t, err, store.ErrInvalid, "Lock(%q, -1s)", name)
	mustRelease(t, mustLock(t, b, name, 0))
}

// exclusiveButDistinct checks that holding a[i] blocks nobody from b[i]
// while each stays exclusive.
func exclusiveButDistinct(t *testing.T, e *env, pairs [][2]string) {
	var all []string
	for _, p := range pairs {
		all = append(all, p[0], p[1])
	}
	e.expectFree(t, all...)
	a, b := e.open(t), e.open(t)
	for _, p := range pairs {
		la := mustLock(t, a, p[0], 0)
		lb, err := b.Lock(t.Context(), p[1], 0)
		if err != nil {
			t.Fatalf("Lock(%q) while %q is held: got error %v; want nil: they are different locks", short(p[1]), short(p[0]), err)
		}
		heldElsewhere(t, b, p[0])
		heldElsewhere(t, a, p[1])
		mustRelease(t, la)
		mustRelease(t, lb)
	}
}

func testLockNameCaseSensitive(t *testing.T, e *env) {
	exclusiveButDistinct(t, e, [][2]string{
		{"A", "a"},
		{"Replicate-Lock", "replicate-lock"},
		{"É", "é"},
	})
}

func testLockNameByteCompare(t *testing.T, e *env) {
	exclusiveButDistinct(t, e, [][2]string{
		{"cafe", "café"},
		{"straße", "strasse"},
		{"pad", "pad "},
		{"x\u0065\u0301", "x\u00e9"}, // the same text, differently normalised
		{"%", "_"},
		{"a%", "ab"},
		{"nul\x00", "nul"},
		{"nul\x00a", "nul\x00b"},
	})
}

func testLockNameLongPrefix(t *testing.T, e *env) {
	p64 := strings.Repeat("p", 64)
	j64 := strings.Repeat("日", 64)
	q200 := strings.Repeat("q", 200)
	exclusiveButDistinct(t, e, [][2]string{
		{p64, p64 + "1"},
		{p64 + "1", p64 + "2"},
		{q200 + "1", q200 + "2"},
		{j64 + "a", j64 + "b"},
		{j64, j64 + "a"},
		{strings.Repeat("z", 254) + "1", strings.Repeat("z", 254) + "2"},
	})
}

func testLockReleaseIdempotent(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	a, b, c := e.open(t), e.open(t), e.open(t)
	l := mustLock(t, a, name, 0)
	mustRelease(t, l)
	ok(t, l.Release(t.Context()), "second Release")
	if closed(l.Lost()) {
		t.Errorf("Lost() is closed after Release; want open: Release is not a loss")
	}
	lb := mustLock(t, b, name, 0)
	// A late, repeated Release by the old owner must not free b's hold.
	ok(t, l.Release(t.Context()), "third Release, after another Store took the name")
	heldElsewhere(t, c, name)
	heldElsewhere(t, a, name)
	notLost(t, lb)
	mustRelease(t, lb)
}

// lockWorkers runs perStore goroutines on each of stores Stores, each doing
// iters rounds of f under lock name, and fails if two ever hold it at once.
func lockWorkers(t *testing.T, e *env, name string, stores, perStore, iters int, f func(ctx context.Context, s *store.Store) error) {
	ss := make([]*store.Store, stores)
	for i := range ss {
		ss[i] = e.open(t)
	}
	var holders atomic.Int32
	errs := parallel(stores*perStore, func(i int) error {
		ctx := t.Context()
		s := ss[i%stores]
		for range iters {
			l, err := s.Lock(ctx, name, 60*time.Second)
			if err != nil {
				return fmt.Errorf("Lock: %w", err)
			}
			if n := holders.Add(1); n != 1 {
				return fmt.Errorf("%d holders of %q at once; want 1", n, name)
			}
			ferr := f(ctx, s)
			holders.Add(-1)
			if closed(l.Lost()) {
				return fmt.Errorf("Lost() fired on a live holder")
			}
			if err := l.Release(ctx); err != nil {
				return fmt.Errorf("Release: %w", err)
			}
			if ferr != nil {
				return ferr
			}
		}
		return nil
	})
	noErrs(t, errs, "lock worker")
}

func testLockGuardedCounter(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	const stores, perStore, iters = 3, 3, 5
	key := "conformance.counter"
	lockWorkers(t, e, name, stores, perStore, iters, func(ctx context.Context, s *store.Store) error {
		// A plain read-modify-write: only the lock keeps it from losing updates.
		v, err := s.ServerSetting(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			v, err = "0", nil
		}
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		return s.SetServerSetting(ctx, key, strconv.Itoa(n+1))
	})
	s := e.open(t)
	got, err := s.ServerSetting(t.Context(), key)
	ok(t, err, "ServerSetting(%q)", key)
	if want := strconv.Itoa(stores * perStore * iters); got != want {
		t.Errorf("counter guarded by the lock = %s; want %s: updates were lost, so two held the lock at once", got, want)
	}
}

func testLockMutualExclusion(t *testing.T, e *env) {
	x, y := lockName(t, "/x"), lockName(t, "/y")
	e.expectFree(t, x, y)
	var inY atomic.Int32
	// Every worker takes x, then y while holding x: contention on one name
	// and many locks per holder at once.
	lockWorkers(t, e, x, 3, 3, 6, func(ctx context.Context, s *store.Store) error {
		l, err := s.Lock(ctx, y, 10*time.Second)
		if err != nil {
			return fmt.Errorf("Lock(y) while holding x: %w", err)
		}
		if n := inY.Add(1); n != 1 {
			return fmt.Errorf("%d holders of y at once; want 1", n)
		}
		time.Sleep(time.Millisecond)
		inY.Add(-1)
		return l.Release(ctx)
	})
}

func testLockHandoff(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	ss := []*store.Store{e.open(t), e.open(t)}
	held := mustLock(t, ss[0], name, 0)
	for round := range 4 {
		waiter := ss[(round+1)%2]
		type result struct {
			l   store.Lock
			err error
			at  time.Time
		}
		got := make(chan result, 1)
		go func() {
			l, err := waiter.Lock(t.Context(), name, 20*time.Second)
			got <- result{l, err, time.Now()}
		}()
		// The waiter must really be waiting, and must not get in early.
		select {
		case r := <-got:
			if r.err == nil {
				r.l.Release(t.Context())
			}
			t.Fatalf("round %d: waiter returned while the lock was held (error %v); want it to wait", round, r.err)
		case <-time.After(150 * time.Millisecond):
		}
		released := time.Now()
		mustRelease(t, held)
		r := <-got
		ok(t, r.err, "round %d: waiting Lock", round)
		if d := r.at.Sub(released); d > timingSlack {
			t.Errorf("round %d: waiter got the lock %v after release; want at most %v", round, d, timingSlack)
		}
		held = r.l
	}
	mustRelease(t, held)
}

func testLockCloseReleases(t *testing.T, e *env) {
	n1, n2 := lockName(t, "/1"), lockName(t, "/2")
	e.expectFree(t, n1, n2)
	a, b := e.open(t), e.open(t)
	mustLock(t, a, n1, 0)
	mustLock(t, a, n2, 0)
	heldElsewhere(t, b, n1)
	ok(t, a.Close(), "Close")
	ok(t, a.Close(), "second Close")
	for _, n := range []string{n1, n2} {
		l, err := b.Lock(t.Context(), n, 2*time.Second)
		ok(t, err, "Lock(%q) after its holder closed", n)
		mustRelease(t, l)
	}
}

func testClosedStore(t *testing.T, e *env) {
	a := e.open(t)
	ctx := t.Context()
	ok(t, a.Close(), "Close")
	ok(t, a.Close(), "second Close")
	_, err := a.Lock(ctx, lockName(t, ""), 0)
	isErr(t, err, store.ErrClosed, "Lock after Close")
	isErr(t, a.Ping(ctx), store.ErrClosed, "Ping after Close")
	_, err = a.Info(ctx)
	isErr(t, err, store.ErrClosed, "Info after Close")
	_, err = a.Now(ctx)
	isErr(t, err, store.ErrClosed, "Now after Close")
	_, err = a.CreateDomain(ctx, "closed")
	isErr(t, err, store.ErrClosed, "CreateDomain after Close")
	_, err = a.Domains(ctx)
	isErr(t, err, store.ErrClosed, "Domains after Close")
	_, err = a.CreateTempFile(ctx, store.TempFile{DomainID: 1, Key: "k"})
	isErr(t, err, store.ErrClosed, "CreateTempFile after Close")
	_, err = a.File(ctx, 1)
	isErr(t, err, store.ErrClosed, "File after Close")
	_, err = a.AddFileOn(ctx, 1, 1)
	isErr(t, err, store.ErrClosed, "AddFileOn after Close")
	isErr(t, a.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: 1}), store.ErrClosed, "Enqueue after Close")
	_, err = a.Lease(ctx, store.QueueReplicate, 1, time.Minute)
	isErr(t, err, store.ErrClosed, "Lease after Close")
	isErr(t, a.SetServerSetting(ctx, "k", "v"), store.ErrClosed, "SetServerSetting after Close")
	_, err = a.Checksum(ctx, 1)
	isErr(t, err, store.ErrClosed, "Checksum after Close")
	isErr(t, a.AppendFsckLog(ctx, store.FsckEvent{Fid: 1, Code: "NOPA"}), store.ErrClosed, "AppendFsckLog after Close")

	// Nothing was written by the refused calls.
	b := e.open(t)
	ds, err := b.Domains(ctx)
	ok(t, err, "Domains")
	if len(ds) != 0 {
		t.Errorf("Domains after refused CreateDomain = %v; want none", ds)
	}
	if _, err := b.ServerSetting(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ServerSetting(k) after refused SetServerSetting: got error %v; want %v", err, store.ErrNotFound)
	}
}

func testLockLostOnKilledSession(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	a, b := e.open(t), e.open(t)
	l := mustLock(t, a, name, 0)
	bound := e.deadBound()

	type result struct {
		l        store.Lock
		err      error
		lostSeen bool
	}
	got := make(chan result, 1)
	go func() {
		lb, err := b.Lock(t.Context(), name, bound)
		got <- result{lb, err, closed(l.Lost())}
	}()
	start := time.Now()
	e.kill(t, a, l)
	if !waitFor(bound, func() bool { return closed(l.Lost()) }) {
		t.Errorf("Lost() not closed %v after the lock's session was killed; want within %v", time.Since(start), bound)
	}
	r := <-got
	ok(t, r.err, "Lock(%q, %v) by another Store after the holder's session was killed", name, bound)
	if !r.lostSeen {
		if e.caps.LockMechanism == "session" || e.caps.LockMechanism == "service" {
			// Not promised for session locks nor an outside service's
			// (store.Lock): the server frees a killed session's locks,
			// and the service a revoked lease's, at once, before the
			// holder can see the death. Fencing, checked below, is what
			// holds.
			t.Logf("another Store got the lock before the old holder's Lost() fired (allowed for %s locks)", e.caps.LockMechanism)
		} else {
			t.Errorf("another Store got the lock before the old holder's Lost() fired; want Lost first")
		}
	}
	// Whatever the order, the old grant can no longer write under its fence.
	isErr(t, b.SetServerSetting(store.WithFence(t.Context(), l), "lost_holder", "stale"), store.ErrFenced,
		"fenced write of the killed holder after another grant")
	if r.l.Token() <= l.Token() {
		t.Errorf("Token() of the grant after the kill = %d; want more than the killed grant's %d", r.l.Token(), l.Token())
	}
	notLost(t, r.l)
	mustRelease(t, r.l)
}

func testLockReleaseAfterLoss(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	a, b, c := e.open(t), e.open(t), e.open(t)
	l := mustLock(t, a, name, 0)
	e.kill(t, a, l)
	if !waitFor(e.deadBound(), func() bool { return closed(l.Lost()) }) {
		t.Fatalf("Lost() not closed within %v of the kill", e.deadBound())
	}
	lb, err := b.Lock(t.Context(), name, e.deadBound())
	ok(t, err, "Lock by another Store after the loss")
	isErr(t, l.Release(t.Context()), store.ErrLockLost, "Release of a lost lock")
	isErr(t, l.Release(t.Context()), store.ErrLockLost, "second Release of a lost lock")
	// The refused releases changed nothing: b still holds it.
	heldElsewhere(t, c, name)
	notLost(t, lb)
	mustRelease(t, lb)
}

func testLockCrashOwner(t *testing.T, e *env) {
	n1, n2 := lockName(t, "/1"), lockName(t, "/2")
	e.expectFree(t, n1, n2)
	a, b := e.open(t), e.open(t)
	mustLock(t, a, n1, 0)
	mustLock(t, a, n2, 0)
	heldElsewhere(t, b, n1)
	e.crash(t, a)
	start := time.Now()
	for _, n := range []string{n1, n2} {
		l, err := b.Lock(t.Context(), n, e.deadBound())
		ok(t, err, "Lock(%q) after its owner crashed (%v since the crash; bound %v)", n, time.Since(start), e.deadBound())
		mustRelease(t, l)
	}
}

func testLockLiveOwnerNotReaped(t *testing.T, e *env) {
	name := lockName(t, "")
	e.expectFree(t, name)
	a, b := e.open(t), e.open(t)
	hold := max(2*e.caps.DeadOwnerBound, time.Second)
	hold = min(hold, 6*time.Second)
	l := mustLock(t, a, name, 0)
	deadline := time.Now().Add(hold)
	tries := 0
	for time.Now().Before(deadline) {
		tries++
		lb, err := b.Lock(t.Context(), name, 100*time.Millisecond)
		if err == nil {
			lb.Release(t.Context())
			t.Fatalf("another Store got the lock after %d tries while its owner was alive; want never", tries)
		}
		isErr(t, err, store.ErrLockTimeout, "Lock while a live owner holds it")
		if closed(l.Lost()) {
			t.Fatalf("Lost() fired on a live owner after %d tries", tries)
		}
	}
	t.Logf("held %v (DeadOwnerBound %v) against %d tries", hold, e.caps.DeadOwnerBound, tries)
	mustRelease(t, l)
}
