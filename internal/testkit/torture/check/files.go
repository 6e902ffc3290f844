package check

import (
	"fmt"
	"sort"
	"time"
)

// Alloc is one fid reserved by CreateTempFile.
type Alloc struct {
	Proc       string
	Fid        int64
	Start, End time.Time // the call, as its caller timed it
}

// Fids checks fid allocation: no fid handed out twice, and a fid reserved
// by a call that started after another call had returned is larger than
// that call's fid (the contract: never at or below a reserved fid). Calls
// that overlap are not ordered, as with [TokenOrder].
func Fids(allocs []Alloc) []Violation {
	var out []Violation
	desc := func(a Alloc) string { return fmt.Sprintf("%s fid %d [%s, %s]", a.Proc, a.Fid, ts(a.Start), ts(a.End)) }
	seen := map[int64]Alloc{}
	for _, a := range allocs {
		if prev, dup := seen[a.Fid]; dup {
			out = append(out, violation(InvFid, "fid %d handed out twice: %s and %s", a.Fid, desc(prev), desc(a)))
			continue
		}
		seen[a.Fid] = a
	}
	byStart := append([]Alloc(nil), allocs...)
	sort.SliceStable(byStart, func(i, j int) bool { return byStart[i].Start.Before(byStart[j].Start) })
	byEnd := append([]Alloc(nil), allocs...)
	sort.SliceStable(byEnd, func(i, j int) bool { return byEnd[i].End.Before(byEnd[j].End) })
	k, best := 0, -1
	for _, a := range byStart {
		for k < len(byEnd) && !byEnd[k].End.After(a.Start) {
			if best < 0 || byEnd[k].Fid > byEnd[best].Fid {
				best = k
			}
			k++
		}
		if best >= 0 && a.Fid < byEnd[best].Fid {
			out = append(out, violation(InvFid, "%s is below %s, reserved before the call started", desc(a), desc(byEnd[best])))
		}
	}
	return out
}

// FileCommit is one CommitFile call as its caller saw it.
type FileCommit struct {
	Proc     string
	Fid      int64
	DomainID int
	Key      string
	Outcome  Outcome
	At       time.Time // when the call returned
}

// FileRow is one row of the file table at the end of a run.
type FileRow struct {
	Fid      int64
	DomainID int
	Key      string
}

// Commits checks the file table at the end (final) against the commits
// made: every acknowledged commit is there exactly once, under its key,
// unless removed says the workload deleted or replaced it on purpose, or a
// later commit of the same key was acknowledged or is there; a commit
// reported failed is not there; no fid and no (domain, key) is there
// twice. An Unknown commit may be there or not.
func Commits(commits []FileCommit, final []FileRow, removed map[int64]bool) []Violation {
	var out []Violation
	rows := map[int64]FileRow{}
	type dk struct {
		d int
		k string
	}
	owners := map[dk]int64{}
	for _, r := range final {
		if _, dup := rows[r.Fid]; dup {
			out = append(out, violation(InvCommit, "fid %d is in the file table twice", r.Fid))
		}
		rows[r.Fid] = r
		if o, dup := owners[dk{r.DomainID, r.Key}]; dup && o != r.Fid {
			out = append(out, violation(InvCommit, "domain %d key %q is owned by fids %d and %d", r.DomainID, r.Key, o, r.Fid))
		}
		owners[dk{r.DomainID, r.Key}] = r.Fid
	}
	// superseded reports whether a commit of c's key later than c was
	// acknowledged or applied: it replaced c's file, legitimately.
	byKey := map[dk][]FileCommit{}
	for _, c := range commits {
		byKey[dk{c.DomainID, c.Key}] = append(byKey[dk{c.DomainID, c.Key}], c)
	}
	superseded := func(c FileCommit) bool {
		for _, o := range byKey[dk{c.DomainID, c.Key}] {
			if o.Fid == c.Fid || !o.At.After(c.At) {
				continue
			}
			if _, there := rows[o.Fid]; there || o.Outcome == OK || removed[o.Fid] {
				return true
			}
		}
		return false
	}
	sorted := append([]FileCommit(nil), commits...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].At.Before(sorted[j].At) })
	for _, c := range sorted {
		r, there := rows[c.Fid]
		switch c.Outcome {
		case OK:
			switch {
			case there && (r.DomainID != c.DomainID || r.Key != c.Key):
				out = append(out, violation(InvCommit, "%s committed fid %d as domain %d key %q at %s; the file table has it as domain %d key %q",
					c.Proc, c.Fid, c.DomainID, c.Key, ts(c.At), r.DomainID, r.Key))
			case !there && !removed[c.Fid] && !superseded(c):
				out = append(out, violation(InvCommit, "%s's acknowledged commit of fid %d (domain %d key %q, %s) is not in the file table",
					c.Proc, c.Fid, c.DomainID, c.Key, ts(c.At)))
			}
		case Failed:
			if there {
				out = append(out, violation(InvCommit, "%s's commit of fid %d (domain %d key %q, %s) failed, yet the file is there",
					c.Proc, c.Fid, c.DomainID, c.Key, ts(c.At)))
			}
		}
	}
	return out
}
