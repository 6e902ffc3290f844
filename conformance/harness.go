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
// closed. After KillLockSession the suite expects l.Lost() to close and
// another Store to get the lock within Capabilities.DeadOwnerBound (plus two
// seconds of slack), and l.Release to fail with store.ErrLockLost. After
// CrashOwner it expects every lock of s to be free within the same bound, and
// it ignores the error of the Close that follows. Every method is called from
// the test's goroutine, one at a time.
type Harness interface {
	// Name is the backend's registered name, for the suite's summary.
	Name() string
	// DSN is opened with store.Open by the suite, once per simulated
	// tracker: every Open must return an independent Store on the same
	// database (its own connections and, where the backend has them, its own
	// lock owner identity).
	DSN() string
	// Reset empties every table and releases every lock row, keeping the
	// schema, so each test starts from a fresh database. The suite calls it
	// before each test, when none of the suite's Stores is open.
	Reset(ctx context.Context) error
	// KillLockSession ends, the way a crash or an operator would, whatever
	// holds lock l of Store s at the database: KILL of the pinned
	// connection, pg_terminate_backend of the lock's session, or for an
	// embedded backend the close of s. The Store itself is not told.
	KillLockSession(ctx context.Context, s store.Store, l store.Lock) error
	// CrashOwner makes s behave like a tracker that died: its background
	// work (renewal, watchers) stops and its connections drop without
	// releasing anything. s is unusable afterwards; the suite still calls
	// its Close, which must not fail the test by panicking.
	CrashOwner(ctx context.Context, s store.Store) error
}
