package torture

import (
	"fmt"
	"sort"
	"strconv"
	"time"
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

// checkCounters checks the guarded counters: every acknowledged write
// wrote a value no other acknowledged write of that counter wrote (each
// read the value the last one left: the lock and its fence serialised
// them), and the final value is the acknowledged writes plus at most the
// unknown ones. It also checks that no acknowledged fenced write was called
// after a newer grant of its lock (a stale write): whatever the values
// say, the fence should have refused it.
func checkCounters(writes []*guardedWrite, final map[int]int64, grants map[string][]*holding) (CounterStats, []string, []string) {
	var s CounterStats
	var bad, stale []string
	byCtr := map[int][]*guardedWrite{}
	for _, w := range writes {
		byCtr[w.ctr] = append(byCtr[w.ctr], w)
	}
	ctrs := make([]int, 0, len(final))
	for c := range final {
		ctrs = append(ctrs, c)
	}
	sort.Ints(ctrs)
	for _, c := range ctrs {
		var acked, unknown int64
		wroteBy := map[int64]*guardedWrite{}
		for _, w := range byCtr[c] {
			switch w.outcome {
			case applied:
				acked++
				if o := wroteBy[w.wrote]; o != nil {
					bad = append(bad, fmt.Sprintf("counter %d: %s and %s both wrote %d (read %d and %d): an increment was erased",
						c, o.proc, w.proc, w.wrote, o.read, w.read))
				}
				wroteBy[w.wrote] = w
				if g := newerGrant(grants[counterLock(c)], w); g != nil {
					s.Stale++
					stale = append(stale, fmt.Sprintf("counter %d: %s's write of %d (token %d) called at %s, after %s was granted the lock with token %d at %s; it was acknowledged",
						c, w.proc, w.wrote, w.hold.token, stamp(w.invoke), g.proc, g.token, stamp(g.from)))
				}
			case maybe:
				unknown++
			default:
				s.Refused++
			}
		}
		f := final[c]
		s.Final += f
		s.Acked += acked
		s.Unknown += unknown
		switch {
		case f < acked:
			bad = append(bad, fmt.Sprintf("counter %d = %d < %d acknowledged increments", c, f, acked))
		case f > acked+unknown:
			bad = append(bad, fmt.Sprintf("counter %d = %d > %d acknowledged + %d unknown increments: increments from nowhere", c, f, acked, unknown))
		}
	}
	return s, bad, stale
}

// newerGrant finds a grant of the write's lock to another holding, later
// than the write's own and before the write was called.
// hs is sorted by grant time.
func newerGrant(hs []*holding, w *guardedWrite) *holding {
	i := sort.Search(len(hs), func(i int) bool { return hs[i].from.After(w.hold.from) })
	for ; i < len(hs) && hs[i].from.Before(w.invoke); i++ {
		if hs[i] != w.hold {
			return hs[i]
		}
	}
	return nil
}

func parseCounter(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }
