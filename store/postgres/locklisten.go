package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The LISTEN side of the lease locks: a session that hears releases and
// wakes the waiters of the names it hears, so a wait ends at the release
// instead of the next poll.

func (b *lockBackend) listenConn(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, b.connCfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: listen session: %w", lockErr(ctx, err))
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: listen session: %w", lockErr(ctx, err))
	}
	b.mu.Lock()
	b.listenPID = conn.PgConn().PID()
	b.mu.Unlock()
	return conn, nil
}

// listenLoop wakes waiters named in notifications. It owns conn. While it is
// down, waiters fall back to polling.
func (b *lockBackend) listenLoop(conn *pgx.Conn) {
	defer b.wg.Done()
	retry := minBackoff
	for {
		if conn != nil {
			for {
				n, err := conn.WaitForNotification(b.ctx)
				if err != nil {
					break
				}
				if name, err := hex.DecodeString(n.Payload); err == nil {
					b.wake(string(name))
				}
			}
			conn.Close(context.Background())
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

func (b *lockBackend) poke() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *lockBackend) addWaiter(name string) chan struct{} {
	ch := make(chan struct{}, 1)
	b.wmu.Lock()
	defer b.wmu.Unlock()
	m := b.waiters[name]
	if m == nil {
		m = map[chan struct{}]struct{}{}
		b.waiters[name] = m
	}
	m[ch] = struct{}{}
	return ch
}

func (b *lockBackend) removeWaiter(name string, ch chan struct{}) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if m := b.waiters[name]; m != nil {
		delete(m, ch)
		if len(m) == 0 {
			delete(b.waiters, name)
		}
	}
}

func (b *lockBackend) wake(name string) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	for ch := range b.waiters[name] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (b *lockBackend) wakeAll() {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	for _, m := range b.waiters {
		for ch := range m {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}
