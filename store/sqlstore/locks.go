package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/gomogile/gomogile/store"
)

// heldLock is the handle Lock returns: the lock mechanism's grant and its
// fencing token.
type heldLock struct {
	s     *Store
	inner store.LockGrant
	token int64
}

func (h *heldLock) Name() string          { return h.inner.Name() }
func (h *heldLock) Lost() <-chan struct{} { return h.inner.Lost() }
func (h *heldLock) String() string        { return fmt.Sprintf("lock %q", h.inner.Name()) }
func (h *heldLock) Token() int64          { return h.token }
func (h *heldLock) Release(ctx context.Context) error {
	return h.s.wrap(h.inner.Release(ctx))
}

// Lock acquires a named lock through the backend.
func (s *Store) Lock(ctx context.Context, name string, timeout time.Duration) (store.Lock, error) {
	l, err := s.locks.Acquire(ctx, name, timeout)
	if err != nil {
		return nil, s.wrap(err)
	}
	token := l.Token()
	switch {
	case s.outside:
		// The service's token, raised into the durable fence before the
		// holder can write under it.
		if token <= 0 {
			err = fmt.Errorf("lock service granted %q without a fencing token", name)
		} else {
			err = s.raiseFence(ctx, name, token)
		}
	case token > 0:
		// Bumped by the grant itself.
		s.renewFenceEpoch(ctx, token)
	case s.d.Fencing().Bump == "":
		err = fmt.Errorf("backend granted %q without a fencing token", name)
	default:
		token, err = s.bumpFence(ctx, name)
	}
	if err != nil {
		// Not a grant without its token. A bump that applied unseen is
		// harmless: tokens only have to grow.
		s.abandon(ctx, l)
		return nil, s.wrap(fmt.Errorf("fencing token: %w", err))
	}
	if s.closed.Load() {
		// Close raced with the acquisition; do not leave it held.
		s.abandon(ctx, l)
		return nil, store.ErrClosed
	}
	return &heldLock{s: s, inner: l, token: token}, nil
}

// abandon releases a grant Lock will not return. A database's own lock is
// released past ctx's end, on its session. An outside lock service's is
// released under ctx, so that the caller's deadline holds: a service that
// cannot answer in time finishes the release in the background
// (store.LockGrant.Release).
func (s *Store) abandon(ctx context.Context, l store.LockGrant) {
	if s.outside {
		_ = l.Release(ctx)
		return
	}
	_ = l.Release(context.WithoutCancel(ctx))
}
