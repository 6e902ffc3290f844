package check

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Outcome is what the worker learned of a counter write.
type Outcome int

const (
	// OK: the fenced write returned nil; it applied.
	OK Outcome = iota
	// Failed: the write is known not to have applied (ErrFenced, a lost
	// lock before the write, any error the contract says changed nothing).
	Failed
	// Unknown: the write may or may not have applied (ErrUnknownOutcome,
	// or the process died with the write in flight).
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	}
	return "outcome?"
}

// CounterOp is one lock-guarded read-modify-write of a counter: under the
// lock the worker read Read and then wrote Wrote (Read+1 for an increment)
// with a write fenced by the lock's token. It is recorded once the read
// returned, whatever became of the write; Read must be the value read,
// for it is judged too: a read no order of the writes explains is a
// violation whatever the outcome of the op's own write.
type CounterOp struct {
	Proc, Key string
	// Invoke is taken before the read; Return when the write returned. An
	// Unknown op's Return is ignored: a write whose outcome is unknown may
	// land at any later time.
	Invoke, Return time.Time
	Outcome        Outcome
	Read, Wrote    int64
}

// CounterOptions tunes [CountersWith].
type CounterOptions struct {
	// Initial is each counter's value before the first op; absent is 0.
	Initial map[string]int64
	// Timeout bounds porcupine's search for each key; when it runs out
	// the key is reported as InvCounterUnknown. 0 means 10s.
	Timeout time.Duration
	// VisualizeDir, when set, receives one porcupine HTML visualization
	// per key whose history is not linearizable (counter-<key>.html).
	VisualizeDir string
}

// Counters is [CountersWith] with default options.
func Counters(ops []CounterOp, final map[string]int64) []Violation {
	return CountersWith(ops, final, CounterOptions{})
}

// CountersWith judges the counter histories, one register per key, against
// the values read at the end (final). Each op is a compare-and-set from
// Read to Wrote, atomic between Invoke and Return because the lock
// excluded every other writer and the fence refused a write after a newer
// grant. An OK op happened; a Failed op only read; an Unknown op read, and
// its write may have happened or not, at any time after Invoke. The history must be
// linearizable and end at final: every OK increment counted, an unknown
// one at most once, and no increment erased (a stale write that lands
// after a newer holder's write cannot be placed: it is a violation, not a
// finding).
//
// porcupine decides; the arithmetic (acknowledged ≤ final − initial ≤
// acknowledged + unknown) and the first pair of acknowledged writes over
// one read value are put in the detail to say what went wrong.
func CountersWith(ops []CounterOp, final map[string]int64, opt CounterOptions) []Violation {
	timeout := opt.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	keys := map[string][]CounterOp{}
	for _, op := range ops {
		keys[op.Key] = append(keys[op.Key], op)
	}
	for k := range final {
		if _, ok := keys[k]; !ok {
			keys[k] = nil
		}
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []Violation
	for _, k := range names {
		out = append(out, checkKey(k, keys[k], opt.Initial[k], final, timeout, opt.VisualizeDir)...)
	}
	return out
}

// counterInput is one porcupine operation: a compare-and-set, a read, or
// the final read.
type counterInput struct {
	op    CounterOp
	final bool
}

var counterModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { panic("set per key") },
	Step: func(state, input, _ interface{}) []interface{} {
		s := state.(int64)
		in := input.(counterInput)
		if in.final {
			if s == in.op.Read {
				return []interface{}{s}
			}
			return nil
		}
		switch in.op.Outcome {
		case OK:
			if s == in.op.Read {
				return []interface{}{in.op.Wrote}
			}
			return nil
		case Failed:
			if s == in.op.Read {
				return []interface{}{s}
			}
			return nil
		default: // Unknown: its read was seen; its write applied or not
			if s == in.op.Read {
				return []interface{}{s, in.op.Wrote}
			}
			return nil
		}
	},
	Hash: func(state interface{}) uint64 { return uint64(state.(int64)) },
	DescribeOperation: func(input, _ interface{}) string {
		in := input.(counterInput)
		if in.final {
			return fmt.Sprintf("final read %d", in.op.Read)
		}
		if in.op.Outcome == Failed {
			return fmt.Sprintf("%s read %d (write failed)", in.op.Proc, in.op.Read)
		}
		return fmt.Sprintf("%s %d→%d (%s)", in.op.Proc, in.op.Read, in.op.Wrote, in.op.Outcome)
	},
	DescribeState: func(state interface{}) string { return fmt.Sprint(state.(int64)) },
}

