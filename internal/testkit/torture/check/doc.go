// Package check holds the torture program's checkers: pure functions over
// the histories its workers record (what each tracker process did and when,
// as it saw it), with no database and no processes. Each returns the
// violations it finds, one line each; an empty result means the history
// keeps the invariant.
//
// Times come from the workers' wall clocks. All workers run on one machine,
// so they share one clock, but a time is taken when a call returned to its
// caller, which may be a little after the database acted: the checkers that
// compare times across processes take a slack for that, and say so.
//
// The counter history is judged by porcupine
// (github.com/anishathalye/porcupine), a well-kept linearizability
// checker, rather than by hand-written arithmetic alone: a lock-guarded
// read-modify-write is a compare-and-set on a register, and a history whose
// ambiguous writes may or may not have applied is exactly what it searches.
package check

import (
	"fmt"
	"time"
)

// Invariant names, as they appear in [Violation.Invariant].
const (
	InvExclusion        = "exclusion"         // two holders of one name at once
	InvTokenOrder       = "token-order"       // a later grant with a token not above an earlier one
	InvCounter          = "counter"           // a guarded counter history that is not linearizable
	InvCounterUnknown   = "counter-undecided" // the counter check ran out of time: not a pass
	InvCounterMalformed = "counter-malformed" // a history the checker cannot judge as given
	InvLease            = "lease"             // one queue row leased to two workers at once
	InvDeadline         = "deadline"          // an operation that returned past its deadline
	InvFid              = "fid"               // a fid handed out twice, or below one reserved before
	InvCommit           = "commit"            // an acknowledged commit missing, or a failed one present
	InvOpen             = "open"              // a Store that took its process too long to open
)

// Violation is one broken invariant.
type Violation struct {
	Invariant string // one of the Inv constants
	Detail    string // one line, naming the processes, names and times involved
}

func (v Violation) String() string { return v.Invariant + ": " + v.Detail }

// ts formats a time for a Detail line: wall clock to the microsecond,
// enough to line a violation up with the workers' logs.
func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05.000000")
}

func violation(inv, format string, args ...any) Violation {
	return Violation{Invariant: inv, Detail: fmt.Sprintf(format, args...)}
}
