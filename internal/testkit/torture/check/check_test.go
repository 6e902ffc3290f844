package check

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func wantViolations(t *testing.T, got []Violation, inv string, n int, contains ...string) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("got %d violations, want %d of %s: %v", len(got), n, inv, got)
	}
	for _, v := range got {
		if v.Invariant != inv {
			t.Errorf("violation %v, want invariant %s", v, inv)
		}
		if strings.Contains(v.Detail, "\n") {
			t.Errorf("detail is not one line: %q", v.Detail)
		}
	}
	for _, c := range contains {
		found := false
		for _, v := range got {
			if strings.Contains(v.Detail, c) {
				found = true
			}
		}
		if !found {
			t.Errorf("no violation mentions %q: %v", c, got)
		}
	}
}

func TestExclusion(t *testing.T) {
	serial := []Hold{
		{Proc: "w1", Name: "a", Token: 1, From: at(0), To: at(10), End: Released},
		{Proc: "w2", Name: "a", Token: 2, From: at(10), To: at(20), End: Lost},
		{Proc: "w3", Name: "a", Token: 3, From: at(30), To: at(40), End: Killed},
		// Paused at 50: its holding ends there for time-exclusion.
		{Proc: "w1", Name: "a", Token: 4, From: at(45), To: at(50), End: Paused},
		{Proc: "w2", Name: "a", Token: 5, From: at(60), End: Open},
		// Another name overlapping "a" freely.
		{Proc: "w3", Name: "b", Token: 1, From: at(5), To: at(55), End: Released},
	}
	t.Run("serial", func(t *testing.T) {
		wantViolations(t, Exclusion(serial, 0), InvExclusion, 0)
	})
	t.Run("overlap", func(t *testing.T) {
		h := append([]Hold(nil), serial...)
		h = append(h, Hold{Proc: "w4", Name: "a", Token: 9, From: at(15), To: at(18), End: Released})
		wantViolations(t, Exclusion(h, 0), InvExclusion, 1, `lock "a": w4 token 9`, "w2 token 2", "overlap 3ms")
		// A slack as large as the overlap absorbs it; a smaller one does not.
		wantViolations(t, Exclusion(h, 3*time.Millisecond), InvExclusion, 0)
		wantViolations(t, Exclusion(h, 2*time.Millisecond), InvExclusion, 1)
	})
	t.Run("open hold never ended", func(t *testing.T) {
		h := append([]Hold(nil), serial...)
		h = append(h, Hold{Proc: "w5", Name: "a", Token: 10, From: at(1000), To: at(1001), End: Released})
		wantViolations(t, Exclusion(h, 0), InvExclusion, 1, "w2 token 5", "never open", "overlap 1ms")
		h[len(h)-1].To = time.Time{}
		wantViolations(t, Exclusion(h, time.Hour), InvExclusion, 1, "unbounded")
	})
	t.Run("each offender once", func(t *testing.T) {
		h := []Hold{
			{Proc: "w1", Name: "a", Token: 1, From: at(0), To: at(100)},
			{Proc: "w2", Name: "a", Token: 2, From: at(10), To: at(20)},
			{Proc: "w3", Name: "a", Token: 3, From: at(30), To: at(40)},
		}
		wantViolations(t, Exclusion(h, 0), InvExclusion, 2, "w2 token 2", "w3 token 3")
	})
}