func checkKey(key string, ops []CounterOp, initial int64, final map[string]int64, timeout time.Duration, visDir string) []Violation {
	fin, haveFinal := final[key]
	if !haveFinal {
		return []Violation{violation(InvCounterMalformed, "counter %q: %d ops but no final value", key, len(ops))}
	}
	var bad []Violation
	var last int64
	var okN, unknownN int64
	increments, monotonic := true, true
	procs := map[string]int{}
	hist := make([]porcupine.Operation, 0, len(ops)+1)
	for _, op := range ops {
		if op.Invoke.IsZero() || op.Outcome != Unknown && (op.Return.IsZero() || op.Return.Before(op.Invoke)) {
			bad = append(bad, violation(InvCounterMalformed, "counter %q: %s op %d→%d invoked %s returned %s",
				key, op.Proc, op.Read, op.Wrote, ts(op.Invoke), ts(op.Return)))
			continue
		}
		if op.Wrote != op.Read+1 {
			increments = false
		}
		if op.Wrote <= op.Read {
			monotonic = false
		}
		switch op.Outcome {
		case OK:
			okN++
		case Unknown:
			unknownN++
		}
		if t := op.Invoke.UnixNano(); t > last {
			last = t
		}
		if t := op.Return.UnixNano(); op.Outcome != Unknown && t > last {
			last = t
		}
	}
	if len(bad) > 0 {
		return bad
	}
	bound := unknownBounds(ops, fin, last+2, monotonic)
	for _, op := range ops {
		id, ok := procs[op.Proc]
		if !ok {
			id = len(procs)
			procs[op.Proc] = id
		}
		ret := op.Return.UnixNano()
		if op.Outcome == Unknown {
			// A bound before Invoke (it read a value a completed op had
			// already seen left behind) leaves the op no place: illegal.
			ret = max(bound(op.Read), op.Invoke.UnixNano())
		}
		hist = append(hist, porcupine.Operation{ClientId: id, Input: counterInput{op: op}, Call: op.Invoke.UnixNano(), Return: ret})
	}
	hist = append(hist, porcupine.Operation{ClientId: len(procs), Input: counterInput{op: CounterOp{Proc: "final", Read: fin}, final: true},
		Call: last + 1, Return: last + 2})

	m := counterModel
	m.Init = func() []interface{} { return []interface{}{initial} }
	model := m.ToModel()
	res := porcupine.CheckOperationsTimeout(model, hist, timeout)
	summary := fmt.Sprintf("initial=%d final=%d ok=%d unknown=%d ops=%d", initial, fin, okN, unknownN, len(ops))
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return []Violation{violation(InvCounterUnknown, "counter %q: porcupine found no answer within its time (%s)", key, summary)}
	}
	detail := fmt.Sprintf("counter %q: history not linearizable (%s)", key, summary)
	if increments {
		switch got := fin - initial; {
		case got < okN:
			detail += fmt.Sprintf("; %d acknowledged increments erased", okN-got)
		case got > okN+unknownN:
			detail += fmt.Sprintf("; %d increments more than were attempted", got-okN-unknownN)
		}
	}
	if a, b, ok := sameRead(ops); ok {
		detail += fmt.Sprintf("; %s [%s, %s] and %s [%s, %s] both wrote over %d",
			a.Proc, ts(a.Invoke), ts(a.Return), b.Proc, ts(b.Invoke), ts(b.Return), a.Read)
	}
	if visDir != "" {
		if path, err := visualize(model, hist, key, visDir); err != nil {
			detail += "; visualization failed: " + err.Error()
		} else {
			detail += "; see " + path
		}
	}
	return []Violation{violation(InvCounter, "%s", detail)}
}

// sameRead finds two acknowledged writes made over one read value: with
// increments under a working lock, one of them erased the other.
func sameRead(ops []CounterOp) (CounterOp, CounterOp, bool) {
	seen := map[int64]CounterOp{}
	for _, op := range ops {
		if op.Outcome != OK {
			continue
		}
		if prev, ok := seen[op.Read]; ok {
			return prev, op, true
		}
		seen[op.Read] = op
	}
	return CounterOp{}, CounterOp{}, false
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func visualize(model porcupine.Model, hist []porcupine.Operation, key, dir string) (string, error) {
	_, info := porcupine.CheckOperationsVerbose(model, hist, 10*time.Second)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("visualize counter %q: %w", key, err)
	}
	path := filepath.Join(dir, "counter-"+unsafeName.ReplaceAllString(key, "_")+".html")
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		return "", fmt.Errorf("visualize counter %q: %w", key, err)
	}
	return path, nil
}

// unknownBounds gives the latest time at which an Unknown op of a key can
// matter: a write whose outcome is unknown may land at any later time, but
// in the model it applies only while the register still holds what it
// read. When every op moves the register up (Wrote > Read), the register
// holds a value for one stretch of any linearization, and that stretch
// ends before the return of any completed op that read more (OK and
// Failed ops, and the final read at finalRet). Landing later is a no-op in
// the model — and a stale write that did land in the database shows up as
// a read no order explains — so the op is ended there. Without this,
// porcupine keeps every ambiguous write pending to the end of the history
// and its search for a violation grows exponentially with their number.
// When some op does not move the register up, every Unknown op stays
// pending to end.
func unknownBounds(ops []CounterOp, fin, end int64, monotonic bool) func(read int64) int64 {
	if !monotonic {
		return func(int64) int64 { return end + 1 }
	}
	type obs struct{ read, ret int64 }
	seen := []obs{{fin, end}}
	for _, op := range ops {
		if op.Outcome != Unknown {
			seen = append(seen, obs{op.Read, op.Return.UnixNano()})
		}
	}
	// By read, descending; minRet[i] is the earliest return among seen[:i+1].
	sort.Slice(seen, func(i, j int) bool { return seen[i].read > seen[j].read })
	minRet := make([]int64, len(seen))
	for i, o := range seen {
		minRet[i] = o.ret
		if i > 0 && minRet[i-1] < o.ret {
			minRet[i] = minRet[i-1]
		}
	}
	return func(read int64) int64 {
		// The first index whose read is not above read.
		n := sort.Search(len(seen), func(i int) bool { return seen[i].read <= read })
		if n == 0 {
			return end + 1
		}
		return minRet[n-1]
	}
}
