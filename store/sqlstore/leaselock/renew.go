package leaselock

import (
	"context"
	"fmt"
	"time"

	"github.com/gomogile/gomogile/store"
)

// The renewer: a goroutine on a session of its own that keeps the
// incarnation alive, reaps on a schedule, and registers a new incarnation
// after a loss.

// renewLoop keeps the incarnation alive, reaps dead owners, and replaces the
// incarnation after a loss. It owns conn.
func (b *Locks) renewLoop(conn Session) {
	defer b.wg.Done()
	r := b.newRenewer(conn)
	defer r.close()
	for {
		b.mu.Lock()
		inc := b.cur
		b.mu.Unlock()

		if r.conn == nil || r.conn.Closed() || inc == nil {
			if !r.revive(inc) {
				return
			}
			continue
		}
		kicked, ok := r.waitDue()
		if !ok {
			return
		}
		b.mu.Lock()
		gone := inc.gone
		b.mu.Unlock()
		if gone {
			continue // expired meanwhile: register anew
		}
		r.renewOrReap(inc, kicked)
	}
}

// renewer is renewLoop's state: its session and its schedule.
type renewer struct {
	b         *Locks
	conn      Session // nil until reconnect opens one
	every     time.Duration
	nextRenew time.Time
	nextReap  time.Time
	retry     time.Duration // the pause after a failed reconnect
	timer     *time.Timer
}

func (b *Locks) newRenewer(conn Session) *renewer {
	every := b.cfg.renewEvery()
	nextRenew := time.Now().Add(every)
	nextReap := time.Now().Add(b.cfg.Reap)
	return &renewer{b: b, conn: conn, every: every, nextRenew: nextRenew, nextReap: nextReap,
		retry: minBackoff, timer: time.NewTimer(0)}
}

// close stops the timer and ends the session.
func (r *renewer) close() {
	r.timer.Stop()
	if r.conn != nil {
		r.conn.Close()
	}
}

// revive gives up the current incarnation inc (nil if there is none) if
// the session died, and has reconnect open a session and register anew;
// after a failure it pauses, doubling the pause up to a second. It
// reports false once the Store is closing.
func (r *renewer) revive(inc *incarnation) bool {
	b := r.b
	if r.conn != nil && r.conn.Closed() {
		// The renewer's session died (a reaper pass or the
		// listener found it so): as in renew, that forfeits.
		if inc != nil {
			b.loseSession(inc, nil)
		}
		r.conn.Close()
		r.conn = nil
	}
	err := b.reconnect(&r.conn)
	if err == nil {
		r.retry = minBackoff
		r.nextRenew = time.Now().Add(r.every)
		return true
	}
	if b.ctx.Err() != nil {
		return false
	}
	if !sleepCtx(b.ctx, r.retry) {
		return false
	}
	r.retry = min(r.retry*2, time.Second)
	return true
}

// waitDue waits until a renewal or a reap is due, or a kick asks for a
// renewal now (kicked). It reports false once the Store is closing.
func (r *renewer) waitDue() (kicked, ok bool) {
	r.timer.Reset(max(min(time.Until(r.nextRenew), time.Until(r.nextReap)), 0))
	select {
	case <-r.b.ctx.Done():
		return false, false
	case <-r.b.kick:
		kicked = true
	case <-r.timer.C:
	}
	r.timer.Stop() // since Go 1.23 no stale tick survives Stop
	return kicked, true
}

// renewOrReap renews inc when kicked or due and otherwise reaps when due,
// and schedules the next time for what it did.
func (r *renewer) renewOrReap(inc *incarnation, kicked bool) {
	now := time.Now()
	if kicked || !now.Before(r.nextRenew) {
		sent := now
		if r.b.renew(r.conn, inc) {
			// Counted from the sending, not the reply: slow round
			// trips must not eat the attempts left before the
			// deadline (lease - lease/5 after this sending).
			r.nextRenew = sent.Add(r.every)
		} else {
			// A failure that was not a loss: try again soon, but the
			// deadline check in renew still applies.
			r.nextRenew = time.Now().Add(min(r.every/4, 50*time.Millisecond))
		}
		return
	}
	if !now.Before(r.nextReap) {
		r.b.reapOn(r.conn, inc)
		r.nextReap = time.Now().Add(r.b.cfg.Reap)
	}
}

// reconnect opens the renewer's session if needed and registers a new
// incarnation. Nothing is held meanwhile (the renewer comes here only without
// an incarnation), so a lease is as long as it may take.
func (b *Locks) reconnect(conn *Session) error {
	ctx, cancel := context.WithTimeout(b.ctx, b.cfg.Lease)
	defer cancel()
	if *conn == nil {
		c, err := b.db.Session(ctx)
		if err != nil {
			if b.ctx.Err() == nil && ctx.Err() != nil {
				// No answer within a lease: a partition or a hung server.
				err = fmt.Errorf("%w: no answer within %v: %w", store.ErrUnavailable, b.cfg.Lease, err)
			}
			err = fmt.Errorf("%s: lock session: %w", b.cfg.Name, err)
			b.mu.Lock()
			b.regErr = err
			b.mu.Unlock()
			return err
		}
		*conn = c
	}
	b.mu.Lock()
	needs := b.cur == nil
	b.mu.Unlock()
	if !needs {
		return nil
	}
	err := b.register(ctx, *conn)
	if err != nil && (*conn).Closed() {
		(*conn).Close()
		*conn = nil
	}
	return err
}

// renew extends inc's lease. It reports whether the lease was extended; on
// a loss it has already fired Lost and cleared the incarnation.
func (b *Locks) renew(conn Session, inc *incarnation) bool {
	b.mu.Lock()
	deadline := inc.deadline
	b.mu.Unlock()
	ctx, cancel := context.WithDeadline(b.ctx, deadline)
	defer cancel()
	sent := time.Now()
	ok, err := conn.Renew(ctx, inc.id, b.cfg.Lease)
	switch {
	case b.ctx.Err() != nil:
		return false
	case err == nil && ok:
		b.mu.Lock()
		if !inc.gone {
			inc.deadline = sent.Add(b.cfg.Lease - b.cfg.margin())
		}
		b.mu.Unlock()
		return true
	case err == nil:
		// The sentinel is gone: reaped after expiring, or evicted by a
		// Store claiming our identity. Its locks went with it.
		b.lose(inc)
		return false
	case conn.Closed():
		// The renewer's session died (terminated, server restart). Our
		// rows may outlive it until they expire; re-registration evicts
		// them at once instead.
		b.loseSession(inc, err)
		return false
	case !time.Now().Before(deadline):
		b.lose(inc) // expire has done so, or is about to
		return false
	}
	return false
}

func (b *Locks) poke() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}
