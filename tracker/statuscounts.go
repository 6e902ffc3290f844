package tracker

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

// fileCountsEvery is how long the status page and /metrics keep a count
// of the files: Store.FileCounts reads every file row, so a page that
// refreshes every 5 s must not ask for it each time, and a count that
// failed (a hung database, a deadline) is not tried again sooner either.
const fileCountsEvery = time.Minute

// fileCounts keeps the last Store.FileCounts.
type fileCounts struct {
	mu      sync.Mutex
	tried   time.Time // last count, failed or not
	counted time.Time // last count that succeeded
	counts  []store.FileCount
	err     error // of the last count
}

// get returns the kept counts and when they were read, counting again
// first once they are fileCountsEvery old. Callers at the same moment wait
// for one count rather than each running their own.
func (c *fileCounts) get(ctx context.Context, st *store.Store, now time.Time) ([]store.FileCount, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tried.IsZero() || now.Sub(c.tried) >= fileCountsEvery {
		c.tried = now
		counts, err := st.FileCounts(ctx)
		c.err = err
		if err == nil {
			c.counts, c.counted = counts, now
		}
	}
	return c.counts, c.counted, c.err
}

// statusNamespace is the page's summary of domains, classes and files.
type statusNamespace struct {
	Domains int
	Classes int   // classes of their own, the default ones not counted
	Files   int64 // committed files
	// TooFew are files with fewer copies than their class wants
	// (devcount below mindevcount): what replication still has to do, or
	// cannot.
	TooFew  int64
	Counted time.Time // when the files were counted; zero: not yet
	PerDom  []statusDomain
}

type statusDomain struct {
	Name    string
	Classes int
	Files   int64
	TooFew  int64
}

// summarize folds the namespace and the file counts into the page's
// summary: one row per domain in name order, files of a domain or class
// no longer there (a count older than a delete_domain) left out.
func summarize(domains []store.Domain, classes []store.Class, counts []store.FileCount, defaultMin int) statusNamespace {
	type classKey struct{ dmid, classid int }
	minDev := map[classKey]int{}
	rows := map[int]*statusDomain{}
	ns := statusNamespace{Domains: len(domains), Classes: len(classes)}
	for _, d := range domains {
		rows[d.ID] = &statusDomain{Name: d.Name}
		minDev[classKey{d.ID, 0}] = defaultMin
	}
	for _, c := range classes {
		if r := rows[c.DomainID]; r != nil {
			r.Classes++
		}
		minDev[classKey{c.DomainID, c.ID}] = c.MinDevCount
	}
	for _, fc := range counts {
		r := rows[fc.DomainID]
		want, ok := minDev[classKey{fc.DomainID, fc.ClassID}]
		if r == nil || !ok {
			continue
		}
		r.Files += fc.Files
		ns.Files += fc.Files
		if fc.DevCount < want {
			r.TooFew += fc.Files
			ns.TooFew += fc.Files
		}
	}
	for _, r := range rows {
		ns.PerDom = append(ns.PerDom, *r)
	}
	slices.SortFunc(ns.PerDom, func(a, b statusDomain) int { return cmp.Compare(a.Name, b.Name) })
	return ns
}

// heldLocks are the named locks this tracker (its queries and workers)
// holds now, and whether they are known: a Store that store.Open or
// store.New made keeps them; one a library user built otherwise may not.
func (t *Tracker) heldLocks() ([]store.HeldLock, bool) {
	return store.Held(t.q.Store)
}
