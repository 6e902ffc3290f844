package boltstore

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/proclock"
)

// Named locks live in this process, which is the only one that can open the
// file: a proclock.Table per database file, shared by its Stores, which
// keeps only the names held or waited for.

// Lock takes name's slot, waiting at most timeout and no longer than ctx,
// then records the grant's token in the file before returning.
func (b *backend) Lock(ctx context.Context, name string, timeout time.Duration) (store.Lock, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	slot, err := b.f.locks.Acquire(ctx, name, timeout, b.done)
	if err != nil {
		return nil, err
	}
	// The slot is ours. The token goes into the file before anyone learns
	// of the grant, so a fence of the previous grant is refused from now
	// on, and a reopened file continues from it.
	token, err := b.bumpToken(ctx, name)
	if err != nil {
		slot.Free()
		return nil, err
	}
	l := &lock{b: b, name: name, slot: slot, token: token, lost: make(chan struct{})}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.locksGone {
		// Close ran meanwhile: the grant dies with the Store.
		slot.Free()
		return nil, store.ErrClosed
	}
	b.held[l] = struct{}{}
	return l, nil
}

var errTokenOverflow = fmt.Errorf("%w: fencing token would overflow", store.ErrInvalid)

// bumpToken raises name's token in lock_token and returns it. It is a
// write of its own, not fenced: a grant is not a guarded write.
func (b *backend) bumpToken(ctx context.Context, name string) (int64, error) {
	select {
	case b.f.wsem <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-b.f.wsem }()
	var token int64
	err := b.f.db.Update(func(tx *bolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		tokens := tx.Bucket(bLockToken)
		prev := getU64(tokens.Get([]byte(name)))
		if prev >= 1<<63-1 {
			return errTokenOverflow
		}
		token = int64(prev + 1)
		return tokens.Put([]byte(name), u64(uint64(token)))
	})
	return token, wrapErr(err)
}

// closeLocks marks every lock of the Store lost, closing Lost before its
// slot is freed, so no other Store can be granted a name before its old
// holder's Lost fired; waits of this Store end with ErrClosed.
func (b *backend) closeLocks() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.locksGone {
		return
	}
	b.locksGone = true
	close(b.done)
	for l := range b.held {
		l.state = lockLost
		close(l.lost)
		l.slot.Free()
		delete(b.held, l)
	}
}

const (
	lockHeld = iota
	lockReleased
	lockLost
)

type lock struct {
	b     *backend
	name  string
	slot  *proclock.Slot
	token int64
	lost  chan struct{}
	state int // guarded by b.mu
}

func (l *lock) Name() string          { return l.name }
func (l *lock) Token() int64          { return l.token }
func (l *lock) Lost() <-chan struct{} { return l.lost }

// Release frees the slot at once: it never waits, so ctx is not needed.
func (l *lock) Release(context.Context) error {
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
