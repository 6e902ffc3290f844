package torture

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Report is what a run did and found.
type Report struct {
	Backend       string
	Server        string
	LockMechanism string
	DSN           string // redacted
	Seed          uint64
	Load          time.Duration // how long the load and faults ran
	Trackers      int
	Workers       int // per tracker

	// Ops counts operations by name and outcome kind ("ok", "unknown_outcome",
	// "closed", "lock_lost", "lock_timeout", "not_found", "duplicate",
	// "deadline", "other"…).
	Ops map[string]map[string]int64
	// Samples holds the first messages of errors of kind "other" per
	// operation: connection errors and anything the contract does not name.
	Samples map[string][]string
	Faults  Faults

	Locks    LockStats
	Counters CounterStats
	Files    FileStats
	Queue    QueueStats

	Checks   []Check
	Findings []Finding
}

// Faults counts what the injector did.
type Faults struct {
	KillRounds     int // rounds of killing database sessions
	SessionsKilled int // sessions killed (MySQL KILL, pg_terminate_backend)
	Closes         int // trackers closed without warning (SQLite's stand-in for a kill)
	Crashes        int // trackers closed while holding locks
	HoldsCrashed   int // holdings ended by those crashes
	Reopens        int
	Errors         []string // fault injections that failed (first few)
}

// Check is one invariant's verdict.
type Check struct {
	Name   string
	OK     bool
	Detail string
}

// Finding is something worth knowing that is not a violation: a documented
// limitation, measured.
type Finding struct {
	Name   string
	Detail string
}

// OK reports whether every invariant held.
func (r *Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return len(r.Checks) > 0
}

// Failed lists the invariants that did not hold.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// Check returns the verdict of the invariant whose name starts with prefix.
func (r *Report) Check(prefix string) (Check, bool) {
	for _, c := range r.Checks {
		if strings.HasPrefix(c.Name, prefix) {
			return c, true
		}
	}
	return Check{}, false
}

// Count is the number of operations op that ended with kind ("" = all).
func (r *Report) Count(op, kind string) int64 {
	if kind != "" {
		return r.Ops[op][kind]
	}
	var n int64
	for _, v := range r.Ops[op] {
		n += v
	}
	return n
}

func (r *Report) check(name string, ok bool, detail string) {
	r.Checks = append(r.Checks, Check{Name: name, OK: ok, Detail: detail})
}

func (r *Report) finding(name, detail string) {
	r.Findings = append(r.Findings, Finding{Name: name, Detail: detail})
}

// String renders the report for a terminal.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "torture: backend=%s server=%q locks=%s dsn=%s\n", r.Backend, r.Server, r.LockMechanism, r.DSN)
	fmt.Fprintf(&b, "  seed=%d load=%v trackers=%d workers/tracker=%d\n", r.Seed, r.Load.Round(time.Millisecond), r.Trackers, r.Workers)
	f := r.Faults
	fmt.Fprintf(&b, "faults: %d kill rounds (%d sessions killed), %d closes, %d crashes of lock holders (%d holdings), %d reopens\n",
		f.KillRounds, f.SessionsKilled, f.Closes, f.Crashes, f.HoldsCrashed, f.Reopens)
	for _, e := range f.Errors {
		fmt.Fprintf(&b, "  fault error: %s\n", e)
	}
	b.WriteString("operations:\n")
	ops := make([]string, 0, len(r.Ops))
	for op := range r.Ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		fmt.Fprintf(&b, "  %-16s %s\n", op, fmtCounts(r.Ops[op]))
		for _, s := range r.Samples[op] {
			fmt.Fprintf(&b, "  %-16s   other: %s\n", "", s)
		}
	}
	b.WriteString("invariants:\n")
	for _, c := range r.Checks {
		verdict := "ok  "
		if !c.OK {
			verdict = "FAIL"
		}
		first, rest, _ := strings.Cut(c.Detail, "\n")
		fmt.Fprintf(&b, "  %s %s: %s\n", verdict, c.Name, first)
		if rest != "" {
			for _, l := range strings.Split(rest, "\n") {
				fmt.Fprintf(&b, "         %s\n", l)
			}
		}
	}
	if len(r.Findings) > 0 {
		b.WriteString("findings:\n")
		for _, fd := range r.Findings {
			first, rest, _ := strings.Cut(fd.Detail, "\n")
			fmt.Fprintf(&b, "  %s: %s\n", fd.Name, first)
			if rest != "" {
				for _, l := range strings.Split(rest, "\n") {
					fmt.Fprintf(&b, "      %s\n", l)
				}
			}
		}
	}
	if r.OK() {
		b.WriteString("result: PASS\n")
	} else {
		fmt.Fprintf(&b, "result: FAIL (%d invariants violated; reproduce with --seed=%d)\n", len(r.Failed()), r.Seed)
	}
	return b.String()
}

// opLog counts operations by kind of outcome.
type opLog struct {
	mu      sync.Mutex
	ops     map[string]map[string]int64
	samples map[string][]string
}

func newOpLog() *opLog {
	return &opLog{ops: map[string]map[string]int64{}, samples: map[string][]string{}}
}

// note records op's outcome and returns err unchanged.
func (o *opLog) note(op string, err error) error {
	k := kindOf(err)
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.ops[op]
	if m == nil {
		m = map[string]int64{}
		o.ops[op] = m
	}
	m[k]++
	if k == "other" && len(o.samples[op]) < 3 {
		o.samples[op] = append(o.samples[op], err.Error())
	}
	return err
}

// kindOf names an error by the sentinel it matches.
func kindOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, store.ErrUnknownOutcome):
		return "unknown_outcome"
	case errors.Is(err, store.ErrClosed):
		return "closed"
	case errors.Is(err, store.ErrLockLost):
		return "lock_lost"
	case errors.Is(err, store.ErrLockTimeout):
		return "lock_timeout"
	case errors.Is(err, store.ErrLockNotHeld):
		return "lock_not_held"
	case errors.Is(err, store.ErrNotFound):
		return "not_found"
	case errors.Is(err, store.ErrDuplicate):
		return "duplicate"
	case errors.Is(err, store.ErrInvalid):
		return "invalid"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "other"
}

// outcomeOf sorts a write's error as the contract defines it.
func outcomeOf(err error) int {
	switch {
	case err == nil:
		return applied
	case errors.Is(err, store.ErrUnknownOutcome):
		return maybe
	}
	return notApplied
}

func fmtCounts(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// lines appends up to ten problems, one a line, to a detail.
func lines(problems []string) string {
	if len(problems) == 0 {
		return ""
	}
	return "\n" + limitLines(problems, 10)
}

func limitLines(ls []string, n int) string {
	if len(ls) > n {
		ls = append(ls[:n:n], fmt.Sprintf("… and %d more", len(ls)-n))
	}
	return strings.Join(ls, "\n")
}
