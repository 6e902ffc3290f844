package store

import (
	"time"
)

// Backend is what a backend implements and its registered [Driver] opens:
// the driver side of the contract, as database/sql/driver is to
// database/sql. Users never call a Backend directly: [Open] and [New] put
// the portable Store in front of it, which does for every backend, once:
//
//   - refuses every call after Close with ErrClosed, before it reaches the
//     Backend (a call racing with Close may still reach it);
//   - gives every call's context the default deadline (Options.OpTimeout,
//     from the DSN's op_timeout), a Lock call its wait timeout plus that:
//     the Backend may assume that ctx ends;
//   - checks the arguments against the contract and MogileFS's column
//     sizes (names, keys, ranges, limits, queues, lock names and timeouts)
//     and fills in the defaults of CreateHost, UpdateHost and CreateDevice
//     (status, port, weight): a Backend is only called with arguments that
//     passed, so it refuses only what needs the database to know
//     (ErrNotFound, ErrDuplicate, …);
//   - prefixes every error with "store: <operation>:" exactly once: a
//     Backend returns its errors unprefixed, each carrying the sentinel its
//     method's doc names (errors.Is), the cause kept (%w);
//   - keeps the table of held locks and tells the Options.Observer of
//     every call, lock and queue row (metrics, package store/storemetrics);
//   - offers FileByKeyOn (PathsReader) whatever the Backend, through the
//     Backend's own when it has one.
//
// What stays the Backend's: atomicity and the retry rules of the package
// doc (unknown outcomes), the fences of [WithFence] contexts on every
// write, the named locks and what their Lost promises, replicas, and its
// Capabilities. The optional methods a Store passes on when its Backend
// has them: As(any) bool (the driver-specific escape hatch) and LockStats.
// A Backend's fault hooks (package conformance's Faults) stay reachable
// through the Store's Unwrap; a Lock the Store hands out has
// Unwrap() Lock, the Backend's own.
//
// Its methods are Store's, and the method docs of [Store] say what each
// must do; Close is called once. Package conformance checks a Backend
// through [Open], that is with this layer in front, as its users run it.
type Backend interface {
	Store
}

// Options are how [New] (and [Open], through [WithObserver]) sets up the
// portable Store. A nil *Options is the zero value.
type Options struct {
	// OpTimeout is the default deadline of every call whose context has
	// none earlier: 0 means DefaultOpTimeout, a negative value none.
	OpTimeout time.Duration
	// Observer, when not nil, is told of every call, lock and queue row.
	Observer Observer
}

// Observer watches a Store from inside, for metrics or tracing. The Store
// calls it synchronously on the caller's goroutine (Lost on a goroutine of
// its own), so its methods must be quick and safe for concurrent use.
type Observer interface {
	// Call reports one Store call: op is the method's name
	// ("CommitFile"), took its time, err what it returned (nil for
	// success), ErrInvalid and ErrClosed refusals included.
	Call(op string, took time.Duration, err error)
	// Queue reports n rows of q added, leased, finished or retried by a
	// call that succeeded (CommitFile and DeleteFile queue rows too).
	Queue(q Queue, ev QueueEvent, n int)
	// Lock reports a named lock granted, timed out, released or lost.
	Lock(ev LockEvent)
}

// QueueEvent is what happened to queue rows; see [Observer].
type QueueEvent int

const (
	QueueEnqueued QueueEvent = iota + 1 // Enqueue, or a CommitFile or DeleteFile that queued
	QueueLeased                         // handed out by Lease
	QueueFinished                       // Finish
	QueueRetried                        // Reschedule after a failure
)

// LockEventKind is what happened to a named lock; see [LockEvent].
type LockEventKind int

const (
	LockGranted  LockEventKind = iota + 1 // Lock returned it; Wait is the time to the grant
	LockTimedOut                          // Lock failed with ErrLockTimeout
	LockReleased                          // released (or found lost at release); Held is the hold
	LockLost                              // its Lost channel fired while held
)

// LockEvent is one event of a named lock; see [Observer].
type LockEvent struct {
	Kind LockEventKind
	Name string
	Wait time.Duration // LockGranted
	Held time.Duration // LockReleased
}

// HeldLock is a named lock a Store holds now; see [Held].
type HeldLock struct {
	Name  string
	Token int64     // its fencing token
	Since time.Time // when it was granted
	Lost  bool      // its Lost channel has fired: the holder must stop
}

// Held lists the named locks granted through s and not yet released,
// oldest first: what the status page shows an operator as the locks a
// tracker holds. It reports false for a Store that [New] did not make (nor
// wraps one that it did, through Unwrap() Store).
func Held(s Store) ([]HeldLock, bool) {
	if p, ok := Find[*portable](s); ok {
		return p.heldLocks(), true
	}
	return nil, false
}

// Find is the first of s and the Stores it wraps, one inside the other
// (each wrapper's Unwrap() Store), that is a T: a backend's optional
// interface (its fault hooks) or concrete type (a harness's escape
// hatch) whatever wraps it — the portable Store of New, a test's
// decorator.
func Find[T any](s Store) (T, bool) {
	for s != nil {
		if t, ok := s.(T); ok {
			return t, true
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	var zero T
	return zero, false
}
