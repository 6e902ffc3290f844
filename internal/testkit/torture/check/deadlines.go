package check

import (
	"sort"
	"time"
)

// Op is one Store call made under a deadline.
type Op struct {
	Proc, Name string // Name: the call, e.g. "File" or "Lock torture:ctr:3"
	Start, End time.Time
	// Deadline is when the call should have returned by at the latest: the
	// caller's context deadline or the Store's default one, whichever is
	// sooner. A zero End (the process died in the call) is not judged.
	Deadline time.Time
}

// Deadlines finds calls that returned more than slack after their
// deadline. slack is the time a call may take to notice its deadline and
// unwind (a driver's cancellation round trip), not a tolerance for a call
// that ignores it. Violations are in order of Start.
func Deadlines(ops []Op, slack time.Duration) []Violation {
	late := []Op{}
	for _, op := range ops {
		if op.End.IsZero() || op.Deadline.IsZero() {
			continue
		}
		if op.End.Sub(op.Deadline) > slack {
			late = append(late, op)
		}
	}
	sort.SliceStable(late, func(i, j int) bool { return late[i].Start.Before(late[j].Start) })
	var out []Violation
	for _, op := range late {
		out = append(out, violation(InvDeadline, "%s %s started %s, deadline %s (%s after start), returned %s: %s late (slack %s)",
			op.Proc, op.Name, ts(op.Start), ts(op.Deadline), op.Deadline.Sub(op.Start), ts(op.End), op.End.Sub(op.Deadline), slack))
	}
	return out
}
