package leaselock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Waits: how long a waiter polls between tries, and the wake-ups by name
// that bring a try forward (a release by this Store, or one heard by the
// listener).

// wait is one Acquire's state across its tries.
type wait struct {
	b        *Locks
	name     string
	key      []byte
	timeout  time.Duration
	deadline time.Time
	wake     chan struct{} // nil when timeout is 0: one try, nothing to wake
	marked   int64         // the holding this wait marked (WaitMarker)
	start    time.Time
	backoff  time.Duration // the next poll interval
	timer    *time.Timer   // nil until the first pause
	// tried is set once a try met the name's row: the name was taken,
	// gated, or granted. Until then the wait goes on past its deadline,
	// to ctx's end: a try the Store could not make (its own lease overdue
	// or being registered again, as in a process the machine held back)
	// says nothing of the name, and Lock(name, 0) is one real try.
	tried bool
}

// newWait begins one Acquire's wait for name; end must follow.
func (b *Locks) newWait(name string, timeout time.Duration) *wait {
	w := &wait{b: b, name: name, timeout: timeout, deadline: time.Now().Add(timeout)}
	if timeout > 0 {
		// Registered before the first try, so a release between that
		// try and the wait is not missed: this Store's own releases wake
		// it always (Release), other Stores' through notifications when
		// listening (without them it also polls).
		w.wake = b.addWaiter(name)
	}
	w.key = []byte(name)
	w.start = time.Now()
	w.backoff = b.nextBackoff(0, 0)
	return w
}

// end stops the wait's timer and unregisters its wake-ups.
func (w *wait) end() {
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.wake != nil {
		w.b.removeWaiter(w.name, w.wake)
	}
}

// mark asks the release of the holding that refused this wait to notify,
// if the DB is a WaitMarker, this Store listens, and the wait has not
// marked that holding yet. It reports whether the holding had gone
// meanwhile, so that the wait tries again at once.
func (w *wait) mark(ctx context.Context, holder int64) (again bool) {
	wm, ok := w.b.db.(WaitMarker)
	if !ok || !w.b.listening() || (holder != 0 && holder == w.marked) {
		return false
	}
	// Ask this holding's release to notify; if it went meanwhile, try
	// again at once.
	found, err := wm.MarkWaited(ctx, w.key)
	if err == nil && !found && time.Now().Before(w.deadline) {
		return true
	}
	if err == nil {
		w.marked = holder
	}
	return false
}

// pause fails the wait once its deadline has passed; otherwise it sleeps
// until the next poll, a wake-up for the name, the next registration
// (ready, while there is no incarnation) or the end of ctx or the Store.
func (w *wait) pause(ctx context.Context, inc *incarnation, ready <-chan struct{}, why error) error {
	now := time.Now()
	d := w.backoff
	switch {
	case now.Before(w.deadline):
		d = min(d, w.deadline.Sub(now))
	case w.tried, inc == nil && why != nil:
		// Refused by the name's holder, or no owner could be registered
		// (the database unreachable: waiting on would only hide it).
		return w.timedOut(inc, why)
	}
	w.backoff = w.b.nextBackoff(w.backoff, now.Sub(w.start))
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.b.ctx.Done():
		return store.ErrClosed
	case <-w.wake:
		w.b.notifyWakeups.Add(1)
		w.backoff = w.b.nextBackoff(0, 0)
	case <-ready:
	case <-w.timer.C:
	}
	w.timer.Stop()
	return nil
}

// timedOut is the error of a wait whose deadline passed; inc and why are
// what current last returned.
func (w *wait) timedOut(inc *incarnation, why error) error {
	if inc == nil && errors.Is(why, store.ErrUnavailable) {
		// Not a lock someone holds: no owner could be registered.
		return fmt.Errorf("no lock owner registered within %v: %w", w.timeout, why)
	}
	return fmt.Errorf("%w after %v", store.ErrLockTimeout, w.timeout)
}

// nextBackoff is a waiter's poll interval after prev (0: its first),
// waited elapsed so far.
func (b *Locks) nextBackoff(prev, elapsed time.Duration) time.Duration {
	switch {
	case b.listening():
		return max(min(prev*2, maxBackoff), minBackoff)
	case elapsed < pollShortFor:
		return max(min(prev*2, pollShortMax), pollMin)
	default:
		return max(min(prev*2, maxBackoff), pollMin)
	}
}

func (b *Locks) addWaiter(name string) chan struct{} {
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

func (b *Locks) removeWaiter(name string, ch chan struct{}) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if m := b.waiters[name]; m != nil {
		delete(m, ch)
		if len(m) == 0 {
			delete(b.waiters, name)
		}
	}
}

func (b *Locks) wake(name string) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	for ch := range b.waiters[name] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (b *Locks) wakeAll() {
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
