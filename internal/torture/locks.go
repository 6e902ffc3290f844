package torture

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

// How a holding ended. A holding's interval is [Lock returned, end]; the
// worker does nothing under the lock outside it.
const (
	endReleased    = "released"        // Release was called, Lost not closed: Release then returned nil
	endLost        = "lost"            // Lost closed first
	endLostRelease = "lost-at-release" // Release called before Lost closed, and it said ErrLockLost
	endReleaseErr  = "release-failed"  // Release called before Lost closed, and it failed otherwise
	endCrash       = "crash"           // the tracker was closed under it by the fault injector
)

// hold is one held lock as the torture saw it.
type hold struct {
	name     string
	tr       *tracker
	lock     store.Lock
	acquired time.Time
	done     chan struct{} // closed when the worker is done with the lock; stops the watcher

	// Guarded by lockLog.mu.
	ended bool
	end   time.Time
	cause string
}

// overlap is a holding granted while an earlier one of the same name had
// not ended. gap runs from the grant until the earlier holding ended.
type overlap struct {
	name       string
	prev, next *hold
	start      time.Time
	gap        time.Duration
	cause      string // how prev ended
	open       bool
}

// lockLog records every holding and finds overlaps as they happen, in
// process: all simulated trackers live in this process, so a grant can be
// compared with the previous holder's state without any clock.
type lockLog struct {
	mu       sync.Mutex
	active   map[string][]*hold
	overlaps []*overlap
	holds    int64
	causes   map[string]int64
	early    []string       // lock timeouts that came before the time asked
	wg       sync.WaitGroup // watchers
}

func newLockLog() *lockLog {
	return &lockLog{active: map[string][]*hold{}, causes: map[string]int64{}}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// granted registers a holding right after Lock returned. A previous holder
// that has not ended is checked directly: if its Lost channel is already
// closed the backend kept promise 8 (Lost before the next grant) and the
// previous holding ends here; otherwise two workers hold the name at once.
func (l *lockLog) granted(tr *tracker, name string, lk store.Lock) *hold {
	h := &hold{name: name, tr: tr, lock: lk, done: make(chan struct{})}
	l.mu.Lock()
	now := time.Now()
	h.acquired = now
	l.holds++
	keep := l.active[name][:0]
	for _, a := range l.active[name] {
		if a.ended {
			continue
		}
		if closed(a.lock.Lost()) {
			l.endLocked(a, now, endLost)
			continue
		}
		l.overlaps = append(l.overlaps, &overlap{name: name, prev: a, next: h, start: now, open: true})
		keep = append(keep, a)
	}
	l.active[name] = append(keep, h)
	if tr.crashed {
		// Granted to a tracker already being closed: it holds nothing.
		l.endLocked(h, now, endCrash)
	}
	l.mu.Unlock()

	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		select {
		case <-lk.Lost():
			l.end(h, time.Now(), endLost)
		case <-h.done:
		}
	}()
	return h
}

func (l *lockLog) end(h *hold, t time.Time, cause string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked(h, t, cause)
}

func (l *lockLog) endLocked(h *hold, t time.Time, cause string) {
	if h.ended {
		return
	}
	h.ended, h.end, h.cause = true, t, cause
	l.causes[cause]++
	for _, o := range l.overlaps {
		if o.open && o.prev == h {
			o.open, o.gap, o.cause = false, t.Sub(o.start), cause
		}
	}
}

func (l *lockLog) earlyTimeout(name string, tr *tracker, waited time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.early = append(l.early, fmt.Sprintf("%s: Lock(%q) timed out after %v", tr, name, waited))
}

