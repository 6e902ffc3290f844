package broken

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

// inProcessLease is the lease late-lost and unfenced give a lock that the
// backend itself never loses (LockMechanism "in-process", SQLite: its
// locks live as long as the one process that owns the database): short
// enough that a holder thinking a few milliseconds between its lock check
// and its write outlives it.
const inProcessLease = 5 * time.Millisecond

// leaseFor is Config.Lease, defaulted for s's lock mechanism: a backend
// whose locks are lost by faults of their own (sessions, leases) needs no
// made-up expiry.
func leaseFor(s store.Backend, c Config) time.Duration {
	if c.Lease != 0 {
		return max(c.Lease, 0)
	}
	if s.Capabilities().LockMechanism == "in-process" {
		return inProcessLease
	}
	return 0
}

// expiringLock is a real lock seen through a lease that runs out while
// its holder may still believe it holds it: once held for lease, the real
// lock is released underneath (as a lease lock's server reaps a holder
// that did not renew in time) and the next Lock may be granted; Lost
// closes late after that, or after the real Lost, whichever comes first.
// With lease 0 only the real Lost counts.
type expiringLock struct {
	store.Lock
	lost     chan struct{}
	released chan struct{}
	rel      sync.Once

	free    sync.Once // releases the real lock, for the expiry or the holder
	freeErr error
	expired bool // set before free ran for the expiry
}

func expiring(l store.Lock, lease, late time.Duration) *expiringLock {
	el := &expiringLock{Lock: l, lost: make(chan struct{}), released: make(chan struct{})}
	go el.watch(lease, late)
	return el
}

func (l *expiringLock) watch(lease, late time.Duration) {
	var expiry <-chan time.Time
	if lease > 0 {
		t := time.NewTimer(lease)
		defer t.Stop()
		expiry = t.C
	}
	closedEarly := false
	select {
	case <-l.Lock.Lost():
	case <-expiry:
		if late == 0 {
			closedEarly = true
			// On time: the holder hears of it before the real lock is
			// free for another Store, as a lease lock's Lost fires before
			// the server may reap it.
			close(l.lost)
		}
		l.free.Do(func() {
			l.expired = true
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l.freeErr = l.Lock.Release(ctx)
		})
	case <-l.released:
		return
	}
	if late > 0 {
		time.Sleep(late)
	} else if closedEarly {
		return
	}
	close(l.lost)
}

func (l *expiringLock) Lost() <-chan struct{} { return l.lost }

// Release releases the real lock unless its lease already expired, in
// which case the lock was lost and Release says so, as store.Lock's does.
func (l *expiringLock) Release(ctx context.Context) error {
	l.free.Do(func() { l.freeErr = l.Lock.Release(ctx) })
	// A lock released before its loss needs no forwarding; one already
	// lost keeps its delayed Lost (Release does not close Lost).
	l.rel.Do(func() { close(l.released) })
	if l.expired {
		return fmt.Errorf("broken: lock %q: its lease expired: %w", l.Name(), store.ErrLockLost)
	}
	return l.freeErr
}
