package torture

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// leaseRec is one replicate-queue row held by one worker: from Lease's
// return until the earlier of the worker letting go (Finish or Reschedule
// called) and the lease's expiry (NextTry, on the database clock).
type leaseRec struct {
	fid   int64
	by    string
	call  time.Time // when the Lease call that returned it started
	start time.Time
	until time.Time
	ended bool
	end   time.Time
}

// validAt reports whether the lease still held at now, allowing skew
// between our clock and the database's.
func (l *leaseRec) validAt(now time.Time, skew time.Duration) bool {
	if l.ended && !now.Before(l.end) {
		return false
	}
	return now.Add(skew).Before(l.until)
}

type queueLog struct {
	mu        sync.Mutex
	skew      time.Duration
	active    map[int64][]*leaseRec
	enqAcked  map[int64]time.Time // fid → start of the last acknowledged enqueue
	enqMaybe  map[int64]bool
	lastLease map[int64]time.Time // fid → last time a Lease returned it
	lastFin   map[int64]time.Time // fid → last time a Finish of it returned
	inflight  map[int64]int       // fid → requeues under way
	// fid → when the last requeue returned
	lastRequeue map[int64]time.Time
	twice       []string
	traces      map[int64][]string
	unknown     []string
	bad         []string
	leases      int64
	nfinished   int64
}

func newQueueLog(skew time.Duration) *queueLog {
	return &queueLog{
		skew:      skew,
		active:    map[int64][]*leaseRec{},
		enqAcked:  map[int64]time.Time{},
		enqMaybe:  map[int64]bool{},
		lastLease: map[int64]time.Time{},
		lastFin:   map[int64]time.Time{},
		inflight:  map[int64]int{},

		lastRequeue: map[int64]time.Time{},
		traces:      map[int64][]string{},
	}
}

// requeue is called around an Enqueue, a commit that queues, or a
// Reschedule: each may make the row due now, which ends any lease on it
// (the contract gives a queue row no owner). Since the write lands
// somewhere between call and return, a lease granted before the return is
// void; the returned func marks the return.
func (q *queueLog) requeue(fid int64, what string, by string, now time.Time) (done func(errKind string, now time.Time)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inflight[fid]++
	q.trace(now, fid, "%s by %s starts", what, by)
	return func(errKind string, now time.Time) {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.inflight[fid]--
		q.lastRequeue[fid] = now
		q.trace(now, fid, "%s by %s returns %s", what, by, errKind)
		for _, l := range q.active[fid] {
			if !l.ended {
				l.ended, l.end = true, now
			}
		}
	}
}

func (q *queueLog) enqueued(fid int64, start time.Time, outcome int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch outcome {
	case applied:
		q.enqAcked[fid] = start
	case maybe:
		q.enqMaybe[fid] = true
	}
}

// leased registers rows a Lease call (started at call) returned and checks
// that none is still validly held by someone else. The database compares
// nexttry with its own clock in whole seconds; on one host that clock is
// ours, elsewhere skew allows for the difference.
//
// A requeue that lands between an earlier claim and this one voids the
// earlier lease: one in flight now, or one that returned after the earlier
// Lease call started. The same holds inside one call, whose later round may
// take a row its first round took if a requeue landed in between; that is
// reported as a finding, since a caller then holds one row twice.
func (q *queueLog) leased(by string, call, now time.Time, fids []int64, until []time.Time, known func(int64) bool) []*leaseRec {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]*leaseRec, len(fids))
	seen := map[int64]bool{}
	for i, fid := range fids {
		q.leases++
		if !known(fid) {
			q.unknown = append(q.unknown, fmt.Sprintf("Lease returned fid %d, which no tracker enqueued", fid))
		}
		// A lease whose reply came back after its own until (a delayed
		// reply) was over before its holder saw it: the database may
		// rightly have handed the row on meanwhile, and a worker drops a
		// lease that has run out. It is no claim that can clash.
		expired := until[i].Add(q.skew).Before(now)
		for _, a := range q.active[fid] {
			if expired || !a.validAt(now, q.skew) {
				continue
			}
			// Either claim may have been the first: leases are replayed in
			// the order of their return stamps, not of their claims. A
			// requeue that returned after either call began may have landed
			// between the two claims, voiding the first.
			requeued := q.inflight[fid] > 0 || q.lastRequeue[fid].After(a.call) || q.lastRequeue[fid].After(call)
			switch {
			case seen[fid] && requeued:
				q.twice = append(q.twice, fmt.Sprintf("fid %d returned twice by one Lease call of %s at %s; a requeue of it overlapped the call",
					fid, by, now.Format("15:04:05.000000")))
			case seen[fid]:
				q.bad = append(q.bad, fmt.Sprintf("fid %d returned twice by one Lease call of %s at %s (until %s), with no requeue of it during the call",
					fid, by, now.Format("15:04:05.000000"), until[i].Format("15:04:05"))+q.history(fid))
			case !requeued:
				q.bad = append(q.bad, fmt.Sprintf("fid %d leased by %s at %s (until %s) while %s's lease (from %s, until %s) was valid",
					fid, by, now.Format("15:04:05.000000"), until[i].Format("15:04:05"), a.by, a.start.Format("15:04:05.000000"), a.until.Format("15:04:05"))+q.history(fid))
			}
		}
		q.trace(now, fid, "Lease by %s (called %s) returns it until %s", by, call.Format("15:04:05.000000"), until[i].Format("15:04:05"))
		seen[fid] = true
		l := &leaseRec{fid: fid, by: by, call: call, start: now, until: until[i]}
		q.active[fid] = append(q.active[fid][:0:0], l)
		q.lastLease[fid] = now
		out[i] = l
	}
	return out
}