func TestTokenOrder(t *testing.T) {
	good := []Hold{
		{Proc: "w1", Name: "a", Token: 1, From: at(0), To: at(10)},
		{Proc: "w2", Name: "a", Token: 5, From: at(10), To: at(20)},
		{Proc: "w3", Name: "a", Token: 6, From: at(30), End: Open},
		{Proc: "w3", Name: "b", Token: 1, From: at(40), To: at(50)},
	}
	t.Run("increasing", func(t *testing.T) {
		wantViolations(t, TokenOrder(good), InvTokenOrder, 0)
	})
	t.Run("smaller after", func(t *testing.T) {
		h := append([]Hold(nil), good...)
		// A server restart that forgot its tokens: the next grant starts low.
		h = append(h, Hold{Proc: "w4", Name: "b", Token: 0, From: at(60), To: at(70)})
		wantViolations(t, TokenOrder(h), InvTokenOrder, 1, `lock "b": w4 token 0`, "w3 token 1")
	})
	t.Run("equal twice", func(t *testing.T) {
		h := append([]Hold(nil), good...)
		h = append(h, Hold{Proc: "w4", Name: "a", Token: 5, From: at(100), To: at(110)})
		wantViolations(t, TokenOrder(h), InvTokenOrder, 1, "token 5 granted twice")
	})
	t.Run("handoff within slack", func(t *testing.T) {
		// w1 saw Lost 2ms after w2 was granted: Exclusion's slack forgives
		// that, but w2 called Lock long after w1 had it, so its token must
		// be larger.
		h := []Hold{
			{Proc: "w1", Name: "a", Token: 7, Called: at(0), From: at(1), To: at(12), End: Lost},
			{Proc: "w2", Name: "a", Token: 8, Called: at(5), From: at(10), To: at(20)},
		}
		wantViolations(t, append(Exclusion(h, 5*time.Millisecond), TokenOrder(h)...), InvTokenOrder, 0)
		h[1].Token = 6
		wantViolations(t, Exclusion(h, 5*time.Millisecond), InvExclusion, 0)
		wantViolations(t, TokenOrder(h), InvTokenOrder, 1, "w2 token 6", "Lock called 10:00:00.005000, after w1 token 7")
		h[1].Called = time.Time{} // without Called the two are not ordered
		wantViolations(t, TokenOrder(h), InvTokenOrder, 0)
		// Lock calls that overlapped are not ordered either.
		h[1].Called = at(0)
		h[0].Called, h[0].From = at(0), at(6)
		wantViolations(t, TokenOrder(h), InvTokenOrder, 0)
	})
	t.Run("overlapping grants are exclusion's", func(t *testing.T) {
		// Two grants a moment apart, seen in the other order: not a token
		// violation (From is when Lock returned), but an overlap.
		h := []Hold{
			{Proc: "w1", Name: "a", Token: 2, From: at(0), To: at(10)},
			{Proc: "w2", Name: "a", Token: 1, From: at(1), To: at(10)},
		}
		wantViolations(t, TokenOrder(h), InvTokenOrder, 0)
		wantViolations(t, Exclusion(h, 0), InvExclusion, 1)
	})
}

// serialCounter builds n acknowledged increments of key by alternating
// workers, each under the lock after the previous one.
func serialCounter(key string, from int64, n int, start int) []CounterOp {
	var ops []CounterOp
	for i := 0; i < n; i++ {
		ops = append(ops, CounterOp{Proc: []string{"w1", "w2", "w3"}[i%3], Key: key,
			Invoke: at(start + 10*i), Return: at(start + 10*i + 5), Outcome: OK, Read: from + int64(i), Wrote: from + int64(i) + 1})
	}
	return ops
}

func TestCountersCorrect(t *testing.T) {
	ops := append(serialCounter("c1", 0, 20, 0), serialCounter("c2", 0, 5, 3)...)
	// A fenced write refused after its lock was lost: it read, wrote nothing.
	ops = append(ops, CounterOp{Proc: "w9", Key: "c2", Invoke: at(60), Return: at(70), Outcome: Failed, Read: 5, Wrote: 6})
	wantViolations(t, Counters(ops, map[string]int64{"c1": 20, "c2": 5, "idle": 0}), InvCounter, 0)
	// Initial values shift every expectation.
	ops = serialCounter("c1", 100, 3, 0)
	wantViolations(t, CountersWith(ops, map[string]int64{"c1": 103}, CounterOptions{Initial: map[string]int64{"c1": 100}}), InvCounter, 0)
}

