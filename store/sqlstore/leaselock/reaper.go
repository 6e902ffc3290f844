package leaselock

import (
	"context"

	"github.com/gomogile/gomogile/store"
)

// The reaper: freeing the locks of owners whose lease has expired, on the
// renewer's schedule and whenever a waiter finds the holder dead.

// reapOn frees the locks of every owner whose lease has expired. A failure
// needs no handling here: if it broke the session, the renewer's loop finds
// it closed; the deadline is expire's to enforce.
func (b *Locks) reapOn(conn Session, inc *incarnation) {
	b.mu.Lock()
	deadline := inc.deadline
	b.mu.Unlock()
	ctx, cancel := context.WithDeadline(b.ctx, deadline)
	defer cancel()
	if n, err := conn.EvictExpired(ctx); err == nil {
		b.reaped.Add(n)
	}
}

// reap frees the locks of every expired owner and returns how many it freed.
func (b *Locks) reap(ctx context.Context) (int64, error) {
	n, err := b.db.EvictExpired(ctx)
	if err == nil {
		b.reaped.Add(n)
	}
	return n, err
}

// LockStats implements the optional method that sqlstore.Store.LockStats
// forwards: how many locks of expired owners this Store's reaps freed, how
// many of its waits a wake-up ended, and its current owner incarnation.
func (b *Locks) LockStats() store.LockStats {
	st := store.LockStats{Reaped: b.reaped.Load(), Woken: b.notifyWakeups.Load()}
	b.mu.Lock()
	if b.cur != nil {
		st.Owner = b.cur.id
	}
	b.mu.Unlock()
	return st
}
