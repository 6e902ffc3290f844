package leaselock

import (
	"time"
)

// Waits: how long a waiter polls between tries, and the wake-ups by name
// that bring a try forward (a release by this Store, or one heard by the
// listener).

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
