package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/faultproxy"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/etcd"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func TestParseConfig(t *testing.T) {
	for _, tt := range []struct {
		dsn  string
		want etcd.Config
		bad  string
	}{
		{dsn: "etcd://a:1,b,[::1]:3/locks?ttl=7", want: etcd.Config{Endpoints: []string{"a:1", "b:2379", "[::1]:3"}, Prefix: "/locks", TTL: 7 * time.Second, DialTimeout: etcd.DefaultDialTimeout}},
		{dsn: "etcd://u:p@h", want: etcd.Config{Endpoints: []string{"h:2379"}, Prefix: etcd.DefaultPrefix, TTL: etcd.DefaultTTL, DialTimeout: etcd.DefaultDialTimeout, Username: "u", Password: "p"}},
		{dsn: "etcd://h/p/?ttl=3s&dial_timeout=2", want: etcd.Config{Endpoints: []string{"h:2379"}, Prefix: "/p", TTL: 3 * time.Second, DialTimeout: 2 * time.Second}},
		{dsn: "etcd://h?ttl=1", bad: "at least 2s"},
		{dsn: "etcd://h?ttl=2.5s", bad: "whole seconds"},
		{dsn: "etcd://h?lease=3", bad: `etcd lock_dsn: unknown parameter "lease"`},
		{dsn: "etcd://h?ttl=3&ttl=4", bad: `parameter "ttl" given more than once`},
		{dsn: "etcd://h?cert=/x", bad: "cert and key go together"},
		{dsn: "etcd://h?cacert=/nonexistent", bad: "cacert"},
		{dsn: "etcd:///p", bad: "no endpoint"},
	} {
		d, err := store.ParseLockDSN(tt.dsn)
		if err != nil {
			t.Fatalf("ParseLockDSN(%q): %v", tt.dsn, err)
		}
		got, err := etcd.ParseConfig(d)
		if tt.bad != "" {
			if !errors.Is(err, store.ErrBadDSN) || !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("ParseConfig(%q) = %v; want ErrBadDSN saying %q", tt.dsn, err, tt.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseConfig(%q): %v", tt.dsn, err)
			continue
		}
		if strings.Join(got.Endpoints, " ") != strings.Join(tt.want.Endpoints, " ") || got.Prefix != tt.want.Prefix ||
			got.TTL != tt.want.TTL || got.DialTimeout != tt.want.DialTimeout || got.Username != tt.want.Username || got.Password != tt.want.Password {
			t.Errorf("ParseConfig(%q) = %+v; want %+v", tt.dsn, got, tt.want)
		}
	}
}

// open opens a Service on lockDSN with the given ttl.
func open(t testing.TB, lockDSN string, ttl int) *etcd.Service {
	t.Helper()
	d, err := store.ParseLockDSN(lockDSN + "?ttl=" + url.QueryEscape(time.Duration(ttl*int(time.Second)).String()))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := etcd.ParseConfig(d)
	if err != nil {
		t.Fatal(err)
	}
	s, err := etcd.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openCutOffable opens a Service with the given ttl that reaches the
// test binary's private etcd cluster through a fault proxy in front of one
// member, so the test can cut it off; lockDSN names the same prefix on
// every member directly, for the Services the cut does not touch.
func openCutOffable(t *testing.T, ttl int) (a *etcd.Service, p *faultproxy.Proxy, lockDSN string) {
	t.Helper()
	c, err := testdb.EtcdCluster()
	if err != nil {
		testdb.Unavailable(t, "etcd", err.Error())
	}
	own := testdb.Etcd(t)
	prefix := own[strings.LastIndex(own, "/"):]
	p, err = faultproxy.Start(c.Members()[0].Addr(), faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return open(t, "etcd://"+p.Addr()+prefix, ttl), p, testdb.EtcdDSN(c, prefix)
}

// The promise of the package doc: a holder cut off from etcd (its
// keep-alives go nowhere) sees Lost before any other Store is granted the
// name, since it gives up at its own deadline, a fifth of the TTL before
// the server lets the lease go.
func TestService_LostBeforeRegrantWhenCutOff(t *testing.T) {
	a, p, lockDSN := openCutOffable(t, 3)
	b := open(t, lockDSN, 3)

	// Several rounds: a renewal hanging on the dead connection when the
	// deadline comes must not hold Lost back (it once did, now and then).
	for round := 1; round <= 3; round++ {
		name := fmt.Sprintf("mgfs:fid:%d", round)
		l, err := a.Acquire(t.Context(), name, 0)
		if err != nil {
			t.Fatal(err)
		}
		p.Blackhole(true)
		cut := time.Now()
		got := make(chan error, 1)
		var lostFirst bool
		go func() {
			g, err := b.Acquire(context.Background(), name, 15*time.Second)
			select {
			case <-l.Lost():
				lostFirst = true
			default:
			}
			if err == nil {
				g.Release(context.Background())
			}
			got <- err
		}()
		select {
		case <-l.Lost():
			// The last answered renewal was sent before the cut, so the
			// holder's own deadline (TTL - TTL/5 after it) is at most
			// 2.4 s after the cut; 400 ms more is the timer's slack, well
			// short of the 3 s after which the server may let the lease go.
			took := time.Since(cut)
			t.Logf("Lost %v after the cut", took.Round(time.Millisecond))
			if took > 2800*time.Millisecond {
				t.Errorf("Lost %v after the cut; want by the holder's deadline, 2.4 s after its last renewal was sent", took)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Lost not closed 10 s after the holder was cut off (TTL 3 s)")
		}
		if err := <-got; err != nil {
			t.Fatalf("another Store's Lock after the holder's lease ran out: %v", err)
		}
		if !lostFirst {
			t.Error("another Store was granted the name before the cut-off holder's Lost fired")
		}
		p.Blackhole(false)
		if err := l.Release(t.Context()); !errors.Is(err, store.ErrLockLost) {
			t.Errorf("Release of the lost grant = %v; want ErrLockLost", err)
		}
		// After the loss the Service takes a new lease and grants again.
		l2, err := a.Acquire(t.Context(), name+":again", 5*time.Second)
		if err != nil {
			t.Fatalf("Acquire after a lost lease: %v", err)
		}
		if err := l2.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// A Service's locks are not reentrant, and each grant's token exceeds
// every earlier grant's.
func TestService_NotReentrantTokensGrow(t *testing.T) {
	a := open(t, testdb.Etcd(t), 5)
	l1, err := a.Acquire(t.Context(), "n", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(t.Context(), "n", 0); !errors.Is(err, store.ErrLockTimeout) {
		t.Fatalf("second Acquire of a held name by its own Service = %v; want ErrLockTimeout", err)
	}
	start := time.Now()
	if _, err := a.Acquire(t.Context(), "n", 300*time.Millisecond); !errors.Is(err, store.ErrLockTimeout) || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("second Acquire waiting 300ms = %v after %v; want ErrLockTimeout no earlier", err, time.Since(start))
	}
	last := l1.Token()
	if err := l1.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		l, err := a.Acquire(t.Context(), "n", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= last {
			t.Errorf("grant %d token %d; want more than %d", i, l.Token(), last)
		}
		last = l.Token()
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// A name that is a prefix of another's bytes is another lock.
	x, err := a.Acquire(t.Context(), "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	y, err := a.Acquire(t.Context(), "a/b", 0)
	if err != nil {
		t.Fatalf("Acquire of a/b while a is held: %v", err)
	}
	x.Release(t.Context())
	y.Release(t.Context())
}

// A wait given up at its deadline returns then, even when etcd does not
// answer the clean-up of the waiter's key (concurrency.Mutex does it with
// a context of no deadline: during a partition it would hang until it
// heals); the key still goes, so the name is free again for others.
func TestService_WaitEndsAtDeadlineWhenCutOff(t *testing.T) {
	a, p, lockDSN := openCutOffable(t, 10) // 8 s before it would lose its lease
	b := open(t, lockDSN, 10)

	lb, err := b.Acquire(t.Context(), "n", 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := make(chan error, 1)
	go func() {
		g, err := a.Acquire(context.Background(), "n", 800*time.Millisecond)
		if err == nil {
			g.Release(context.Background())
		}
		got <- err
	}()
	time.Sleep(200 * time.Millisecond) // a's key is queued behind b's
	p.Blackhole(true)
	var took time.Duration
	select {
	case err := <-got:
		took = time.Since(start)
		if !errors.Is(err, store.ErrLockTimeout) {
			t.Errorf("wait on a held name, cut off = %v; want ErrLockTimeout", err)
		}
	case <-time.After(2500 * time.Millisecond):
		took = time.Since(start)
	}
	p.Blackhole(false)
	if took > 2*time.Second {
		t.Fatalf("Acquire with an 800ms timeout returned %v after its call; want by its deadline", took.Round(time.Millisecond))
	}
	if err := lb.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	// a's queued key went: b gets the name again, and so does a.
	lb, err = b.Acquire(t.Context(), "n", 5*time.Second)
	if err != nil {
		t.Fatalf("Acquire after the cut waiter gave up: %v; its key was left in the queue", err)
	}
	if err := lb.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	la, err := a.Acquire(t.Context(), "n", 5*time.Second)
	if err != nil {
		t.Fatalf("the cut waiter's own Acquire after healing: %v", err)
	}
	la.Release(t.Context())
}

// While one caller takes a new lease from a cluster that does not answer,
// another returns by its own deadline rather than wait out the first's.
func TestService_NewLeaseWaitBoundedByOwnContext(t *testing.T) {
	a, p, _ := openCutOffable(t, 3)
	g0, err := a.Acquire(t.Context(), "x", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The lease revoked at the server: the next grant needs a new one.
	if err := a.KillSession(t.Context(), g0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g0.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost not closed 5 s after the lease was revoked")
	}
	p.Blackhole(true)
	defer p.Blackhole(false)
	first := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := a.Acquire(ctx, "y", 0)
		first <- err
	}()
	time.Sleep(300 * time.Millisecond) // the first is taking the new lease
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = a.Acquire(ctx, "z", 0)
	if took := time.Since(start); took > time.Second {
		t.Errorf("Acquire with a 300ms context returned after %v (%v); want by its deadline, not the other caller's", took.Round(time.Millisecond), err)
	}
	if err == nil {
		t.Errorf("Acquire cut off from etcd succeeded")
	}
	<-first
}
