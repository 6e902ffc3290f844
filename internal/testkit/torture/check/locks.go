package check

import (
	"sort"
	"time"
)

// EndKind says how a holding ended, as the holder (or the program that
// killed or paused it) saw it.
type EndKind int

const (
	// Released: the holder called Release (To is when it was called).
	Released EndKind = iota
	// Lost: the holder saw its Lost channel close (To is when).
	Lost
	// Killed: the holder's process was SIGKILLed (To is the kill).
	Killed
	// Paused: the holder's process was SIGSTOPped past its lease. For
	// time-exclusion the holding ends at the stop (To); whatever it writes
	// after it resumes is judged by fencing, in the counter history.
	Paused
	// Open: the run ended with the lock still held (To is the run's end,
	// or zero for "never ended").
	Open
)

func (k EndKind) String() string {
	switch k {
	case Released:
		return "released"
	case Lost:
		return "lost"
	case Killed:
		return "killed"
	case Paused:
		return "paused"
	case Open:
		return "open"
	}
	return "end?"
}

// Hold is one holding of a named lock.
//
// From is when Lock returned; To is when the holding ended as seen by the
// holder (see End), zero if it never ended. Both lie inside the time the
// holder believed it held the lock (the grant came before From; Release
// was called, or Lost observed, at To), so an overlap of two recorded
// holdings is an overlap of real ones: the checkers find no false
// violations from the recording itself. A holding recorded from a stop
// instead of its grant (a grant stamped after SIGCONT, kept as an empty
// holding at the stop) breaks that: it is harmless to Exclusion, being
// empty, but TokenOrder would order its token by the stop, while the grant
// may have come after it. Leave such holdings out of TokenOrder.
type Hold struct {
	Proc  string // the worker process, as the run names it
	Name  string // the lock name
	Token int64  // Lock.Token() of the grant
	From  time.Time
	To    time.Time
	End   EndKind
	// Called is when Lock was called, zero if not recorded. TokenOrder
	// uses it to order grants that Exclusion's slack leaves overlapping.
	Called time.Time
}

// forever stands for a zero To: a holding that never ended overlaps
// everything after its start.
var forever = time.Unix(1<<62, 0)

func (h Hold) end() time.Time {
	if h.To.IsZero() {
		return forever
	}
	if h.To.Before(h.From) {
		return h.From
	}
	return h.To
}

func byName(holds []Hold) map[string][]Hold {
	m := map[string][]Hold{}
	for _, h := range holds {
		m[h.Name] = append(m[h.Name], h)
	}
	return m
}

func sortedNames(m map[string][]Hold) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func describe(h Hold) string {
	to := ts(h.To)
	if h.To.IsZero() {
		to = "never"
	}
	return h.Proc + " token " + itoa(h.Token) + " [" + ts(h.From) + ", " + to + " " + h.End.String() + "]"
}

// Exclusion finds holdings of one name that overlap in time by more than
// slack: a grant made while an earlier holder still believed it held the
// lock. slack absorbs the delay between the database's act and the
// holder's seeing it (a Lost observed a moment after the next grant was
// made); it is not a tolerance for late Lost. Each offending holding is
// reported once, against the overlapping holding that ends last.
func Exclusion(holds []Hold, slack time.Duration) []Violation {
	var out []Violation
	m := byName(holds)
	for _, name := range sortedNames(m) {
		hs := m[name]
		sort.SliceStable(hs, func(i, j int) bool {
			if !hs[i].From.Equal(hs[j].From) {
				return hs[i].From.Before(hs[j].From)
			}
			return hs[i].end().Before(hs[j].end())
		})
		cur := -1 // the holding seen so far that ends last
		for i, h := range hs {
			if cur >= 0 {
				prev := hs[cur]
				end := prev.end()
				if h.end().Before(end) {
					end = h.end()
				}
				if gap := end.Sub(h.From); gap > slack {
					what := gap.String()
					if end.Equal(forever) {
						what = "unbounded"
					}
					out = append(out, violation(InvExclusion,
						"lock %q: %s granted while %s still held it (overlap %s, slack %s)",
						name, describe(h), describe(prev), what, slack))
				}
			}
			if cur < 0 || hs[cur].end().Before(h.end()) {
				cur = i
			}
		}
	}
	return out
}

