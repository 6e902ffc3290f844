package torture

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Outcome of a write as its caller learned it.
const (
	applied    = iota // returned nil
	maybe             // ErrUnknownOutcome: may or may not have applied
	notApplied        // any other error: the contract says nothing was written
)

// incr is one attempt to increment a counter under its lock.
type incr struct {
	ctr       int
	h         *hold
	getStart  time.Time
	setStart  time.Time
	setEnd    time.Time
	outcome   int
	releaseOK bool
}

type counterLog struct {
	mu       sync.Mutex
	incrs    []*incr
	corrupt  []string // values that were not integers, or vanished
	lostPre  int64    // lock lost between Get and Set: no write attempted
	attempts int64
}

func (c *counterLog) add(i *incr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.incrs = append(c.incrs, i)
}

func (c *counterLog) bad(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corrupt = append(c.corrupt, fmt.Sprintf(format, args...))
}

func counterKey(i int) string  { return "torture_ctr_" + strconv.Itoa(i) }
func counterLock(i int) string { return "torture:ctr:" + strconv.Itoa(i) }

// CounterStats summarises invariant B over every counter.
type CounterStats struct {
	Final          int64 // sum of the counters read at the end
	Acked          int64 // written and released cleanly: the lower bound
	LostAfterWrite int64 // written, then the lock was lost (or the tracker closed) before Release
	Unknown        int64 // Set returned ErrUnknownOutcome
	LostBefore     int64 // lock lost between Get and Set, so no write was attempted
	LateWrites     int64 // writes that returned after their holding had ended
	Interleaved    int64 // pairs of writes to one counter that the lock failed to serialise
}

// judge checks invariant B: for each counter, acked <= final <= acked +
// lostAfterWrite + unknown. A write that outlived its lock (late: it
// returned after its holding ended by Lost or a crash) or ran beside
// another holder in an overlap A tolerated may overwrite increments that
// landed between its Get and its Set: each such pair can erase one, so a
// shortfall no larger than the number of those pairs is explained and
// reported as a finding. Any other shortfall or excess is a violation: the
// lock failed to serialise writers it claimed to exclude.
func (c *counterLog) judge(ctx context.Context, st store.Store, counters int, tolerated map[*hold]bool, r *Report) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s CounterStats
	s.LostBefore = c.lostPre
	var bad []string
	bad = append(bad, c.corrupt...)
	explainedTotal := int64(0)
	for i := 0; i < counters; i++ {
		v, err := st.ServerSetting(ctx, counterKey(i))
		if err != nil {
			return fmt.Errorf("read counter %d: %w", i, err)
		}
		final, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			bad = append(bad, fmt.Sprintf("counter %d holds %q, not an integer", i, v))
			continue
		}
		var acked, lostAfter, unknown int64
		var writes []*incr
		for _, in := range c.incrs {
			if in.ctr != i {
				continue
			}
			switch in.outcome {
			case applied:
				if in.releaseOK {
					acked++
				} else {
					lostAfter++
				}
				writes = append(writes, in)
			case maybe:
				unknown++
				writes = append(writes, in)
			}
		}
		// Pairs (w, x) where x's write may have landed between w's Get and
		// w's Set: w then wrote a value that did not count x.
		// Only pairs with an excused write count, and those are few, so
		// this stays linear in the number of writes on long runs.
		excused := map[*incr]bool{}
		var ex []*incr
		var pairs, late int64
		for _, w := range writes {
			// Holdings ended by Release end after the write returned; an
			// earlier end is Lost or a crash.
			if w.h.end.Before(w.setEnd) {
				late++
				excused[w] = true
			}
			if tolerated[w.h] {
				excused[w] = true
			}
			if excused[w] {
				ex = append(ex, w)
			}
		}
		interleaved := func(w, x *incr) bool {
			return x != w && x.setStart.Before(w.setEnd) && x.setEnd.After(w.getStart)
		}
		for _, w := range writes {
			others := ex
			if excused[w] {
				others = writes
			}
			for _, x := range others {
				if interleaved(w, x) {
					pairs++
				}
			}
		}
		s.Final += final
		s.Acked += acked
		s.LostAfterWrite += lostAfter
		s.Unknown += unknown
		s.LateWrites += late
		s.Interleaved += pairs
		hi := acked + lostAfter + unknown
		switch {
		case final > hi:
			bad = append(bad, fmt.Sprintf("counter %d = %d > %d acked + %d lost after write + %d unknown: increments appeared from nowhere", i, final, acked, lostAfter, unknown))
		case final < acked && acked-final > pairs:
			bad = append(bad, fmt.Sprintf("counter %d = %d < %d acked increments: lost updates; only %d interleavings with a late or tolerated write could explain %d of them", i, final, acked, pairs, acked-final))
		case final < acked:
			explainedTotal += acked - final
		}
	}
	r.Counters = s
	detail := fmt.Sprintf("final %d; acked %d, lost after write %d, unknown outcome %d, lock lost before write %d",
		s.Final, s.Acked, s.LostAfterWrite, s.Unknown, s.LostBefore)
	if len(bad) > 0 {
		r.check("B: lock-guarded counters", false, detail+"\n"+limitLines(bad, 10))
	} else {
		r.check("B: lock-guarded counters", true, detail)
	}
	if s.LateWrites > 0 || s.Interleaved > 0 {
		r.finding("writes outliving their lock", fmt.Sprintf(
			"%d counter writes returned after their lock was lost or their tracker closed (a lock has no fencing token: a write in flight lands anyway); %d interleavings involving them or a tolerated overlap; %d increments erased",
			s.LateWrites, s.Interleaved, explainedTotal))
	}
	return nil
}
