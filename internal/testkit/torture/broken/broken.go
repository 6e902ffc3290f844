// Package broken holds the torture program's negative controls: wrappers
// around a real *store.Store that each break one promise of the contract on
// purpose, so a run against them must report the violation its invariant
// exists for. A checker that stays quiet on a broken store is itself
// broken.
//
// Each wrapper embeds the real Store and overrides only what it breaks; it
// is chosen by name, so a torture worker process can be started with
// --broken=<name>:
//
//	no-exclusion  every 2nd Lock returns a lock it never acquired: its token
//	              is the last real token this wrapper saw for the name, and
//	              its Lost never fires                      (exclusion, token order)
//	late-lost     Lost is forwarded Delay after the real one fired
//	              (default twice DeadOwnerBound, at least 1s), or
//	              after the lock's Lease expired and the real lock
//	              was released underneath its holder         (exclusion)
//	unfenced      every write runs with the fences stripped from its ctx,
//	              so a stale guarded write lands; its locks expire
//	              after Lease too, Lost closing on time      (counters)
//
// Lease defaults to 5ms for in-process locks (SQLite), which nothing else
// can take from a live holder, so that late-lost and unfenced show there
// as on the backends whose locks faults take away; elsewhere locks are
// lost only by the run's faults.
//
//	double-lease  every Lease makes the rows it took due again at once, as
//	              if the lease were ignored                  (leases)
//	reused-fid    every 2nd CreateTempFile returns the fid it returned
//	              before, without reserving one              (fids)
//	lost-commit   every 2nd CommitFile reports success without
//	              committing                                 (commits)
//
// [Config.Every] changes how often the broken method misbehaves.
package broken

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Config tunes a wrapper.
type Config struct {
	// Every makes the broken method misbehave on every Every-th call
	// (1 = always); 0 takes the wrapper's default (see the package doc).
	Every int
	// Delay is how long late-lost holds back Lost; 0 takes twice the
	// backend's DeadOwnerBound, at least one second.
	Delay time.Duration
	// Lease is how long a lock of late-lost or unfenced is held before
	// the real lock is released underneath its holder; 0 takes 5ms for
	// in-process locks and no expiry otherwise, a negative value none.
	Lease time.Duration
}

type wrapper struct {
	every int // default Every
	wrap  func(s store.Backend, c Config) store.Backend
}

var wrappers = map[string]wrapper{
	"no-exclusion": {2, func(s store.Backend, c Config) store.Backend {
		return &noExclusion{Backend: s, n: newNth(c.Every), last: map[string]int64{}}
	}},
	"late-lost": {1, func(s store.Backend, c Config) store.Backend {
		d := c.Delay
		if d <= 0 {
			d = max(2*s.Capabilities().DeadOwnerBound, time.Second)
		}
		return &lateLost{Backend: s, n: newNth(c.Every), delay: d, lease: leaseFor(s, c)}
	}},
	"unfenced": {1, func(s store.Backend, c Config) store.Backend {
		lease := leaseFor(s, c)
		if lease == 0 && c.Lease == 0 && s.Capabilities().LockMechanism == "session" {
			// store/mysql holds a grant back until the last holder's Lost
			// has fired, so a running holder that looks at Lost never
			// writes after the next grant: like an in-process lock, it
			// needs the made-up expiry for an unchecked fence to matter.
			lease = inProcessLease
		}
		return &unfenced{Backend: s, n: newNth(c.Every), lease: lease}
	}},
	"double-lease": {1, func(s store.Backend, c Config) store.Backend { return &doubleLease{Backend: s, n: newNth(c.Every)} }},
	"reused-fid":   {2, func(s store.Backend, c Config) store.Backend { return &reusedFid{Backend: s, n: newNth(c.Every)} }},
	"lost-commit":  {2, func(s store.Backend, c Config) store.Backend { return &lostCommit{Backend: s, n: newNth(c.Every)} }},
}

