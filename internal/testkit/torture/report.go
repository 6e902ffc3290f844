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
	Procs         int           // tracker processes
	Stores        int           // Stores per process
	Workers       int           // goroutines per Store
	Broken        string        // the negative control the run was made with, if any
	Private       string        // the private server mode, if any
	LockService   string        // the outside lock service (Config.Locks: LocksEtcd), if any

	// Ops counts operations by name and outcome kind ("ok", "unknown_outcome",
	// "closed", "lock_lost", "lock_timeout", "not_found", "duplicate",
	// "deadline", "other"…).
	Ops map[string]map[string]int64
	// Samples holds the first messages of errors of kind "other" per
	// operation: connection errors and anything the contract does not name.
	Samples map[string][]string
	// InFlight counts operations a SIGKILL cut off (their outcome unknown).
	InFlight int64
	Faults   Faults

	Locks    LockStats
	Counters CounterStats
	Files    FileStats
	Queue    QueueStats
	// MaxLockRecovery is the longest a killed holder's lock stayed taken,
	// over Recoveries measurements.
	MaxLockRecovery time.Duration
	Recoveries      int

	WorkerErrors []string // tracker processes that failed by themselves
	// PoolerRestarts counts the times the private PgBouncer died by itself
	// and the run started it again (PrivatePgBouncer; see pooler.go): the
	// harness's own infrastructure, neither a fault nor a violation.
	PoolerRestarts int

	Checks   []Check
	Findings []Finding
}

// Faults counts what the injector did.
type Faults struct {
	// Count is the number of faults made, by kind (kill9, sigstop,
	// sessions, dbcrash, partition, delay, cut, ambiguous, failover).
	Count map[string]int
	// Applicable lists the kinds this run could make.
	Applicable     []string
	SessionsKilled int      // sessions killed (MySQL KILL, pg_terminate_backend)
	Errors         []string // fault injections that failed (the first four and the latest)
	ErrorCount     int      // fault injections that failed
}

// Total is the number of faults made.
func (f Faults) Total() int {
	n := 0
	for _, v := range f.Count {
		n += v
	}
	return n
}

// Check is one invariant's verdict.
type Check struct {
	Name       string
	OK         bool
	Violations int
	Detail     string
}

// Finding is something worth knowing that is not a violation.
type Finding struct {
	Name   string
	Detail string
}

// LockStats summarises the lock holdings.
type LockStats struct {
	Holds    int
	EndedBy  map[string]int64 // released, lost, killed, paused, open
	Overlaps int              // grants within Bound before the previous holder's Lost stamp
	MaxGap   time.Duration
	Bound    time.Duration
	BoundDoc string
}

// Violations is the number of violations over every invariant.
func (r *Report) Violations() int {
	n := 0
	for _, c := range r.Checks {
		n += c.Violations
	}
	return n
}

// OpsTotal is the number of operations the workers made.
func (r *Report) OpsTotal() int64 {
	var n int64
	for _, m := range r.Ops {
		for _, v := range m {
			n += v
		}
	}
	return n
}

// Summary is the one-line result:
//
//	torture: backend=<b> seconds=<s> ops=<n> faults=<n> violations=<n> kill9=<n> sigstop=<n> dbcrash=<n> partition=<n> delay=<n> ambiguous=<n> failover=<n> etcdkill=<n> etcdleader=<n> etcdpartition=<n> max_lock_recovery_ms=<n>
//
// with "-" for a fault kind the backend's run cannot make (the etcd kinds
// without etcd locks), and, behind a
// private PgBouncer, " pooler_restarts=<n>" at the end.
func (r *Report) Summary() string {
	kind := func(k string) string {
		for _, a := range r.Faults.Applicable {
			if a == k {
				return fmt.Sprint(r.Faults.Count[k])
			}
		}
		return "-"
	}
	rec := "-"
	if r.Recoveries > 0 {
		rec = fmt.Sprint(r.MaxLockRecovery.Milliseconds())
	}
	return fmt.Sprintf("torture: backend=%s seconds=%d ops=%d faults=%d violations=%d kill9=%s sigstop=%s dbcrash=%s partition=%s delay=%s ambiguous=%s failover=%s etcdkill=%s etcdleader=%s etcdpartition=%s max_lock_recovery_ms=%s",
		r.Backend, int(r.Load.Round(time.Second).Seconds()), r.OpsTotal(), r.Faults.Total(), r.Violations(),
		kind(faultKill9), kind(faultSigstop), kind(faultDBCrash), kind(faultPartition), kind(faultDelay), kind(faultAmbiguous), kind(faultFailover),
		kind(faultEtcdKill), kind(faultEtcdLeader), kind(faultEtcdPartition), rec) + r.poolerSummary()
}

func (r *Report) poolerSummary() string {
	if r.Private != PrivatePgBouncer {
		return ""
	}
	return fmt.Sprintf(" pooler_restarts=%d", r.PoolerRestarts)
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

// check records an invariant's verdict: it holds when problems is empty.
func (r *Report) check(name string, problems []string, detail string) {
	r.Checks = append(r.Checks, Check{Name: name, OK: len(problems) == 0, Violations: len(problems), Detail: detail + lines(problems)})
}

func (r *Report) finding(name, detail string) {
	r.Findings = append(r.Findings, Finding{Name: name, Detail: detail})
}

// String renders the report for a terminal.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "backend=%s server=%q locks=%s dsn=%s\n", r.Backend, r.Server, r.LockMechanism, r.DSN)
	fmt.Fprintf(&b, "  seed=%d load=%v processes=%d stores/process=%d workers/store=%d", r.Seed, r.Load.Round(time.Millisecond), r.Procs, r.Stores, r.Workers)
	if r.Broken != "" {
		fmt.Fprintf(&b, " negative-control=%s", r.Broken)
	}
	if r.Private != "" {
		fmt.Fprintf(&b, " private-server=%s", r.Private)
	}
	b.WriteString("\n")
	f := r.Faults
	fmt.Fprintf(&b, "faults: %s (%d sessions killed); %d writes cut off by SIGKILL (unknown outcome)\n", fmtCounts(intCounts(f.Count)), f.SessionsKilled, r.InFlight)
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
		fmt.Fprintf(&b, "result: FAIL (%d invariants violated; seed %d)\n", len(r.Failed()), r.Seed)
	}
	b.WriteString(r.Summary() + "\n")
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

// noteKind records op's outcome by kind.
func (o *opLog) noteKind(op, k, msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.ops[op]
	if m == nil {
		m = map[string]int64{}
		o.ops[op] = m
	}
	m[k]++
	if k == "other" && len(o.samples[op]) < 3 {
		o.samples[op] = append(o.samples[op], msg)
	}
}

// total is the number of op calls that returned.
func (o *opLog) total(op string) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var n int64
	for _, v := range o.ops[op] {
		n += v
	}
	return n
}

func intCounts(m map[string]int) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		out[k] = int64(v)
	}
	return out
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
	case errors.Is(err, store.ErrFenced):
		return "fenced"
	case errors.Is(err, store.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, store.ErrLockLost):
		return "lock_lost"
	case errors.Is(err, store.ErrLockTimeout):
		return "lock_timeout"
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
