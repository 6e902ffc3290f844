package torture

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/torture/check"
)

// Outcome of a write as its caller learned it.
const (
	applied    = iota // returned nil
	maybe             // ErrUnknownOutcome, or in flight when its process was killed
	notApplied        // any other error: the contract says nothing was written
)

// guardedWrite is one fenced Set of a counter under its lock.
type guardedWrite struct {
	ctr         int
	proc        string
	hold        *holding
	get, invoke time.Time // Get called; Set called
	ret         time.Time // Set returned (zero: in flight at a SIGKILL)
	outcome     int
	read, wrote int64
}

// CounterStats summarises the guarded counters.
type CounterStats struct {
	Final      int64 // sum of the counters read at the end
	Acked      int64 // writes acknowledged
	Unknown    int64 // writes of unknown outcome (ErrUnknownOutcome, or cut off by a SIGKILL)
	Refused    int64 // writes that failed (fenced, lost connection…)
	LostBefore int64 // lock lost between Get and Set, so no write was attempted
	Stale      int64 // acknowledged writes called after a newer grant of their lock
}

// counterHistory turns the guarded writes into package check's counter
// history, counts them, and finds the stale ones: acknowledged fenced writes
// called after a grant of their lock with a larger token, which the fence
// should have refused whatever the values say.
func counterHistory(writes []*guardedWrite, grants map[string][]*holding) (CounterStats, []check.CounterOp, []string) {
	var s CounterStats
	var stale []string
	ops := make([]check.CounterOp, 0, len(writes))
	maxTok := map[string][]*holding{}
	for _, w := range writes {
		op := check.CounterOp{Proc: w.proc, Key: counterKey(w.ctr), Invoke: w.get, Return: w.ret, Read: w.read, Wrote: w.wrote}
		switch w.outcome {
		case applied:
			s.Acked++
			op.Outcome = check.OK
			name := counterLock(w.ctr)
			if maxTok[name] == nil {
				maxTok[name] = prefixMaxToken(grants[name])
			}
			if g := newerGrant(grants[name], maxTok[name], w); g != nil {
				s.Stale++
				stale = append(stale, fmt.Sprintf("counter %d: %s's write of %d (token %d) called at %s, after %s was granted the lock with token %d at %s; it was acknowledged",
					w.ctr, w.proc, w.wrote, w.hold.token, stamp(w.invoke), g.proc, g.token, stamp(g.from)))
			}
		case maybe:
			s.Unknown++
			op.Outcome = check.Unknown
		default:
			s.Refused++
			op.Outcome = check.Failed
		}
		ops = append(ops, op)
	}
	return s, ops, stale
}

// newerGrant finds a grant of the write's lock with a larger token than the
// write's own, made before the write was called. hs is sorted by grant
// time; maxTok[i] is the holding of largest token among hs[:i+1].
func newerGrant(hs []*holding, maxTok []*holding, w *guardedWrite) *holding {
	n := sort.Search(len(hs), func(i int) bool { return !hs[i].from.Before(w.invoke) })
	if n == 0 {
		return nil
	}
	if g := maxTok[n-1]; g.token > w.hold.token {
		return g
	}
	return nil
}

// prefixMaxToken is newerGrant's maxTok for hs.
func prefixMaxToken(hs []*holding) []*holding {
	out := make([]*holding, len(hs))
	for i, h := range hs {
		out[i] = h
		if i > 0 && out[i-1].token >= h.token {
			out[i] = out[i-1]
		}
	}
	return out
}

func parseCounter(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }
