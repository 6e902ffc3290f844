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
type Hold struct {
	Proc  string // the worker process, as the run names it
	Name  string // the lock name
	Token int64  // Lock.Token() of the grant
	From  time.Time
	// From is when Lock returned; To is when the holding ended as seen by
	// the holder (see End). A zero To means it never ended.
	To  time.Time
	End EndKind
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

// TokenOrder checks the fencing tokens: a grant made after an earlier
// holding of the same name had ended (its To at or before the grant's From)
// must carry a larger token, and no two grants of one name may carry the
// same token. Grants whose holdings overlap are not ordered here: From is
// when Lock returned to the holder, so two grants close together may be
// seen in either order; their overlap is Exclusion's to report.
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
		byFrom := append([]Hold(nil), hs...)
		sort.SliceStable(byFrom, func(i, j int) bool { return byFrom[i].From.Before(byFrom[j].From) })
		byEnd := append([]Hold(nil), hs...)
		sort.SliceStable(byEnd, func(i, j int) bool { return byEnd[i].end().Before(byEnd[j].end()) })
		k := 0
		best := -1 // index in byEnd of the ended holding with the largest token
		for _, h := range byFrom {
			for k < len(byEnd) && !byEnd[k].end().After(h.From) {
				if best < 0 || byEnd[k].Token > byEnd[best].Token {
					best = k
				}
				k++
			}
			if best >= 0 && h.Token < byEnd[best].Token {
				out = append(out, violation(InvTokenOrder,
					"lock %q: %s granted after %s ended, with a smaller token", name, describe(h), describe(byEnd[best])))
			}
		}
	}
	return out
}