func TestCountersErased(t *testing.T) {
	ops := serialCounter("c", 0, 10, 0)
	// The final value lost two acknowledged increments.
	wantViolations(t, Counters(ops, map[string]int64{"c": 8}), InvCounter, 1, "2 acknowledged increments erased")
	// And a counter nobody touched must not move.
	wantViolations(t, Counters(nil, map[string]int64{"idle": 1}), InvCounter, 1, `counter "idle"`)
}

// TestCountersStaleWrite is the fencing failure of issue 7 item 4: a
// holder paused past its lease read 5, a newer holder incremented twice,
// and the paused one's write of 6 landed afterwards and was acknowledged.
func TestCountersStaleWrite(t *testing.T) {
	ops := serialCounter("c", 0, 5, 0) // 0..5, last returns at 45
	ops = append(ops,
		CounterOp{Proc: "paused", Key: "c", Invoke: at(50), Return: at(500), Outcome: OK, Read: 5, Wrote: 6},
		CounterOp{Proc: "w2", Key: "c", Invoke: at(200), Return: at(210), Outcome: OK, Read: 5, Wrote: 6},
		CounterOp{Proc: "w3", Key: "c", Invoke: at(220), Return: at(230), Outcome: OK, Read: 6, Wrote: 7},
	)
	wantViolations(t, Counters(ops, map[string]int64{"c": 6}), InvCounter, 1,
		"2 acknowledged increments erased", "both wrote over 5", "paused")
	// Even when the final value happens to look right: the stale write
	// landed and a later increment was counted again on top of it.
	ops = append(ops, CounterOp{Proc: "w1", Key: "c", Invoke: at(600), Return: at(610), Outcome: OK, Read: 6, Wrote: 7},
		CounterOp{Proc: "w2", Key: "c", Invoke: at(620), Return: at(630), Outcome: OK, Read: 7, Wrote: 8})
	wantViolations(t, Counters(ops, map[string]int64{"c": 8}), InvCounter, 1, "both wrote over 5")
	// The same paused write refused by its fence is no violation.
	ops[5].Outcome = Failed
	ops = ops[:len(ops)-2]
	wantViolations(t, Counters(ops, map[string]int64{"c": 7}), InvCounter, 0)
}

func TestCountersUnknown(t *testing.T) {
	base := serialCounter("c", 0, 3, 0) // 0..3, returns by 25
	amb := CounterOp{Proc: "cut", Key: "c", Invoke: at(30), Return: at(35), Outcome: Unknown, Read: 3, Wrote: 4}
	t.Run("applied", func(t *testing.T) {
		ops := append(append([]CounterOp(nil), base...), amb,
			CounterOp{Proc: "w2", Key: "c", Invoke: at(40), Return: at(45), Outcome: OK, Read: 4, Wrote: 5})
		wantViolations(t, Counters(ops, map[string]int64{"c": 5}), InvCounter, 0)
	})
	t.Run("not applied", func(t *testing.T) {
		ops := append(append([]CounterOp(nil), base...), amb,
			CounterOp{Proc: "w2", Key: "c", Invoke: at(40), Return: at(45), Outcome: OK, Read: 3, Wrote: 4})
		wantViolations(t, Counters(ops, map[string]int64{"c": 4}), InvCounter, 0)
	})
	t.Run("applied or not, last", func(t *testing.T) {
		ops := append(append([]CounterOp(nil), base...), amb)
		wantViolations(t, Counters(ops, map[string]int64{"c": 3}), InvCounter, 0)
		wantViolations(t, Counters(ops, map[string]int64{"c": 4}), InvCounter, 0)
	})
	t.Run("counted twice", func(t *testing.T) {
		ops := append(append([]CounterOp(nil), base...), amb)
		wantViolations(t, Counters(ops, map[string]int64{"c": 5}), InvCounter, 1, "1 increments more than were attempted")
	})
	t.Run("impossible read", func(t *testing.T) {
		// Its write is in doubt, but its read was seen: 1, when the counter
		// had been at 3 since before the op began.
		bad := amb
		bad.Read, bad.Wrote = 1, 2
		ops := append(append([]CounterOp(nil), base...), bad)
		wantViolations(t, Counters(ops, map[string]int64{"c": 3}), InvCounter, 1)
	})
	t.Run("landed stale", func(t *testing.T) {
		// The ambiguous write of 4 over 3 landed after w2 and w3 had taken
		// the counter to 5: w1 then read 4. No order explains that.
		ops := append(append([]CounterOp(nil), base...), amb,
			CounterOp{Proc: "w2", Key: "c", Invoke: at(40), Return: at(45), Outcome: OK, Read: 3, Wrote: 4},
			CounterOp{Proc: "w3", Key: "c", Invoke: at(50), Return: at(55), Outcome: OK, Read: 4, Wrote: 5},
			CounterOp{Proc: "w1", Key: "c", Invoke: at(60), Return: at(65), Outcome: OK, Read: 4, Wrote: 5})
		wantViolations(t, Counters(ops, map[string]int64{"c": 5}), InvCounter, 1)
	})
}

