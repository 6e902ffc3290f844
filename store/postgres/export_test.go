package postgres

import (
	"context"
	"fmt"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// Hooks for the external tests; see postgres_test.go.

func backendOf(s *store.Store) (*lockBackend, error) {
	ss, ok := sqlaccess.Backend(s)
	if !ok {
		return nil, fmt.Errorf("%T is not a *sqlstore.Store", s)
	}
	p, _ := sqlaccess.Of(ss)
	b, ok := p.Locks.(*lockBackend)
	if !ok {
		return nil, fmt.Errorf("lock backend %T is not PostgreSQL's", p.Locks)
	}
	return b, nil
}

// LockSessionPIDs returns the backend PIDs of s's renewer and listener
// sessions (0 when absent).
func LockSessionPIDs(s *store.Store) (renew, listen uint32, err error) {
	b, err := backendOf(s)
	if err != nil {
		return 0, 0, err
	}
	renew, listen = b.db.sessionPIDs()
	return renew, listen, nil
}

// CrashLocks stops s's renewal and drops its lock sessions and pool without
// releasing anything.
func CrashLocks(s *store.Store) error {
	if _, err := backendOf(s); err != nil {
		return err
	}
	return mustBackend(s).CrashOwner(context.Background())
}

// OwnerID is s's current owner incarnation, 0 between a loss and the next
// registration (store.LockStats.Owner).
func OwnerID(s *store.Store) (int64, error) {
	if _, err := backendOf(s); err != nil {
		return 0, err
	}
	return mustBackend(s).LockStats().Owner, nil
}

// NotifyWakeups counts the lock waits of s that a notification or its own
// release ended (store.LockStats.Woken).
func NotifyWakeups(s *store.Store) (int64, error) {
	if _, err := backendOf(s); err != nil {
		return 0, err
	}
	return mustBackend(s).LockStats().Woken, nil
}

// ParseLockDSN returns the lock settings a DSN gives.
func ParseLockDSN(d *store.DSN) (lease, reap, bound string, notify bool, err error) {
	c, err := parseDSN(d)
	if err != nil {
		return "", "", "", false, err
	}
	return c.locks.Lease.String(), c.locks.Reap.String(), c.locks.DeadOwnerBound().String(), !c.locks.NoListen, nil
}

const (
	LockTable  = lockTable
	OwnerTable = ownerTable
	EpochTable = epochTable
)

// NotifyChannel is the channel releases NOTIFY on.
const NotifyChannel = notifyChannel

// mustBackend is the sqlstore.Store under s, which backendOf has found.
func mustBackend(s *store.Store) *sqlstore.Store {
	ss, _ := sqlaccess.Backend(s)
	return ss
}
