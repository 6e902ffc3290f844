package torture

import (
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/torture/check"
)

// A worker may stamp a grant a moment after the coordinator stamped its
// process's SIGSTOP, before the signal arrived. That holding must end at
// the stop, as the ones the stop found open do; judged as lasting through
// the pause it overlapped every grant made meanwhile, a false exclusion
// violation (the first pair of 10-minute runs reported one).
func TestGrantStampedAfterStopEndsAtStop(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) int64 { return nanos(t0.Add(time.Duration(ms) * time.Millisecond)) }
	l := newHoldLog()
	for _, ev := range []event{
		{K: "stop", P: "p0.0", T: at(0)},
		// Lock called before the stop, its grant stamped after it.
		{K: "grant", P: "p0.0s0", N: "torture:ctr:0", H: 1, Tok: 1, S: at(-10), T: at(5)},
		// While p0 is stopped its lock goes to p1.
		{K: "grant", P: "p1.0s0", N: "torture:ctr:0", H: 1, Tok: 2, S: at(90), T: at(100)},
		{K: "end", P: "p1.0s0", H: 1, T: at(200), Msg: endReleased},
		{K: "cont", P: "p0.0", T: at(1000)},
		{K: "end", P: "p0.0s0", H: 1, T: at(1010), Msg: endLost},
	} {
		l.note(ev)
	}
	paused := l.holds[holdKey{"p0.0s0", 1}]
	if paused == nil || paused.end != endPaused || !paused.to.Equal(t0) {
		t.Fatalf("grant stamped after the stop: holding %+v, want it ended (paused) at the stop %v", paused, t0)
	}
	if l.unplaced != 1 || len(l.all) != 1 {
		t.Errorf("unplaced %d, placed %d holdings; want 1 and 1 (only p1's placed in time)", l.unplaced, len(l.all))
	}
	var hs []check.Hold
	for _, hd := range l.all {
		hs = append(hs, hd.check())
	}
	if v := check.Exclusion(hs, 0); len(v) != 0 {
		t.Errorf("exclusion violations %v, want none", v)
	}
	if ps := l.pauses["p0.0"]; len(ps) != 1 || !ps[0].from.Equal(t0) {
		t.Errorf("pauses %v, want one from the stop", ps)
	}
}

// Likewise a grant stamped a moment after the coordinator stamped the
// process's SIGKILL: the holding ended with the process and must not stay
// open, overlapping every later grant (a 120 s SQLite run reported 13
// violations against one such holding).
func TestGrantStampedAfterKillEndsAtKill(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) int64 { return nanos(t0.Add(time.Duration(ms) * time.Millisecond)) }
	l := newHoldLog()
	for _, ev := range []event{
		{K: "kill", P: "p0.0", T: at(0)},
		{K: "grant", P: "p0.0s0", N: "torture:ctr:0", H: 1, Tok: 1, S: at(-10), T: at(1)},
		// The next incarnation takes the lock.
		{K: "grant", P: "p0.1s0", N: "torture:ctr:0", H: 1, Tok: 2, S: at(90), T: at(100)},
		{K: "end", P: "p0.1s0", H: 1, T: at(200), Msg: endReleased},
	} {
		l.note(ev)
	}
	dead := l.holds[holdKey{"p0.0s0", 1}]
	if dead == nil || dead.end != endKilled || !dead.to.Equal(t0) {
		t.Fatalf("grant stamped after the kill: holding %+v, want it ended (killed) at the kill %v", dead, t0)
	}
	var hs []check.Hold
	for _, hd := range l.all {
		hs = append(hs, hd.check())
	}
	if v := check.Exclusion(hs, 0); len(v) != 0 {
		t.Errorf("exclusion violations %v, want none", v)
	}
}

// The stall time taken off a late call's lateness is exactly the part of
// the call that its process's stalls cover.
func TestOverlap(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(1000, 0).Add(time.Duration(ms) * time.Millisecond) }
	stalls := []pause{{at(100), at(300)}, {at(500), at(600)}, {at(900), at(1200)}}
	for _, c := range []struct {
		from, to int
		want     time.Duration
	}{
		{0, 50, 0},
		{0, 1000, 400 * time.Millisecond},  // 200 + 100 + 100 of the third
		{200, 550, 150 * time.Millisecond}, // 100 + 50
		{310, 490, 0},
		{1000, 2000, 200 * time.Millisecond},
	} {
		if got := overlap(stalls, at(c.from), at(c.to)); got != c.want {
			t.Errorf("overlap of [%d, %d] ms = %v; want %v", c.from, c.to, got, c.want)
		}
	}
}
