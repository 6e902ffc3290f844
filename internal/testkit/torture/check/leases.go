package check

import (
	"fmt"
	"sort"
	"time"
)

// Lease is one queue row handed to a worker by Store.Lease.
type Lease struct {
	Proc  string
	Queue string // the queue's name; rows of different queues never clash
	Fid   int64
	// From and Until bound the lease's validity, in the database's clock
	// mapped onto the workers' (From: the database's now when it leased the
	// row; Until: From plus the lease asked for).
	From, Until time.Time
	// Finished is when the worker let the row go (called Finish or
	// Reschedule), zero if it never did; the lease ends there if that is
	// before Until.
	Finished time.Time
}

func (l Lease) end() time.Time {
	if !l.Finished.IsZero() && l.Finished.Before(l.Until) {
		if l.Finished.Before(l.From) {
			return l.From
		}
		return l.Finished
	}
	return l.Until
}

// Leases finds a queue row held by two workers while both leases were
// valid: two leases of one (queue, fid) whose validity windows overlap by
// more than skew. skew absorbs the error of mapping the database clock onto
// the workers'. Each offending lease is reported once, against the
// overlapping lease that ends last.
func Leases(ls []Lease, skew time.Duration) []Violation {
	type rowKey struct {
		q   string
		fid int64
	}
	rows := map[rowKey][]Lease{}
	for _, l := range ls {
		k := rowKey{l.Queue, l.Fid}
		rows[k] = append(rows[k], l)
	}
	keys := make([]rowKey, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].q != keys[j].q {
			return keys[i].q < keys[j].q
		}
		return keys[i].fid < keys[j].fid
	})
	desc := func(l Lease) string {
		return fmt.Sprintf("%s [%s, %s]", l.Proc, ts(l.From), ts(l.end()))
	}
	var out []Violation
	for _, k := range keys {
		r := rows[k]
		sort.SliceStable(r, func(i, j int) bool { return r[i].From.Before(r[j].From) })
		cur := -1
		for i, l := range r {
			if cur >= 0 {
				prev := r[cur]
				end := prev.end()
				if l.end().Before(end) {
					end = l.end()
				}
				if gap := end.Sub(l.From); gap > skew {
					out = append(out, violation(InvLease, "queue %s fid %d: leased to %s while %s still held it (overlap %s, skew %s)",
						k.q, k.fid, desc(l), desc(prev), gap, skew))
				}
			}
			if cur < 0 || r[cur].end().Before(l.end()) {
				cur = i
			}
		}
	}
	return out
}
