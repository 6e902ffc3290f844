package etcd

import (
	"context"
	"fmt"

	"github.com/gomogile/gomogile/store"
)

// KillSession ends, at the server, the lease behind g (and so every grant
// of the Store on it), as an operator's etcdctl lease revoke would; the
// Service is not told and finds out at its next renewal. For tests and
// fault drills (conformance.Faults).
func (s *Service) KillSession(ctx context.Context, g store.LockGrant) error {
	l, ok := g.(*grant)
	if !ok || l.s != s {
		return fmt.Errorf("etcd: %v is not a grant of this service: %w", g, store.ErrInvalid)
	}
	if _, err := s.cli.Revoke(ctx, l.g.sess.Lease()); err != nil {
		return fmt.Errorf("etcd: revoke: %w", err)
	}
	return nil
}

// Crash stops renewing and drops the connection without releasing or
// revoking anything, as a tracker that dies: the lease expires at the
// server after its TTL. For tests and fault drills.
func (s *Service) Crash() {
	s.mu.Lock()
	s.crashed = true
	s.closed = true
	g := s.gen
	s.mu.Unlock()
	if g != nil {
		g.sess.Orphan()
	}
	s.cancel()
	s.cli.Close()
	s.wg.Wait()
	s.bg.Wait()
}
