package sqlite

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

// lockTable is the lock namespace of one database file in this process,
// shared by every Store open on it. A name is a one-slot semaphore: holding
// the lock is having put the token in.
type lockTable struct {
	mu   sync.Mutex
	sems map[string]chan struct{}
}

func (t *lockTable) sem(name string) chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.sems[name]
	if !ok {
		c = make(chan struct{}, 1)
		t.sems[name] = c
	}
	return c
}

// lockBackend is one Store's view of the file's lockTable: it remembers
// what this Store holds so that closing the Store frees it.
type lockBackend struct {
	table *lockTable

	done chan struct{} // closed by Close, ending every wait

	mu     sync.Mutex
	held   map[*lock]struct{}
	closed bool
}

var _ store.LockService = (*lockBackend)(nil)

func newLockBackend(t *lockTable) *lockBackend {
	return &lockBackend{table: t, held: map[*lock]struct{}{}, done: make(chan struct{})}
}

// Acquire takes the name's token, waiting at most timeout.
// Describe implements store.LockService.
func (b *lockBackend) Describe() string { return "database (SQLite, in-process)" }

// DeadOwnerBound implements store.LockService: a Store's locks go with it.
func (b *lockBackend) DeadOwnerBound() time.Duration { return 0 }

// Token implements store.LockGrant: 0, the Store bumps the token in the
// database after the grant (sqlstore's Fencing.Bump).
func (l *lock) Token() int64 { return 0 }

func (b *lockBackend) Acquire(ctx context.Context, name string, timeout time.Duration) (store.LockGrant, error) {
	sem := b.table.sem(name)
	take := func() (store.LockGrant, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.closed {
			<-sem
			return nil, store.ErrClosed
		}
		l := &lock{b: b, name: name, sem: sem, lost: make(chan struct{})}
		b.held[l] = struct{}{}
		return l, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case sem <- struct{}{}:
		return take()
	default:
	}
	if timeout == 0 {
		return nil, fmt.Errorf("%w: %q is held", store.ErrLockTimeout, name)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case sem <- struct{}{}:
		return take()
	case <-timer.C:
		return nil, fmt.Errorf("%w: %q still held after %v", store.ErrLockTimeout, name, timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.done:
		return nil, store.ErrClosed
	}
}

// Close marks every lock of this Store lost, then frees it, so Lost fires
// before anyone else can take the name.
func (b *lockBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		close(b.done)
	}
	b.closed = true
	for l := range b.held {
		l.state = lockLost
		close(l.lost)
		<-l.sem
		delete(b.held, l)
	}
	return nil
}

const (
	lockHeld = iota
	lockReleased
	lockLost
)

type lock struct {
	b     *lockBackend
	name  string
	sem   chan struct{}
	lost  chan struct{}
	state int // guarded by b.mu
}

func (l *lock) Name() string          { return l.name }
func (l *lock) Lost() <-chan struct{} { return l.lost }

func (l *lock) Release(ctx context.Context) error {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	switch l.state {
	case lockReleased:
		return nil
	case lockLost:
		return fmt.Errorf("%w: %q was freed when its Store closed", store.ErrLockLost, l.name)
	}
	l.state = lockReleased
	delete(l.b.held, l)
	<-l.sem
	return nil
}
