package sqlstore

import (
	"context"
	"fmt"

	"github.com/gomogile/gomogile/store"
)

// LockStarter is implemented by a lock mechanism (Config.Locks) that has work to start once
// the schema exists (registering a lease owner, starting its renewer). New
// calls Start after migrating and before returning the Store, so a backend
// needs no second step after New; Close stops it again before the database
// closes (its Close).
type LockStarter interface {
	Start(ctx context.Context) error
}

// LockFaults is implemented by a lock mechanism (the database's own or an
// outside lock service) that can cause the faults the conformance suite
// needs (conformance.Faults, which Store implements through it). They are
// for tests and fault drills only: each breaks the Store for real.
type LockFaults interface {
	// KillSession ends at the database or the service, as a crash or an
	// operator would, whatever keeps g alive (the pinned connection, the
	// lease's renewer session, an etcd lease), without telling the rest of
	// the mechanism: g.Lost must close on its own and another Store must
	// get the lock within the mechanism's DeadOwnerBound.
	KillSession(ctx context.Context, g store.LockGrant) error
	// Crash stops the mechanism's background work and drops its sessions
	// without releasing anything, as a tracker process that dies; the
	// Store closes its pool right after.
	Crash()
}

// KillLockSession ends the database session that holds l (a lock of this
// Store), through the lock backend's LockFaults. It implements
// conformance.Faults.
func (s *Store) KillLockSession(ctx context.Context, l store.Lock) error {
	f, ok := s.locks.(LockFaults)
	if !ok {
		return fmt.Errorf("store: kill lock session: lock backend %T has no fault hooks: %w", s.locks, store.ErrInvalid)
	}
	// The store.Store hands out its own Lock around ours.
	for {
		u, ok := l.(interface{ Unwrap() store.Lock })
		if !ok {
			break
		}
		l = u.Unwrap()
	}
	h, ok := l.(*heldLock)
	if !ok || h.s != s {
		return fmt.Errorf("store: kill lock session: %v is not a lock of this Store: %w", l, store.ErrInvalid)
	}
	return f.KillSession(ctx, h.inner)
}

// CrashOwner makes the Store a dead owner: its lock backend's background
// work stops and its sessions and pool drop without releasing anything.
// The Store is unusable afterwards; Close may then fail. It implements
// conformance.Faults.
func (s *Store) CrashOwner(ctx context.Context) error {
	f, ok := s.locks.(LockFaults)
	if !ok {
		return fmt.Errorf("store: crash owner: lock backend %T has no fault hooks: %w", s.locks, store.ErrInvalid)
	}
	f.Crash()
	return s.db.Close()
}
