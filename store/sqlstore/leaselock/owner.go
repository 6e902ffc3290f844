package leaselock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gomogile/gomogile/store"
)

// The owner's incarnations: registering one, and giving up its locks
// (Lost) when its deadline passes, its sentinel is gone or its renewer's
// session ends.

// errSessionClosed is why locks were lost when a session ended without an
// error of its own.
var errSessionClosed = errors.New("leaselock: lock session closed")

// incarnation is one registration of the owner: a sentinel row and the
// locks that reference it.
type incarnation struct {
	id int64
	// timer fires expire at deadline, whatever the renewer is doing
	// (blocked in a query, reconnecting, cut off without a FIN): the
	// promise that Lost comes before the lease can run out on the server
	// must not depend on the connection.
	timer *time.Timer
	// Guarded by Locks.mu.
	deadline time.Time // local, monotonic: give the locks up at this time
	locks    map[*lock]struct{}
	gone     bool
}

// register creates a fresh incarnation on conn, freeing at once the locks of
// this Store's previous one (after a loss) and of any expired incarnation of
// the identity (a restarted tracker's predecessor). While another
// incarnation of the identity is alive it waits: if that one renews, a
// live Store has the identity and register refuses it (store.ErrDuplicate);
// if it expires, its Store is dead, and register takes over at once.
func (b *Locks) register(ctx context.Context, conn Session) error {
	err := b.registerOnce(ctx, conn)
	b.mu.Lock()
	b.regErr = err
	b.mu.Unlock()
	return err
}

func (b *Locks) registerOnce(ctx context.Context, conn Session) error {
	var seen *time.Time // the other incarnation's expires_at when first seen
	for {
		b.mu.Lock()
		prev := b.lastID
		b.mu.Unlock()
		id := rand.Int64()
		sent := time.Now()
		reg, err := conn.Register(ctx, Owner{ID: id, Identity: b.cfg.Identity, Hostname: b.hostname, PID: b.pid}, prev, b.cfg.Lease)
		if err != nil {
			if errors.Is(err, store.ErrDuplicate) && ctx.Err() == nil {
				continue // owner_id collision: draw again
			}
			return fmt.Errorf("%s: register lock owner %q: %w", b.cfg.Name, b.cfg.Identity, err)
		}
		until := reg.LiveUntil
		if reg.Registered {
			b.install(id, sent)
			return nil
		}
		if until == nil {
			continue // it expired between the statement's two looks
		}
		if seen != nil && until.After(*seen) {
			return fmt.Errorf("%w: %s: lock owner identity %q is in use by another live Store (it renews its lease); "+
				"give every Store on this database its own identity with the DSN parameter lock_owner "+
				"(e.g. lock_owner=<host>:<port>, unique among trackers; the default, hostname:pid:n, repeats in containers with a fixed hostname)",
				store.ErrDuplicate, b.cfg.Name, b.cfg.Identity)
		}
		if seen == nil {
			seen = until
		}
		if !sleepCtx(ctx, b.cfg.Lease/20) {
			return fmt.Errorf("%s: register lock owner %q: waiting for the identity's previous owner to renew or expire: %w", b.cfg.Name, b.cfg.Identity, ctx.Err())
		}
	}
}

// install makes id, just registered, the current incarnation.
func (b *Locks) install(id int64, sent time.Time) {
	inc := &incarnation{id: id, deadline: sent.Add(b.cfg.Lease - b.cfg.margin()), locks: map[*lock]struct{}{}}
	b.mu.Lock()
	defer b.mu.Unlock()
	inc.timer = time.AfterFunc(time.Until(inc.deadline), func() { b.expire(inc) })
	b.cur = inc
	b.lastID = id
	close(b.ready)
}

// expire runs at inc's deadline: unless a renewal moved the deadline on
// meanwhile, the locks are given up now.
func (b *Locks) expire(inc *incarnation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if inc.gone || b.closed || b.crashed {
		return
	}
	if d := time.Until(inc.deadline); d > 0 {
		inc.timer.Reset(d)
		return
	}
	b.loseLocked(inc)
	b.poke() // the renewer registers a new incarnation
}

// lose fires Lost on every lock of inc and clears it, so the renewer
// registers a fresh incarnation (which deletes inc's rows) and Acquire waits.
func (b *Locks) lose(inc *incarnation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loseLocked(inc)
}

// loseSession is lose for an incarnation whose renewer's session ended
// (with err, if known): until the next registration, that is also why
// Acquire cannot lend a lock.
func (b *Locks) loseSession(inc *incarnation, err error) {
	if err == nil {
		err = errSessionClosed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !inc.gone {
		b.regErr = fmt.Errorf("%s: lock session ended: %w: %w", b.cfg.Name, store.ErrUnavailable, err)
	}
	b.loseLocked(inc)
}

func (b *Locks) loseLocked(inc *incarnation) {
	if inc.gone {
		return
	}
	inc.gone = true
	if inc.timer != nil {
		inc.timer.Stop()
	}
	if b.cur == inc {
		b.cur = nil
		b.ready = make(chan struct{})
	}
	for l := range inc.locks {
		if l.state == held {
			l.state = lost
			close(l.lost)
		}
	}
	inc.locks = nil
}

// current returns the live incarnation; or nil and, between a loss and the
// next registration, a channel closed at that registration and why the last
// registration failed (nil if none has yet).
func (b *Locks) current() (*incarnation, <-chan struct{}, error, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed || b.crashed:
		return nil, nil, nil, store.ErrClosed
	case b.cur == nil && errors.Is(b.regErr, store.ErrDuplicate):
		// Another live Store took the identity over: this one cannot
		// register again until that one is gone.
		return nil, nil, nil, b.regErr
	case b.cur == nil:
		return nil, b.ready, b.regErr, nil
	case !time.Now().Before(b.cur.deadline):
		// Renewal is late: the lease is no longer safe to lend out. The
		// renewer is about to renew or give the incarnation up.
		b.poke()
		return nil, nil, nil, nil
	}
	return b.cur, nil, nil, nil
}
