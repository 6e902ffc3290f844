package leaselock

import (
	"context"
	"errors"
	"sync"

	"github.com/gomogile/gomogile/store"
)

// A held lock: its row (name, owner, token), Lost, and Release.

type lockState int

const (
	held lockState = iota
	released
	lost
)

// lock is a held lock: a row (name, owner, token).
type lock struct {
	b     *Locks
	name  string
	inc   *incarnation
	token int64 // this Acquire's own, telling its row from another's
	fence int64 // the fencing token DB.Acquire gave the grant, 0 if none
	lost  chan struct{}
	relMu sync.Mutex // one Release at a time
	// tried records a Release that failed after its DELETE may have been
	// applied, so a missing row later is ours gone, not a loss.
	tried bool      // guarded by relMu
	state lockState // guarded by b.mu
}

var _ store.LockGrant = (*lock)(nil)

func (l *lock) Name() string          { return l.name }
func (l *lock) Lost() <-chan struct{} { return l.lost }
func (l *lock) Token() int64          { return l.fence }

// Release implements store.Lock.
func (l *lock) Release(ctx context.Context) error {
	b := l.b
	l.relMu.Lock()
	defer l.relMu.Unlock()
	b.mu.Lock()
	st := l.state
	b.mu.Unlock()
	switch st {
	case released:
		return nil
	case lost:
		return store.ErrLockLost
	}
	for attempt := 0; ; attempt++ {
		found, err := b.db.Release(ctx, []byte(l.name), l.inc.id, l.token)
		if err != nil {
			l.tried = true
			if errors.Is(err, store.ErrUnavailable) && attempt < 3 && ctx.Err() == nil {
				continue
			}
			return err
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		// After a failed attempt, a missing row is most likely that
		// attempt's DELETE having committed; had the lock been reaped,
		// the renewer would have marked it lost.
		if found || l.tried && l.state == held {
			l.state = released
			delete(l.inc.locks, l)
			// This Store's waiters for the name try at once, whether
			// or not a notification would reach them (behind a
			// transaction pooler none does). A wake-up only brings a
			// try forward; the database still decides who gets it.
			b.wake(l.name)
			return nil
		}
		if l.state == held {
			l.state = lost
			close(l.lost)
			delete(l.inc.locks, l)
		}
		return store.ErrLockLost
	}
}