func TestCountersMalformed(t *testing.T) {
	ops := serialCounter("c", 0, 2, 0)
	wantViolations(t, Counters(ops, map[string]int64{}), InvCounterMalformed, 1, "no final value")
	ops[1].Return = time.Time{}
	wantViolations(t, Counters(ops, map[string]int64{"c": 2}), InvCounterMalformed, 1, "w2 op 1→2")
}

// TestCountersUndecided gives porcupine a search it cannot finish: many
// overlapping reads that may be ordered any way, under an impossible final
// value. The answer must be "unknown", never a pass.
func TestCountersUndecided(t *testing.T) {
	var ops []CounterOp
	for i := 0; i < 60; i++ {
		ops = append(ops, CounterOp{Proc: "r", Key: "c", Invoke: at(0), Return: at(1000), Outcome: Failed, Read: 0, Wrote: 1})
		ops = append(ops, CounterOp{Proc: "u", Key: "c", Invoke: at(0), Return: at(1000), Outcome: Unknown, Read: int64(i), Wrote: int64(i + 1)})
	}
	got := CountersWith(ops, map[string]int64{"c": 1000}, CounterOptions{Timeout: 50 * time.Millisecond})
	wantViolations(t, got, InvCounterUnknown, 1, "no answer within its time")
}