// isLost reports whether the holding has ended in any way but Release: the
// worker must not write under it.
func (l *lockLog) isLost(h *hold) bool {
	if closed(h.lock.Lost()) {
		l.end(h, time.Now(), endLost)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return h.ended
}

// release ends the holding at the Release call, then releases. The cause is
// refined by what Release says: ErrLockLost means the backend knew of the
// loss but had not closed Lost when it was asked.
func (l *lockLog) release(ctx context.Context, h *hold) error {
	l.mu.Lock()
	provisional := false
	if !h.ended {
		if closed(h.lock.Lost()) {
			l.endLocked(h, time.Now(), endLost)
		} else {
			l.endLocked(h, time.Now(), endReleased)
			provisional = true
		}
	}
	l.mu.Unlock()
	err := h.lock.Release(ctx)
	if provisional && err != nil {
		cause := endReleaseErr
		if errors.Is(err, store.ErrLockLost) {
			cause = endLostRelease
		}
		l.mu.Lock()
		l.causes[endReleased]--
		l.causes[cause]++
		h.cause = cause
		for _, o := range l.overlaps {
			if o.prev == h {
				o.cause = cause
			}
		}
		l.mu.Unlock()
	}
	close(h.done)
	return err
}

// crash ends every holding of tr: the tracker is about to be closed under
// its workers, and a dead tracker holds nothing. Later grants to tr end at
// once.
func (l *lockLog) crash(tr *tracker) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	tr.crashed = true
	now := time.Now()
	n := 0
	for _, hs := range l.active {
		for _, h := range hs {
			if h.tr == tr && !h.ended {
				l.endLocked(h, now, endCrash)
				n++
			}
		}
	}
	return n
}

// holding counts the live holdings per tracker, for picking a crash victim.
func (l *lockLog) holding() map[*tracker]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[*tracker]int{}
	for _, hs := range l.active {
		for _, h := range hs {
			if !h.ended {
				m[h.tr]++
			}
		}
	}
	return m
}

// LockStats summarises invariant A.
type LockStats struct {
	Holds        int64
	EndedBy      map[string]int64 // released, lost, lost-at-release, release-failed, crash
	Overlaps     int              // grants while an earlier holder had not ended
	DoubleGrants int              // of which the earlier holder released normally: never allowed
	MaxGap       time.Duration    // longest overlap
	Bound        time.Duration    // allowed gap (documented Lost bound + slack); 0 = strict
	BoundDoc     string
}

// judge turns the overlaps into invariant A's check and, for a backend with
// a documented late-Lost bound, a finding. It returns the holdings of the
// overlaps that bound tolerates: writes under them may interleave.
func (l *lockLog) judge(bound time.Duration, boundDoc string, r *Report) map[*hold]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	tolerated := map[*hold]bool{}
	st := LockStats{Holds: l.holds, EndedBy: map[string]int64{}, Bound: bound, BoundDoc: boundDoc}
	for k, v := range l.causes {
		if v != 0 {
			st.EndedBy[k] = v
		}
	}
	var bad []string
	var gaps []time.Duration
	for _, o := range l.overlaps {
		st.Overlaps++
		if o.open {
			// Cannot happen once every worker has released; treat the
			// holding as never having ended.
			o.cause = "never ended"
		}
		gaps = append(gaps, o.gap)
		st.MaxGap = max(st.MaxGap, o.gap)
		desc := fmt.Sprintf("%q granted to %s while %s held it since %v before; that holding ended by %s %v after the grant",
			o.name, o.next.tr, o.prev.tr, o.start.Sub(o.prev.acquired).Round(time.Microsecond), o.cause, o.gap.Round(time.Microsecond))
		switch {
		case o.cause == endReleased || o.cause == "never ended":
			st.DoubleGrants++
			bad = append(bad, "double grant: "+desc)
		case o.gap > bound:
			bad = append(bad, "Lost too late: "+desc)
		default:
			tolerated[o.prev], tolerated[o.next] = true, true
		}
	}
	r.Locks = st
	r.check("locks: no timeout before the time asked", len(l.early) == 0,
		fmt.Sprintf("%d timeouts early", len(l.early))+lines(l.early))
	detail := fmt.Sprintf("%d holdings, %d overlaps, ended by %v", st.Holds, st.Overlaps, fmtCounts(st.EndedBy))
	if len(bad) > 0 {
		r.check("A: mutual exclusion of named locks", false, detail+"\n"+limitLines(bad, 10))
		return tolerated
	}
	r.check("A: mutual exclusion of named locks", true, detail)
	if st.Overlaps > 0 {
		sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
		r.finding("late Lost notice (within the documented bound)", fmt.Sprintf(
			"%d grants came before the previous holder's Lost fired; gap median %v, max %v; allowed %v (%s)",
			st.Overlaps, gaps[len(gaps)/2].Round(time.Microsecond), st.MaxGap.Round(time.Microsecond), bound, boundDoc))
	}
	return tolerated
}
