package broken_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/torture/broken"
	"github.com/gomogile/gomogile/internal/testkit/torture/check"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// open2 opens two Stores on one SQLite file, as two trackers: they share
// rows and the lock namespace.
func open2(t *testing.T) (*store.Store, *store.Store) {
	t.Helper()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "meta.db")
	var out [2]*store.Store
	for i := range out {
		s, err := store.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out[i] = s
	}
	return out[0], out[1]
}

func wrap(t *testing.T, name string, s *store.Store, c broken.Config) *store.Store {
	t.Helper()
	w, err := broken.WrapWith(name, s, c)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestNames(t *testing.T) {
	want := []string{"double-lease", "late-lost", "lost-commit", "no-exclusion", "reused-fid", "unfenced"}
	got := broken.Names()
	if len(got) != len(want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Names() = %v, want %v", got, want)
		}
	}
	a, _ := open2(t)
	for _, n := range got {
		if _, err := broken.Wrap(n, a); err != nil {
			t.Errorf("Wrap(%q): %v", n, err)
		}
	}
	if _, err := broken.Wrap("nonsense", a); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Wrap(nonsense) = %v, want ErrInvalid", err)
	}
}

// lockHistory takes "n" from s (real, then released), then from s again,
// then tries it from other, and returns the holdings as a worker would
// record them, with whether other got the lock.
func lockHistory(t *testing.T, s, other *store.Store) ([]check.Hold, bool) {
	t.Helper()
	ctx := context.Background()
	var hs []check.Hold
	l1, err := s.Lock(ctx, "n", 0)
	if err != nil {
		t.Fatal(err)
	}
	h1 := check.Hold{Proc: "w1", Name: "n", Token: l1.Token(), From: time.Now()}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	h1.To, h1.End = time.Now(), check.Released
	hs = append(hs, h1)

	l2, err := s.Lock(ctx, "n", 0)
	if err != nil {
		t.Fatal(err)
	}
	h2 := check.Hold{Proc: "w1", Name: "n", Token: l2.Token(), From: time.Now()}
	l3, err := other.Lock(ctx, "n", 0)
	if err != nil && !errors.Is(err, store.ErrLockTimeout) {
		t.Fatal(err)
	}
	got := err == nil
	if got {
		h3 := check.Hold{Proc: "w2", Name: "n", Token: l3.Token(), From: time.Now()}
		time.Sleep(20 * time.Millisecond)
		if closed(l2.Lost()) {
			t.Error("the first holder was told it lost the lock")
		}
		if err := l3.Release(ctx); err != nil {
			t.Fatal(err)
		}
		h3.To, h3.End = time.Now(), check.Released
		hs = append(hs, h3)
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	h2.To, h2.End = time.Now(), check.Released
	hs = append(hs, h2)
	return hs, got
}

func TestNoExclusion(t *testing.T) {
	a, b := open2(t)
	hs, got := lockHistory(t, a, b)
	if got {
		t.Fatal("the real store granted a held lock")
	}
	if v := append(check.Exclusion(hs, 0), check.TokenOrder(hs)...); len(v) != 0 {
		t.Fatalf("real store: %v", v)
	}

	w := wrap(t, "no-exclusion", a, broken.Config{}) // every 2nd Lock is fake
	hs, got = lockHistory(t, w, b)
	if !got {
		t.Fatal("no-exclusion: the second Lock acquired the lock after all")
	}
	v := check.Exclusion(hs, 0)
	if len(v) != 1 {
		t.Fatalf("no-exclusion: Exclusion found %v, want one overlap", v)
	}
	t.Log(v[0])
	// The fake lock repeats the last real token.
	if v := check.TokenOrder(hs); len(v) != 1 {
		t.Errorf("no-exclusion: TokenOrder found %v, want one", v)
	} else {
		t.Log(v[0])
	}
}

// crashHistory takes "n" from s, closes s under it (a tracker crash), and
// takes "n" from other; the first holding ends when its holder sees Lost.
func crashHistory(t *testing.T, s, other *store.Store) []check.Hold {
	t.Helper()
	ctx := context.Background()
	l1, err := s.Lock(ctx, "n", 0)
	if err != nil {
		t.Fatal(err)
	}
	h1 := check.Hold{Proc: "w1", Name: "n", Token: l1.Token(), From: time.Now(), End: check.Lost}
	s.Close()
	if closed(l1.Lost()) {
		h1.To = time.Now()
	}
	l2, err := other.Lock(ctx, "n", 0)
	if err != nil {
		t.Fatal(err)
	}
	h2 := check.Hold{Proc: "w2", Name: "n", Token: l2.Token(), From: time.Now()}
	if h1.To.IsZero() {
		select {
		case <-l1.Lost():
			h1.To = time.Now()
		case <-time.After(10 * time.Second):
			t.Fatal("Lost never fired")
		}
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	h2.To, h2.End = time.Now(), check.Released
	return []check.Hold{h1, h2}
}

func TestLateLost(t *testing.T) {
	a, b := open2(t)
	if hs := crashHistory(t, a, b); len(append(check.Exclusion(hs, 0), check.TokenOrder(hs)...)) != 0 {
		t.Fatalf("real store: %v %v", check.Exclusion(hs, 0), check.TokenOrder(hs))
	}
	c, d := open2(t)
	const delay = time.Second
	hs := crashHistory(t, wrap(t, "late-lost", c, broken.Config{Delay: delay}), d)
	// The real Lost fired after the grant (From) and Lost came delay
	// after it; the next grant was made while it was held back.
	if late := hs[0].To.Sub(hs[0].From); late < delay {
		t.Errorf("late-lost: Lost came %s after the grant, want at least %s", late, delay)
	}
	v := check.Exclusion(hs, 0)
	if len(v) != 1 {
		t.Fatalf("late-lost: Exclusion found %v, want one overlap", v)
	}
	t.Log(v[0])
}

// counterHistory is issue 7's paused holder: s reads the counter under
// its lock, loses the lock (released here: on SQLite a lock goes only with
// its Store), other takes it and increments, then s writes its stale value
// with its old fence. It returns the ops, the final value and the stale
// write's error.
func counterHistory(t *testing.T, s, other *store.Store) ([]check.CounterOp, map[string]int64, error) {
	t.Helper()
	ctx := context.Background()
	if err := s.SetServerSetting(ctx, "ctr", "5"); err != nil {
		t.Fatal(err)
	}
	read := func(st *store.Store) int64 {
		v, err := st.ServerSetting(ctx, "ctr")
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	opA := check.CounterOp{Proc: "paused", Key: "ctr", Invoke: time.Now()}
	la, err := s.Lock(ctx, "ctr", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fa := store.WithFence(ctx, la)
	opA.Read = read(s)
	opA.Wrote = opA.Read + 1
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}

	opB := check.CounterOp{Proc: "w2", Key: "ctr", Invoke: time.Now()}
	lb, err := other.Lock(ctx, "ctr", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	opB.Read = read(other)
	opB.Wrote = opB.Read + 1
	if err := other.SetServerSetting(store.WithFence(ctx, lb), "ctr", strconv.FormatInt(opB.Wrote, 10)); err != nil {
		t.Fatal(err)
	}
	opB.Return, opB.Outcome = time.Now(), check.OK
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}

	stale := s.SetServerSetting(fa, "ctr", strconv.FormatInt(opA.Wrote, 10))
	opA.Return = time.Now()
	switch {
	case stale == nil:
		opA.Outcome = check.OK
	case errors.Is(stale, store.ErrFenced):
		opA.Outcome = check.Failed
	default:
		t.Fatal(stale)
	}
	return []check.CounterOp{opA, opB}, map[string]int64{"ctr": read(other)}, stale
}

// fromFive: counterHistory starts the counter at 5.
var fromFive = check.CounterOptions{Initial: map[string]int64{"ctr": 5}}

func TestUnfenced(t *testing.T) {
	a, b := open2(t)
	ops, final, stale := counterHistory(t, a, b)
	if !errors.Is(stale, store.ErrFenced) {
		t.Fatalf("real store: the stale fenced write returned %v, want ErrFenced", stale)
	}
	if v := check.CountersWith(ops, final, fromFive); len(v) != 0 {
		t.Fatalf("real store: %v", v)
	}
	c, d := open2(t)
	ops, final, stale = counterHistory(t, wrap(t, "unfenced", c, broken.Config{}), d)
	if stale != nil {
		t.Fatalf("unfenced: the stale write was refused: %v", stale)
	}
	v := check.CountersWith(ops, final, fromFive)
	if len(v) != 1 || v[0].Invariant != check.InvCounter {
		t.Fatalf("unfenced: Counters found %v, want one counter violation", v)
	}
	t.Log(v[0])
}

// leaseHistory enqueues one row, leases it from s, then from other, both
// for a minute, and returns the leases as workers would record them.
func leaseHistory(t *testing.T, s, other *store.Store) []check.Lease {
	t.Helper()
	ctx := context.Background()
	if err := s.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: 7}); err != nil {
		t.Fatal(err)
	}
	var ls []check.Lease
	for i, st := range []*store.Store{s, other} {
		now, err := st.Now(ctx)
		if err != nil {
			t.Fatal(err)
		}
		items, err := st.Lease(ctx, store.QueueReplicate, 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			ls = append(ls, check.Lease{Proc: "w" + strconv.Itoa(i+1), Queue: "replicate", Fid: it.Fid, From: now, Until: now.Add(time.Minute)})
		}
	}
	return ls
}

func TestDoubleLease(t *testing.T) {
	a, b := open2(t)
	ls := leaseHistory(t, a, b)
	if len(ls) != 1 {
		t.Fatalf("real store leased %d times, want once: %v", len(ls), ls)
	}
	c, d := open2(t)
	ls = leaseHistory(t, wrap(t, "double-lease", c, broken.Config{}), d)
	if len(ls) != 2 {
		t.Fatalf("double-lease: leased %d times, want twice", len(ls))
	}
	v := check.Leases(ls, time.Second)
	if len(v) != 1 {
		t.Fatalf("double-lease: Leases found %v, want one", v)
	}
	t.Log(v[0])
}

func newDomain(t *testing.T, s *store.Store) int {
	t.Helper()
	d, err := s.CreateDomain(context.Background(), "d")
	if err != nil {
		t.Fatal(err)
	}
	return d.ID
}

func fidHistory(t *testing.T, s *store.Store, dmid int) []check.Alloc {
	t.Helper()
	var as []check.Alloc
	for i := 0; i < 4; i++ {
		a := check.Alloc{Proc: "w1", Start: time.Now()}
		fid, err := s.CreateTempFile(context.Background(), store.TempFile{DomainID: dmid, Key: "k" + strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
		a.Fid, a.End = fid, time.Now()
		as = append(as, a)
	}
	return as
}

func TestReusedFid(t *testing.T) {
	a, _ := open2(t)
	dmid := newDomain(t, a)
	if v := check.Fids(fidHistory(t, a, dmid)); len(v) != 0 {
		t.Fatalf("real store: %v", v)
	}
	as := fidHistory(t, wrap(t, "reused-fid", a, broken.Config{}), dmid)
	if as[1].Fid != as[0].Fid || as[3].Fid != as[2].Fid || as[2].Fid == as[0].Fid {
		t.Fatalf("reused-fid: fids %v, want every second one repeated", as)
	}
	v := check.Fids(as)
	if len(v) != 2 {
		t.Fatalf("reused-fid: Fids found %v, want two", v)
	}
	t.Log(v[0])
}

func commitHistory(t *testing.T, s *store.Store, dmid int) ([]check.FileCommit, []check.FileRow) {
	t.Helper()
	ctx := context.Background()
	var cs []check.FileCommit
	for i := 0; i < 2; i++ {
		key := "key" + strconv.Itoa(i)
		fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: dmid, Key: key, Length: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.File.Fid != fid {
			t.Fatalf("commit of fid %d reported fid %d", fid, res.File.Fid)
		}
		cs = append(cs, check.FileCommit{Proc: "w1", Fid: fid, DomainID: dmid, Key: key, Outcome: check.OK, At: time.Now()})
	}
	files, err := s.Files(ctx, 0, 1<<40, 100)
	if err != nil {
		t.Fatal(err)
	}
	var rows []check.FileRow
	for _, f := range files {
		rows = append(rows, check.FileRow{Fid: f.Fid, DomainID: f.DomainID, Key: f.Key})
	}
	return cs, rows
}

func TestLostCommit(t *testing.T) {
	a, _ := open2(t)
	dmid := newDomain(t, a)
	cs, rows := commitHistory(t, a, dmid)
	if v := check.Commits(cs, rows, nil); len(v) != 0 || len(rows) != 2 {
		t.Fatalf("real store: %v (files %v)", v, rows)
	}
	c, _ := open2(t)
	dmid = newDomain(t, c)
	cs, rows = commitHistory(t, wrap(t, "lost-commit", c, broken.Config{}), dmid)
	if len(rows) != 1 {
		t.Fatalf("lost-commit: %d files, want the second commit missing: %v", len(rows), rows)
	}
	if _, err := c.TempFile(context.Background(), cs[1].Fid); err != nil {
		t.Errorf("lost-commit: the uncommitted tempfile should remain: %v", err)
	}
	v := check.Commits(cs, rows, nil)
	if len(v) != 1 {
		t.Fatalf("lost-commit: Commits found %v, want one", v)
	}
	t.Log(v[0])
}

// On SQLite nothing takes a lock from a live holder, so late-lost and
// unfenced make their locks expire after a short lease: the real lock is
// released underneath the holder, another Store is granted it, and the
// holder learns late (late-lost) or on time (unfenced), its Release then
// reporting the loss.
func TestExpiringLease(t *testing.T) {
	for _, c := range []struct {
		name     string
		cfg      broken.Config
		lostLate bool
	}{
		{"late-lost", broken.Config{Delay: time.Second}, true},
		{"unfenced", broken.Config{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := open2(t)
			ctx := context.Background()
			la, err := wrap(t, c.name, a, c.cfg).Lock(ctx, "n", 0)
			if err != nil {
				t.Fatal(err)
			}
			lb, err := b.Lock(ctx, "n", 5*time.Second)
			if err != nil {
				t.Fatalf("the expired lock was not granted to another Store: %v", err)
			}
			if got := closed(la.Lost()); got == c.lostLate {
				t.Errorf("holder's Lost closed = %v at the next grant, want %v", got, !c.lostLate)
			}
			if lb.Token() <= la.Token() {
				t.Errorf("next grant's token %d not above the expired one's %d", lb.Token(), la.Token())
			}
			if err := la.Release(ctx); !errors.Is(err, store.ErrLockLost) {
				t.Errorf("Release of the expired lock: %v, want ErrLockLost", err)
			}
			if err := lb.Release(ctx); err != nil {
				t.Fatal(err)
			}
			// With no expiry (Lease < 0) the lock excludes as the real one.
			lc, err := wrap(t, c.name, a, broken.Config{Lease: -1}).Lock(ctx, "m", 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Lock(ctx, "m", 50*time.Millisecond); !errors.Is(err, store.ErrLockTimeout) {
				t.Errorf("Lease -1: another Store's Lock = %v, want ErrLockTimeout", err)
			}
			if err := lc.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
