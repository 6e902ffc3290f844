package conformance

import (
	"context"

	"github.com/gomogile/gomogile/store"
)

// Harness connects the suite to one backend and one database. A backend's
// TestConformance builds one and passes it to Run.
//
// How the suite uses it: Run calls Reset once before its first Open and
// again before every case, always with every Store of the previous case
// closed. Every method is called from the test's goroutine, one at a time.
// The faults the lock cases need come from the backend's Stores (Faults),
// or from the Harness where it implements FaultOverride.
type Harness interface {
	// Name is the backend's registered name, for the suite's summary.
	Name() string
	// DSN is opened with store.Open by the suite, once per simulated
	// tracker: every Open must return an independent Store on the same
	// database (its own connections and, where the backend has them, its own
	// lock owner identity). Unless the backend is Capabilities.Embedded, it
	// names one TCP host and its port, at which the suite may put a relay
	// (ServerUnreachable), and the Store connects there only.
	DSN() string
	// Reset empties every table and releases every lock row, keeping the
	// schema, so each test starts from a fresh database. The suite calls it
	// before each test, when none of the suite's Stores is open.
	Reset(ctx context.Context) error
}

// Origin is an optional interface of a Harness: where its database server
// comes from, for the summary line's origin= field — an environment
// variable's DSN, a container of an image ("container
// gomogile-test/mariadb:10.11-bookworm"), a private instance.
type Origin interface {
	Origin() string
}

// Faults is the fault injection a backend's Store provides to the suite,
// checked once by Run (a backend without it fails the suite at once, not
// case by case). sqlstore.Store implements it through its lock backend's
// sqlstore.LockFaults. A Store that wraps another and says so with a
// method Unwrap() store.Backend (the store.Store does) need not forward them:
// the suite looks through it.
//
// After KillLockSession the suite expects l.Lost() to close and another
// Store to get the lock within Capabilities.DeadOwnerBound (plus two
// seconds of slack), and l.Release to fail with store.ErrLockLost. After
// CrashOwner it expects every lock of the Store to be free within the same
// bound, and it ignores the error of the Close that follows.
type Faults interface {
	// KillLockSession ends, the way a crash or an operator would, whatever
	// holds lock l of this Store at the database: KILL of the pinned
	// connection, pg_terminate_backend of the lock's session. The rest of
	// the Store is not told.
	KillLockSession(ctx context.Context, l store.Lock) error
	// CrashOwner makes the Store behave like a tracker that died: its
	// background work (renewal, watchers) stops and its connections drop
	// without releasing anything. The Store is unusable afterwards; the
	// suite still calls its Close, which must not panic.
	CrashOwner(ctx context.Context) error
}

// FaultOverride is implemented by a Harness whose faults the Store cannot
// cause itself: an embedded database whose locks live and die with the
// Store, or a pooler in front of the server, behind which a session's
// death is the pooler's server restarting. FaultsFor returns the Faults of
// s; Run then uses it instead of s's own.
//
// For an embedded database (Capabilities.Embedded, locks "in-process")
// there is no session to kill and no server to outlive the owner: the
// holder's process is the lock's only keeper. Both faults are then the
// Store's Close — what the owner's death does to its locks — and the
// suite's expectations hold as written: Lost closes, Release says
// ErrLockLost, another Store on the file gets the lock at once. This is
// store/sqlite's harness:
//
//	func (h *harness) FaultsFor(s *store.Store) conformance.Faults { return closeFaults{s} }
//
//	type closeFaults struct{ s *store.Store }
//
//	func (f closeFaults) KillLockSession(context.Context, store.Lock) error { return f.s.Close() }
//	func (f closeFaults) CrashOwner(context.Context) error                  { return f.s.Close() }
//
// A FaultsFor that returns nil uses s's own Faults (a lock service's, when
// the locks are there: store/sqlite's etcd harness).
type FaultOverride interface {
	FaultsFor(s *store.Store) Faults
}