// Names lists the wrappers, sorted.
func Names() []string {
	names := make([]string, 0, len(wrappers))
	for n := range wrappers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Wrap returns s broken as name says, with the default Config.
func Wrap(name string, s *store.Store) (*store.Store, error) {
	return WrapWith(name, s, Config{})
}

// WrapWith returns s broken as name says. An unknown name fails with
// store.ErrInvalid.
func WrapWith(name string, s *store.Store, c Config) (*store.Store, error) {
	w, ok := wrappers[name]
	if !ok {
		return nil, fmt.Errorf("broken: no wrapper %q (have %s): %w", name, strings.Join(Names(), ", "), store.ErrInvalid)
	}
	if c.Every <= 0 {
		c.Every = w.every
	}
	// The wrapper is a Backend over s; the Store in front of it adds no
	// deadline of its own (s has one).
	return store.New(w.wrap(s, c), &store.Options{OpTimeout: -1}), nil
}

// nth counts calls of the broken method and says which misbehave: the
// every-th, the 2×every-th, and so on, so a test knows which call breaks.
type nth struct {
	every int64
	calls atomic.Int64
}

func newNth(every int) *nth { return &nth{every: int64(every)} }

func (n *nth) hit() bool { return n.calls.Add(1)%n.every == 0 }

// noExclusion: Lock without acquiring.
type noExclusion struct {
	store.Backend
	n    *nth
	mu   sync.Mutex
	last map[string]int64 // the last real token granted per name
}

func (s *noExclusion) Lock(ctx context.Context, name string, timeout time.Duration) (store.Lock, error) {
	if s.n.hit() {
		s.mu.Lock()
		tok := s.last[name]
		s.mu.Unlock()
		return &fakeLock{name: name, token: tok, lost: make(chan struct{})}, nil
	}
	l, err := s.Backend.Lock(ctx, name, timeout)
	if err == nil {
		s.mu.Lock()
		s.last[name] = l.Token()
		s.mu.Unlock()
	}
	return l, err
}

// fakeLock is a lock nobody granted. Its Lost never fires and its Release
// succeeds, so its holder never learns.
type fakeLock struct {
	name  string
	token int64
	lost  chan struct{}
}

func (l *fakeLock) Name() string                  { return l.name }
func (l *fakeLock) Token() int64                  { return l.token }
func (l *fakeLock) Lost() <-chan struct{}         { return l.lost }
func (l *fakeLock) Release(context.Context) error { return nil }

// lateLost: Lost forwarded late. A lock lost when the Store is closed (a
// crash of the tracker) is forwarded late too: that is when it matters. So
// its goroutine may outlive Close, by at most Delay.
type lateLost struct {
	store.Backend
	n     *nth
	delay time.Duration
	lease time.Duration
}

func (s *lateLost) Lock(ctx context.Context, name string, timeout time.Duration) (store.Lock, error) {
	l, err := s.Backend.Lock(ctx, name, timeout)
	if err != nil || !s.n.hit() {
		return l, err
	}
	return expiring(l, s.lease, s.delay), nil
}

// doubleLease: the lease is ignored.
type doubleLease struct {
	store.Backend
	n *nth
}

func (s *doubleLease) Lease(ctx context.Context, q store.Queue, maxRows int, lease time.Duration) ([]store.QueueItem, error) {
	items, err := s.Backend.Lease(ctx, q, maxRows, lease)
	if err != nil || len(items) == 0 || !s.n.hit() {
		return items, err
	}
	for _, it := range items {
		if err := s.Backend.Reschedule(ctx, q, it.Fid, 0, false); err != nil {
			return nil, fmt.Errorf("broken double-lease: make fid %d due again: %w", it.Fid, err)
		}
	}
	return items, nil
}

// reusedFid: a fid handed out again.
type reusedFid struct {
	store.Backend
	n    *nth
	mu   sync.Mutex
	last int64
}

func (s *reusedFid) CreateTempFile(ctx context.Context, t store.TempFile) (int64, error) {
	if t.Fid == 0 && s.n.hit() {
		s.mu.Lock()
		fid := s.last
		s.mu.Unlock()
		if fid != 0 {
			return fid, nil
		}
	}
	fid, err := s.Backend.CreateTempFile(ctx, t)
	if err == nil {
		s.mu.Lock()
		s.last = fid
		s.mu.Unlock()
	}
	return fid, err
}

// lostCommit: success reported, nothing committed.
type lostCommit struct {
	store.Backend
	n *nth
}

func (s *lostCommit) CommitFile(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	if !s.n.hit() {
		return s.Backend.CommitFile(ctx, c)
	}
	devs := slices.Clone(c.DevIDs)
	slices.Sort(devs)
	devs = slices.Compact(devs)
	return store.CommitResult{File: store.File{Fid: c.Fid, DomainID: c.DomainID, Key: c.Key,
		Length: c.Length, ClassID: c.ClassID, DevCount: len(devs)}}, nil
}
