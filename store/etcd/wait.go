package etcd

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/gomogile/gomogile/store"
)

// Waiting: a name's gate in the Store, the wait in etcd, and the key taken
// back after a wait or a release etcd did not answer in time.

// gate makes a name's locks non-reentrant within the Store: one slot, and
// a count of the callers using the entry, so it can be forgotten.
type gate struct {
	slot  chan struct{}
	users int
	// dropping, while the slot is held by dropLater taking this Store's
	// key back, is closed once it has: a try-once waits for that, which
	// takes a round trip, rather than call the name held.
	dropping chan struct{}
}

// enter takes name's slot in the Store, waiting until deadline (trying
// once when try); it returns the gate to leave.
func (s *Service) enter(ctx context.Context, name string, try bool, deadline time.Time) (*gate, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, store.ErrClosed
	}
	gt := s.gates[name]
	if gt == nil {
		gt = &gate{slot: make(chan struct{}, 1)}
		s.gates[name] = gt
	}
	gt.users++
	s.mu.Unlock()
	select {
	case gt.slot <- struct{}{}:
		return gt, nil
	default:
	}
	var err error
	if try {
		s.mu.Lock()
		d := gt.dropping
		s.mu.Unlock()
		if d != nil {
			select {
			case <-d:
			case <-ctx.Done():
			case <-s.stop.Done():
			}
			select {
			case gt.slot <- struct{}{}:
				return gt, nil
			default:
			}
		}
		err = fmt.Errorf("%w: %q is held by this Store", store.ErrLockTimeout, name)
	} else {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case gt.slot <- struct{}{}:
			return gt, nil
		case <-t.C:
			err = fmt.Errorf("%w: %q still held by this Store", store.ErrLockTimeout, name)
		case <-ctx.Done():
			err = ctx.Err()
		case <-s.stop.Done():
			err = store.ErrClosed
		}
	}
	s.leave(name, gt, false)
	return nil, err
}

// leave gives up a use of name's gate, freeing its slot when held.
func (s *Service) leave(name string, gt *gate, held bool) {
	if held {
		<-gt.slot
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	gt.users--
	if gt.users == 0 && s.gates[name] == gt {
		delete(s.gates, name)
	}
}

// wait takes m, waiting in etcd until deadline, ctx's end or g's loss,
// whichever comes first. Mutex.Lock cleans up after a wait that ended
// with a context of the client's own, without a deadline: during an
// election (some 6 s) or a partition (until it heals) it would hold the
// caller past its deadline. So the wait runs apart, and when wait gives
// up on it, it also returns the channel its outcome will come on.
func (s *Service) wait(ctx context.Context, g *generation, m *concurrency.Mutex, deadline time.Time) (chan error, error) {
	wctx, cancel := context.WithCancel(s.stop)
	done := make(chan error, 1)
	go func() { done <- m.Lock(wctx) }()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	var err error
	select {
	case err := <-done:
		cancel()
		return nil, err
	case <-t.C:
		err = context.DeadlineExceeded
	case <-ctx.Done():
		err = ctx.Err()
	case <-g.lost:
		err = store.ErrUnavailable
	case <-s.stop.Done():
		err = store.ErrClosed
	}
	cancel()
	return done, err
}

// dropLater removes this Store's key for name from etcd in the background
// (after pending, the outcome of a wait given up on, when there is one),
// then frees the name in the Store: a key left behind under a live lease
// would be granted to nobody, and a new Mutex on the same lease would
// share it. It gives up once the lease is gone (its keys with it) or the
// Service stops (Close revokes the lease).
func (s *Service) dropLater(name string, gt *gate, g *generation, m *concurrency.Mutex, pending chan error) {
	key := fmt.Sprintf("%s/%x", s.key(name), g.sess.Lease())
	dropped := make(chan struct{})
	s.mu.Lock()
	gt.dropping = dropped
	s.mu.Unlock()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer func() {
			s.mu.Lock()
			gt.dropping = nil
			s.mu.Unlock()
			s.leave(name, gt, true)
			close(dropped)
		}()
		if pending != nil {
			<-pending
		}
		for pause := 50 * time.Millisecond; ; pause = min(2*pause, s.cfg.TTL/3) {
			if g.isLost() {
				return
			}
			ctx, cancel := context.WithTimeout(s.stop, s.cfg.TTL/3)
			_, err := s.cli.Delete(ctx, key)
			cancel()
			if err == nil {
				return
			}
			select {
			case <-s.stop.Done():
				return
			case <-g.lost:
				return
			case <-time.After(pause):
			}
		}
	}()
}