// TokenOrder checks the fencing tokens: of two grants of one name that
// certainly came in a known order, the later must carry the larger token,
// and no two grants of one name may carry the same token. A grant X
// certainly came before Y when X's holding had ended before Y's began
// (X.To at or before Y.From), or when Lock had returned X before Y's Lock
// was called (X.From before Y.Called, where Called is recorded). The
// second orders the handoffs Exclusion's slack forgives — a Lost seen a
// moment after the next grant — which are where fencing matters most.
// Grants whose Lock calls overlapped are not ordered: From is when Lock
// returned to the holder, so two grants close together may be seen in
// either order.
func TokenOrder(holds []Hold) []Violation {
	var out []Violation
	m := byName(holds)
	for _, name := range sortedNames(m) {
		hs := m[name]
		seen := map[int64]int{}
		for i, h := range hs {
			if j, dup := seen[h.Token]; dup {
				out = append(out, violation(InvTokenOrder,
					"lock %q: token %d granted twice: %s and %s", name, h.Token, describe(hs[j]), describe(h)))
				continue
			}
			seen[h.Token] = i
		}
		// For each grant, the largest token among the grants certainly
		// before it, by either rule: two sweeps.
		ended := maxBefore(hs, func(h Hold) time.Time { return h.end() }, func(h Hold) (time.Time, bool) { return h.From, true }, false)
		returned := maxBefore(hs, func(h Hold) time.Time { return h.From }, func(h Hold) (time.Time, bool) { return h.Called, !h.Called.IsZero() }, true)
		for i, h := range hs {
			if e := ended[i]; e >= 0 && h.Token < hs[e].Token {
				out = append(out, violation(InvTokenOrder,
					"lock %q: %s granted after %s ended, with a smaller token", name, describe(h), describe(hs[e])))
			} else if r := returned[i]; r >= 0 && h.Token < hs[r].Token {
				out = append(out, violation(InvTokenOrder,
					"lock %q: %s, Lock called %s, after %s was granted, with a smaller token", name, describe(h), ts(h.Called), describe(hs[r])))
			}
		}
	}
	return out
}

// maxBefore returns, for each holding i of hs, the index of the holding
// with the largest token among those whose key is before (strict) or at or
// before (!strict) the holding's probe time, or -1 if none is; a holding
// without a probe time gets -1.
func maxBefore(hs []Hold, key func(Hold) time.Time, probe func(Hold) (time.Time, bool), strict bool) []int {
	byKey := make([]int, len(hs))
	var probes []int
	for i := range hs {
		byKey[i] = i
		if _, ok := probe(hs[i]); ok {
			probes = append(probes, i)
		}
	}
	sort.SliceStable(byKey, func(a, b int) bool { return key(hs[byKey[a]]).Before(key(hs[byKey[b]])) })
	pt := func(i int) time.Time { t, _ := probe(hs[i]); return t }
	sort.SliceStable(probes, func(a, b int) bool { return pt(probes[a]).Before(pt(probes[b])) })
	out := make([]int, len(hs))
	for i := range out {
		out[i] = -1
	}
	k, best := 0, -1
	for _, i := range probes {
		t := pt(i)
		for k < len(byKey) {
			kt := key(hs[byKey[k]])
			if kt.After(t) || strict && kt.Equal(t) {
				break
			}
			if best < 0 || hs[byKey[k]].Token > hs[best].Token {
				best = byKey[k]
			}
			k++
		}
		out[i] = best
	}
	return out
}
