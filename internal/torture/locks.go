package torture

import (
	"fmt"
	"sort"
	"time"
)

// How a holding ended, as the history tells it.
const (
	endReleased = "released" // Release was called while Lost was still open
	endLost     = "lost"     // Lost closed first (stamped by a watcher goroutine)
	endKilled   = "killed"   // the process was SIGKILLed: it does nothing more
	endPaused   = "paused"   // the process was SIGSTOPped: whatever it does after SIGCONT must be fenced
	endOpen     = "open"     // never ended in the history
)

// holding is one held lock: from Lock's return to its end.
type holding struct {
	proc     string
	name     string
	id       int64
	token    int64
	from, to time.Time
	end      string
}

// lockVerdict is what the lock checks found.
type lockVerdict struct {
	exclusion  []string // two holders at once, by time
	tokenOrder []string // a later grant with a token not larger
	overlaps   int      // grants before an earlier holder's Lost was stamped, within the allowed slack
	maxGap     time.Duration
}

// checkLocks checks mutual exclusion by time and by fencing-token order.
// A holding that ended by Release, a SIGKILL or a SIGSTOP ends at that
// instant, so a later grant may not come before it; one that ended by Lost
// is stamped by a goroutine after the channel closed, so a grant up to
// lostSlack before the stamp is taken to have followed it (promise 8: Lost
// fires before the next grant).
func checkLocks(holds []*holding, lostSlack time.Duration) lockVerdict {
	var v lockVerdict
	byName := map[string][]*holding{}
	for _, h := range holds {
		byName[h.name] = append(byName[h.name], h)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		hs := byName[name]
		sort.SliceStable(hs, func(i, j int) bool { return hs[i].from.Before(hs[j].from) })
		// Exclusion: sweep in grant order, against the holding that
		// ends last so far.
		var last *holding
		for _, h := range hs {
			if last != nil && last.to.After(h.from) {
				gap := last.to.Sub(h.from)
				if last.end == endLost && gap <= lostSlack {
					v.overlaps++
					v.maxGap = max(v.maxGap, gap)
				} else {
					v.exclusion = append(v.exclusion, fmt.Sprintf("%q granted to %s (token %d) at %s while %s (token %d) held it since %s; that holding ended by %s %v later",
						name, h.proc, h.token, stamp(h.from), last.proc, last.token, stamp(last.from), last.end, gap.Round(time.Microsecond)))
				}
			}
			if last == nil || h.to.After(last.to) {
				last = h
			}
		}
		// Token order: a holding granted after another ended carries a
		// larger token. Sweep in grant order, with the largest token of
		// the holdings that ended before the grant.
		ends := append([]*holding(nil), hs...)
		sort.SliceStable(ends, func(i, j int) bool { return ends[i].to.Before(ends[j].to) })
		var maxTok int64
		var maxBy *holding
		k := 0
		for _, h := range hs {
			for k < len(ends) && ends[k].to.Before(h.from) {
				if ends[k].token > maxTok {
					maxTok, maxBy = ends[k].token, ends[k]
				}
				k++
			}
			if h.token == 0 && maxTok == 0 {
				continue // a backend without tokens
			}
			if h.token <= maxTok {
				v.tokenOrder = append(v.tokenOrder, fmt.Sprintf("%q granted to %s at %s with token %d, not above token %d of %s's earlier holding (ended %s)",
					name, h.proc, stamp(h.from), h.token, maxTok, maxBy.proc, stamp(maxBy.to)))
			}
		}
	}
	return v
}

func stamp(t time.Time) string { return t.Format("15:04:05.000000") }
