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
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	every := b.cfg.renewEvery()
	nextRenew := time.Now().Add(every)
	nextReap := time.Now().Add(b.cfg.Reap)
	retry := minBackoff
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		b.mu.Lock()
		inc := b.cur
		b.mu.Unlock()

		if conn == nil || conn.Closed() || inc == nil {
			if conn != nil && conn.Closed() {
				// The renewer's session died (a reaper pass or the
				// listener found it so): as in renew, that forfeits.
				if inc != nil {
					b.loseSession(inc, nil)
				}
				conn.Close()
				conn = nil
			}
			err := b.reconnect(&conn)
			if err == nil {
				retry = minBackoff
				nextRenew = time.Now().Add(every)
				continue
			}
			if b.ctx.Err() != nil {
				return
			}
			if !sleepCtx(b.ctx, retry) {
				return
			}
			retry = min(retry*2, time.Second)
			continue
		}

		timer.Reset(max(min(time.Until(nextRenew), time.Until(nextReap)), 0))
		kicked := false
		select {
		case <-b.ctx.Done():
			return
		case <-b.kick:
			kicked = true
		case <-timer.C:
		}
		timer.Stop() // since Go 1.23 no stale tick survives Stop
		b.mu.Lock()
		gone := inc.gone
		b.mu.Unlock()
		if gone {
			continue // expired meanwhile: register anew
		}

		now := time.Now()
		if kicked || !now.Before(nextRenew) {
			sent := now
			if b.renew(conn, inc) {
				// Counted from the sending, not the reply: slow round
				// trips must not eat the attempts left before the
				// deadline (lease - lease/5 after this sending).
				nextRenew = sent.Add(every)
			} else {
				// A failure that was not a loss: try again soon, but the
				// deadline check in renew still applies.
				nextRenew = time.Now().Add(min(every/4, 50*time.Millisecond))
			}
			continue
		}
		if !now.Before(nextReap) {
			b.reapOn(conn, inc)
			nextReap = time.Now().Add(b.cfg.Reap)
		}
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
