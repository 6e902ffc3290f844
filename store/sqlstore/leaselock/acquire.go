package leaselock

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Acquire and its tries: each try is one DB.Acquire under the current
// incarnation, which grants the name only to a live owner once the epoch
// is a lease old, and may bump the name's fencing token with the grant.

type tryResult int

const (
	tryTaken tryResult = iota
	tryAcquired
	tryHolderDead
	tryOwnerGone
	tryGated // the lock epoch is younger than a lease
)

// Acquire implements store.LockService.
func (b *Locks) Acquire(ctx context.Context, name string, timeout time.Duration) (store.LockGrant, error) {
	w := b.newWait(name, timeout)
	defer w.end()
	for {
		inc, ready, why, err := b.current()
		if err != nil {
			return nil, err
		}
		if inc != nil {
			l, again, err := w.attempt(ctx, inc)
			switch {
			case err != nil:
				return nil, err
			case l != nil:
				return l, nil
			case again:
				continue
			}
		}
		if err := w.pause(ctx, inc, ready, why); err != nil {
			return nil, err
		}
	}
}

// attempt makes one try for the wait's name under inc and acts on a
// refusal: it reaps a dead holder, kicks the renewer when inc is gone, and
// marks a holding that took the name. It returns the lock, or whether to
// try again at once rather than wait.
func (w *wait) attempt(ctx context.Context, inc *incarnation) (l *lock, again bool, err error) {
	var holder int64
	l, res, err := w.b.try(ctx, w.key, w.name, inc, &holder)
	if err != nil {
		return nil, false, err
	}
	if res == tryAcquired || res == tryTaken || res == tryGated {
		w.tried = true
	}
	switch res {
	case tryAcquired:
		return l, false, nil
	case tryHolderDead:
		n, err := w.b.reap(ctx)
		return nil, err == nil && n > 0, nil
	case tryOwnerGone:
		w.b.poke()
	case tryTaken:
		return nil, w.mark(ctx, holder), nil
	}
	return nil, false, nil
}

// try makes one attempt for name under inc. It waits no longer than inc's
// deadline: a grant after it could not be handed out anyway.
//
// When the name is taken, holder is set to the holding's token (which
// tells one holding from the next), if the attempt saw it.
func (b *Locks) try(ctx context.Context, key []byte, name string, inc *incarnation, holder *int64) (*lock, tryResult, error) {
	b.mu.Lock()
	deadline := inc.deadline
	b.mu.Unlock()
	qctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	token := rand.Int64()
	for attempt := 0; ; attempt++ {
		a, err := b.db.Acquire(qctx, key, inc.id, token, b.cfg.Lease)
		if err != nil {
			if ctx.Err() == nil && qctx.Err() != nil {
				// Our incarnation's deadline, not the caller's: the
				// incarnation is being lost; wait for the next.
				b.forget(key, inc.id, token)
				return nil, tryOwnerGone, nil
			}
			if errors.Is(err, store.ErrUnavailable) && attempt < 3 && ctx.Err() == nil {
				// The row may have gone in; the token recognises it.
				continue
			}
			b.forget(key, inc.id, token)
			return nil, 0, err
		}
		res, fence := outcome(a, token)
		if res != tryAcquired {
			if res == tryTaken && a.HolderToken != nil {
				*holder = *a.HolderToken
			}
			return nil, res, nil
		}
		l := &lock{b: b, name: name, inc: inc, token: token, fence: fence, lost: make(chan struct{})}
		if !b.keep(l) {
			// The incarnation was lost while the row went in: nobody
			// may rely on it. Re-registration or Close removes it too.
			b.forget(key, inc.id, token)
			return nil, tryOwnerGone, nil
		}
		return l, tryAcquired, nil
	}
}

// outcome decides what one DB.Acquire found for the try whose token is
// token: tryAcquired, with the fencing token the lock carries, when the
// row is the try's own; otherwise why not.
func outcome(a Attempt, token int64) (res tryResult, fence int64) {
	fence = a.Fence
	switch {
	case a.Inserted:
	case a.HolderToken != nil && *a.HolderToken == token:
		// An earlier attempt's row, whose fencing token (if any)
		// went unseen: sqlstore bumps it again.
		fence = 0
	case !a.OwnerAlive:
		return tryOwnerGone, 0
	case !a.Open:
		return tryGated, 0
	case a.HolderDead:
		return tryHolderDead, 0
	default:
		return tryTaken, 0
	}
	return tryAcquired, fence
}

// keep records l, just granted, among its incarnation's locks, unless the
// incarnation was lost meanwhile: it reports whether l may be handed out.
func (b *Locks) keep(l *lock) bool {
	inc := l.inc
	b.mu.Lock()
	defer b.mu.Unlock()
	// Not past the deadline either: expire may not have run yet.
	ok := !inc.gone && !b.closed && !b.crashed && time.Now().Before(inc.deadline)
	if ok {
		inc.locks[l] = struct{}{}
	}
	return ok
}

// forget deletes a row this Store may have inserted without handing out a
// Lock for it (the statement's outcome was unknown, or its incarnation was
// lost meanwhile), in the background and best effort: if it fails, the row
// goes with the incarnation at the next registration or Close.
func (b *Locks) forget(key []byte, owner, token int64) {
	b.mu.Lock()
	if b.closed || b.crashed {
		b.mu.Unlock()
		return
	}
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(b.ctx, closeTimeout)
		defer cancel()
		_, _ = b.db.Release(ctx, key, owner, token)
	}()
}
