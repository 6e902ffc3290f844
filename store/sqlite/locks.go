package sqlite

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/proclock"
)

// lockBackend is one Store's view of the file's lock table (one per file
// in the process, shared by its Stores): it remembers what this Store
// holds so that closing the Store frees it.
type lockBackend struct {
	table *proclock.Table

	done chan struct{} // closed by Close, ending every wait

	mu     sync.Mutex
	held   map[*lock]struct{}
	closed bool
}

var _ store.LockService = (*lockBackend)(nil)

func newLockBackend(t *proclock.Table) *lockBackend {
	return &lockBackend{table: t, held: map[*lock]struct{}{}, done: make(chan struct{})}
}

// Describe implements store.LockService.
func (b *lockBackend) Describe() string { return "database (SQLite, in-process)" }

// DeadOwnerBound implements store.LockService: a Store's locks go with it.
func (b *lockBackend) DeadOwnerBound() time.Duration { return 0 }

// Token implements store.LockGrant: 0, the Store bumps the token in the
// database after the grant (sqlstore's Fencing.Bump).
func (l *lock) Token() int64 { return 0 }

// Acquire takes the name's slot, waiting at most timeout.
func (b *lockBackend) Acquire(ctx context.Context, name string, timeout time.Duration) (store.LockGrant, error) {
	slot, err := b.table.Acquire(ctx, name, timeout, b.done)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		slot.Free()
		return nil, store.ErrClosed
	}
	l := &lock{b: b, name: name, slot: slot, lost: make(chan struct{})}
	b.held[l] = struct{}{}
	return l, nil
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
		l.slot.Free()
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
	slot  *proclock.Slot
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
	l.slot.Free()
	return nil
}