// letGo ends a lease at the Finish or Reschedule call.
func (q *queueLog) letGo(l *leaseRec, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !l.ended {
		l.ended, l.end = true, now
	}
	q.trace(now, l.fid, "%s lets go", l.by)
}

// trace keeps the last events of each fid, so that a violation can be
// told with what led to it.
func (q *queueLog) trace(now time.Time, fid int64, format string, args ...any) {
	const keep = 10
	ev := now.Format("15:04:05.000000") + " " + fmt.Sprintf(format, args...)
	t := append(q.traces[fid], ev)
	if len(t) > keep {
		t = t[len(t)-keep:]
	}
	q.traces[fid] = t
}

func (q *queueLog) history(fid int64) string {
	return "\n    history of fid " + strconv.FormatInt(fid, 10) + ":\n      " + strings.Join(q.traces[fid], "\n      ")
}

// finished is called when a Finish returns: the row went, with whatever
// enqueue merged into it since it was leased, which the contract allows.
func (q *queueLog) finished(fid int64, errKind string, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lastFin[fid] = now
	q.trace(now, fid, "finish returns %s", errKind)
	if errKind == "ok" {
		q.nfinished++
	}
}

// QueueStats summarises invariant C.
type QueueStats struct {
	Enqueued  int   // fids whose enqueue was acknowledged
	Leases    int64 // rows handed out by Lease
	Finished  int64 // Finish calls that returned nil
	Remaining int64 // rows left after the drain
}

func (q *queueLog) judge(remaining int64, r *Report) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := QueueStats{Enqueued: len(q.enqAcked), Leases: q.leases, Finished: q.nfinished, Remaining: remaining}
	r.Queue = s
	if len(q.twice) > 0 {
		r.finding("Lease returned a row twice in one call", fmt.Sprintf(
			"%d times a Lease call's later round took again a row its first round had taken, after an Enqueue or Reschedule of it landed in between; the caller then holds one row twice (not a double hold between workers)%s",
			len(q.twice), lines(q.twice)))
	}
	r.check("queue: no row leased twice at once", append(append([]string(nil), q.bad...), q.unknown...),
		fmt.Sprintf("%d leases", s.Leases))
	var missed []string
	// Handled: leased after the enqueue started, or its row removed by a
	// Finish that returned after it started (a worker holding an older
	// lease merged the new request into the work it did). The drain then
	// leaves nothing behind.
	for fid, t := range q.enqAcked {
		if q.lastLease[fid].Before(t) && q.lastFin[fid].Before(t) {
			missed = append(missed, fmt.Sprintf("fid %d enqueued at %s, and neither leased nor finished after", fid, t.Format("15:04:05.000")))
		}
	}
	sort.Strings(missed)
	if remaining != 0 {
		missed = append(missed, fmt.Sprintf("%d rows left in the replicate queue after the drain", remaining))
	}
	r.check("queue: every row eventually handled", missed,
		fmt.Sprintf("%d fids enqueued, %d finished, %d left", s.Enqueued, s.Finished, remaining))
}
