package check

import (
	"sort"
	"time"
)

// Span is a stretch of time.
type Span struct{ From, To time.Time }

// StoreOpen is a tracker process opening one of its Stores, attempt after
// attempt: from its first attempt to the moment the Store was open, or to
// the moment its attempts were cut off unfinished (the run stopped the
// process, or killed it).
type StoreOpen struct {
	Store      string
	Start, End time.Time
	Opened     bool   // End is when the Store was open; false: when the attempts were cut off
	LastErr    string // the last failed attempt's error, if any
	// Excused are spans not counted against the bound: the harness's own
	// doing, when no Store could open (the database or the pooler in
	// front of it down, the process paused). They may overlap.
	Excused []Span
}

// Opens finds Stores that took longer than bound to open, not counting
// their Excused time. One cut off before bound is not judged: it might
// have opened in time. Violations are in order of Start.
func Opens(opens []StoreOpen, bound time.Duration) []Violation {
	type lateOpen struct {
		StoreOpen
		counted time.Duration
	}
	var late []lateOpen
	for _, o := range opens {
		if o.End.IsZero() {
			continue
		}
		if d := o.End.Sub(o.Start) - covered(o.Excused, o.Start, o.End); d > bound {
			late = append(late, lateOpen{o, d})
		}
	}
	sort.SliceStable(late, func(i, j int) bool { return late[i].Start.Before(late[j].Start) })
	var out []Violation
	for _, o := range late {
		state := "open"
		if !o.Opened {
			state = "still not open"
		}
		last := ""
		if o.LastErr != "" {
			last = "; last error: " + o.LastErr
		}
		out = append(out, violation(InvOpen, "%s first tried to open its Store at %s, %s at %s: %s counted (%s excused), bound %s%s",
			o.Store, ts(o.Start), state, ts(o.End), o.counted.Round(time.Millisecond), (o.End.Sub(o.Start)-o.counted).Round(time.Millisecond), bound, last))
	}
	return out
}

// covered is how much of [from, to] the spans cover, each instant once.
func covered(spans []Span, from, to time.Time) time.Duration {
	ss := append([]Span(nil), spans...)
	sort.Slice(ss, func(i, j int) bool { return ss[i].From.Before(ss[j].From) })
	var d time.Duration
	cur := from // everything before cur is counted already
	for _, s := range ss {
		a, b := s.From, s.To
		if a.Before(cur) {
			a = cur
		}
		if b.After(to) {
			b = to
		}
		if b.After(a) {
			d += b.Sub(a)
			cur = b
		}
	}
	return d
}
