package leaselock

import (
	"context"
	"time"
)

// Owner is one incarnation of a Store's lock owner, as [Session.Register]
// writes it.
type Owner struct {
	ID       int64  // random incarnation id, never reused by this Store
	Identity string // Config.Identity: a new incarnation evicts older ones
	Hostname string // for operators
	PID      int    // for operators
}

// Registration is what [Session.Register] found.
type Registration struct {
	// Registered reports that the new incarnation's sentinel went in.
	Registered bool
	// LiveUntil, when Registered is false, is the expiry of the identity's
	// other live incarnation (nil if it expired between the statement's
	// looks).
	LiveUntil *time.Time
}

// Attempt is what one [DB.Acquire] found.
type Attempt struct {
	OwnerAlive bool // the owner's sentinel exists and has not expired
	Open       bool // the epoch is a lease old
	Inserted   bool // the lock row went in
	// HolderToken is the token of the row that holds the name, if any:
	// equal to the caller's token when a retry finds its own row.
	HolderToken *int64
	HolderDead  bool // the holder's owner has expired or is gone
	// Fence is the fencing token the statement gave the name with the row
	// it inserted, or 0 when it gave none (see DB.Acquire).
	Fence int64
}

// DB is the SQL a backend supplies, run on the Store's pool. Every method
// honours ctx and maps errors as the package doc says (step 2). The
// machinery calls the methods concurrently.
type DB interface {
	// Session opens the renewer's dedicated session.
	Session(ctx context.Context) (Session, error)
	// Acquire makes one attempt to insert the row (name, owner, token) in
	// one statement or transaction: only if owner is alive (holding it
	// against the reaper until commit) and the epoch is lease old; and
	// reports the holder otherwise. It may also, with the row it inserted
	// and in the same statement, bump the name's fencing token as the
	// backend's sqlstore.Fencing.Bump does, and report the new token in
	// Attempt.Fence; the lock then carries it (its store.LockGrant Token) and
	// saves sqlstore a round trip. 0 leaves the bump to sqlstore.
	Acquire(ctx context.Context, name []byte, owner, token int64, lease time.Duration) (Attempt, error)
	// Release deletes the row (name, owner, token) and reports whether it
	// was there.
	Release(ctx context.Context, name []byte, owner, token int64) (bool, error)
	// EvictExpired deletes every expired owner with its locks and returns
	// how many locks it freed.
	EvictExpired(ctx context.Context) (int64, error)
	// EvictOwner deletes the owner id with its locks.
	EvictOwner(ctx context.Context, id int64) error
}

// Session is the renewer's dedicated session: renewing on it, not on the
// pool, means a renewal never waits for a pool connection and a session
// that dies is noticed (Closed) and forfeits the Store's locks.
type Session interface {
	// Register, in one statement or transaction: deletes the incarnation
	// prev (0 if none) and every expired one of o.Identity, with their
	// locks; starts the epoch if it is missing (at the current time); and
	// inserts o's sentinel expiring lease from now unless another live
	// incarnation of the identity exists. A unique violation on o.ID must
	// wrap store.ErrDuplicate (the machinery draws another id).
	Register(ctx context.Context, o Owner, prev int64, lease time.Duration) (Registration, error)
	// Renew extends the owner's expiry to lease from now, never
	// re-creating it, and reports whether the owner was still there.
	Renew(ctx context.Context, owner int64, lease time.Duration) (bool, error)
	// EvictExpired is DB.EvictExpired on this session.
	EvictExpired(ctx context.Context) (int64, error)
	// Closed reports whether the session is known to have ended.
	Closed() bool
	// Close ends the session.
	Close()
}

// Notifier is implemented by a DB whose database can tell a session about
// released names (PostgreSQL's LISTEN/NOTIFY). Without it, or while the
// listener is down, waiters poll.
type Notifier interface {
	Listen(ctx context.Context) (Listener, error)
}

// Listener is a session that hears released names.
type Listener interface {
	// Next blocks until a name is released (anywhere) or the session ends
	// (an error: the listener reconnects and wakes every waiter, since
	// notifications may have been missed).
	Next(ctx context.Context) (name string, err error)
	Close()
}

// WaitMarker is implemented by a DB whose releases notify a name only when
// a waiter asked for it, so that a release nobody waits for costs no
// notification. A listening waiter of another Store calls MarkWaited before
// it waits for a holding it has not marked yet; a release after the mark
// must notify. found is false when no holding of name was there to mark
// (it was released meanwhile: the waiter tries again at once). A DB
// without it must notify every release.
type WaitMarker interface {
	MarkWaited(ctx context.Context, name []byte) (found bool, err error)
}

// SessionKiller is implemented by a DB that can end, at the database and
// from a session of its own, the sessions it opened that are still open
// (the renewer's and the listener's), as a crash or an operator would. It
// serves conformance's KillLockSession; without it that fault fails with
// store.ErrInvalid.
type SessionKiller interface {
	KillSessions(ctx context.Context) error
}
