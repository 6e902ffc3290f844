package leaselock

import (
	"context"
	"fmt"
	"time"
)

// The listening side of the lease locks: a session that hears releases and
// wakes the waiters of the names it hears, so a wait ends at the release
// instead of the next poll.

// listening reports whether waiters can count on wake-ups.
func (b *Locks) listening() bool {
	_, ok := b.db.(Notifier)
	return ok && !b.cfg.NoListen
}

func (b *Locks) listenConn(ctx context.Context) (Listener, error) {
	conn, err := b.db.(Notifier).Listen(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: listen session: %w", b.cfg.Name, err)
	}
	return conn, nil
}

// listenLoop wakes waiters named in notifications. It owns conn. While it is
// down, waiters fall back to polling.
func (b *Locks) listenLoop(conn Listener) {
	defer b.wg.Done()
	retry := minBackoff
	for {
		if conn != nil {
			for {
				name, err := conn.Next(b.ctx)
				if err != nil {
					break
				}
				b.wake(name)
			}
			conn.Close()
			conn = nil
			if b.ctx.Err() != nil {
				return
			}
			// Notifications may have been missed; and the same thing
			// may have ended the renewer's session, which must be
			// noticed before the next scheduled renewal.
			b.wakeAll()
			b.poke()
		}
		if !sleepCtx(b.ctx, retry) {
			return
		}
		c, err := b.listenConn(b.ctx)
		if err != nil {
			retry = min(retry*2, time.Second)
			continue
		}
		retry = minBackoff
		conn = c
		b.wakeAll()
	}
}
