package store

import (
	"time"
)

// Options are how [New] (and [Open], through [WithObserver]) sets up the
// Store. A nil *Options is the zero value.
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
// tracker holds. It reports false for a Backend that is not a *Store nor
// wraps one (through Unwrap() Backend).
func Held(s Backend) ([]HeldLock, bool) {
	if p, ok := Find[*Store](s); ok {
		return p.heldLocks(), true
	}
	return nil, false
}

// Find is the first of s and the Stores it wraps, one inside the other
// (each wrapper's Unwrap() Backend), that is a T: a backend's optional
// interface (its fault hooks) or concrete type (a harness's escape
// hatch) whatever wraps it — the Store of New, a test's
// decorator.
func Find[T any](s Backend) (T, bool) {
	for s != nil {
		if t, ok := s.(T); ok {
			return t, true
		}
		u, ok := s.(interface{ Unwrap() Backend })
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	var zero T
	return zero, false
}