func TestCountersVisualize(t *testing.T) {
	dir := t.TempDir()
	ops := serialCounter("torture_ctr_1", 0, 4, 0)
	ops[3].Read = 2 // two writes over 2
	ops[3].Wrote = 3
	got := CountersWith(ops, map[string]int64{"torture_ctr_1": 3}, CounterOptions{VisualizeDir: dir})
	wantViolations(t, got, InvCounter, 1, "see "+filepath.Join(dir, "counter-torture_ctr_1.html"))
	b, err := os.ReadFile(filepath.Join(dir, "counter-torture_ctr_1.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "w1 2→3 (ok)") {
		t.Errorf("visualization does not describe the ops (%d bytes)", len(b))
	}
}

func TestLeases(t *testing.T) {
	good := []Lease{
		{Proc: "w1", Queue: "replicate", Fid: 1, From: at(0), Until: at(100), Finished: at(20)},
		{Proc: "w2", Queue: "replicate", Fid: 1, From: at(30), Until: at(130)},  // after w1 finished
		{Proc: "w3", Queue: "replicate", Fid: 1, From: at(130), Until: at(230)}, // after w2's lease ran out
		{Proc: "w1", Queue: "delete", Fid: 1, From: at(50), Until: at(150)},     // another queue
		{Proc: "w2", Queue: "replicate", Fid: 2, From: at(50), Until: at(150)},
	}
	wantViolations(t, Leases(good, 0), InvLease, 0)
	bad := append(append([]Lease(nil), good...), Lease{Proc: "w4", Queue: "replicate", Fid: 2, From: at(140), Until: at(240)})
	wantViolations(t, Leases(bad, 0), InvLease, 1, "queue replicate fid 2: leased to w4", "while w2", "overlap 10ms")
	wantViolations(t, Leases(bad, 10*time.Millisecond), InvLease, 0)
}

func TestDeadlines(t *testing.T) {
	ops := []Op{
		{Proc: "w1", Name: "File", Start: at(0), End: at(50), Deadline: at(100)},
		{Proc: "w2", Name: "Lock x", Start: at(0), End: at(105), Deadline: at(100)},
		{Proc: "w3", Name: "File", Start: at(0), End: at(30100), Deadline: at(100)},
		{Proc: "w4", Name: "File", Start: at(0), Deadline: at(100)}, // died in the call
	}
	wantViolations(t, Deadlines(ops, 10*time.Millisecond), InvDeadline, 1, "w3 File", "30s late")
	wantViolations(t, Deadlines(ops, 0), InvDeadline, 2, "w2 Lock x")
}

// simulate builds a counter history of n ops over keys counters, as a run
// with working locks and fencing would record it: per key one holder at a
// time, 5% of writes refused by their fence, 2% ambiguous (half of them
// applied), and workers interleaved across keys.
func simulate(n, keys int, seed int64) ([]CounterOp, map[string]int64) {
	rng := rand.New(rand.NewSource(seed))
	val := make([]int64, keys)
	clock := make([]time.Time, keys)
	for i := range clock {
		clock[i] = t0.Add(time.Duration(i) * time.Microsecond)
	}
	ops := make([]CounterOp, 0, n)
	for i := 0; i < n; i++ {
		k := rng.Intn(keys)
		inv := clock[k].Add(time.Duration(rng.Intn(300)) * time.Microsecond)
		ret := inv.Add(time.Duration(200+rng.Intn(2000)) * time.Microsecond)
		op := CounterOp{Proc: "w" + itoa(int64(rng.Intn(16))), Key: "ctr" + itoa(int64(k)), Invoke: inv, Return: ret, Read: val[k], Wrote: val[k] + 1}
		switch r := rng.Intn(100); {
		case r < 5:
			op.Outcome = Failed
		case r < 7:
			op.Outcome = Unknown
			if r == 5 {
				val[k]++
			}
		default:
			op.Outcome = OK
			val[k]++
		}
		clock[k] = ret
		ops = append(ops, op)
	}
	final := map[string]int64{}
	for k, v := range val {
		final["ctr"+itoa(int64(k))] = v
	}
	return ops, final
}

// TestCountersLarge: a 20,000-op history of a correct run is judged a
// pass within the default time, and the same history with one stale write
// is judged a violation, not "unknown".
func TestCountersLarge(t *testing.T) {
	ops, final := simulate(20000, 8, 1)
	start := time.Now()
	wantViolations(t, Counters(ops, final), InvCounter, 0)
	t.Logf("20000 ops, correct: %s", time.Since(start))

	// Near the end of ctr0, an acknowledged write over a value read long before.
	var last int
	for i, op := range ops {
		if op.Key == "ctr0" {
			last = i
		}
	}
	stale := ops[last]
	stale.Proc = "paused"
	stale.Read -= 10
	stale.Wrote = stale.Read + 1
	stale.Outcome = OK
	bad := append(append([]CounterOp(nil), ops...), stale)
	final["ctr0"] = stale.Wrote
	start = time.Now()
	wantViolations(t, Counters(bad, final), InvCounter, 1, `counter "ctr0"`)
	t.Logf("20000 ops, one stale write: %s", time.Since(start))
}

func BenchmarkCounters20000(b *testing.B) {
	ops, final := simulate(20000, 8, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v := Counters(ops, final); len(v) != 0 {
			b.Fatal(v)
		}
	}
}

func BenchmarkExclusion20000(b *testing.B) {
	var hs []Hold
	for i := 0; i < 20000; i++ {
		hs = append(hs, Hold{Proc: "w", Name: "n" + itoa(int64(i%16)), Token: int64(i), From: at(i * 10), To: at(i*10 + 5)})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v := Exclusion(hs, 0); len(v) != 0 {
			b.Fatal(v)
		}
		if v := TokenOrder(hs); len(v) != 0 {
			b.Fatal(v)
		}
	}
}
