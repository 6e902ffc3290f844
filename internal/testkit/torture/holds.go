package torture

import "time"

// holdLog follows the lock holdings through the merged history: the
// workers' grants and ends, and the coordinator's kills, stops and conts,
// which end every holding their process had open.
type holdLog struct {
	holds     map[holdKey]*holding
	all       []*holding                      // holdings placed in time, in grant order
	open      map[string]map[holdKey]*holding // process prefix → open holdings
	stoppedAt map[string]time.Time            // process prefix → its SIGSTOP, until SIGCONT or SIGKILL
	killedAt  map[string]time.Time            // process prefix → its SIGKILL
	pauses    map[string][]pause              // process prefix → its ended pauses
	kills     int
	unplaced  int // holdings granted during a pause, left out of the time checks
}

func newHoldLog() *holdLog {
	return &holdLog{holds: map[holdKey]*holding{}, open: map[string]map[holdKey]*holding{}, stoppedAt: map[string]time.Time{}, killedAt: map[string]time.Time{}, pauses: map[string][]pause{}}
}

// note takes a "grant", "end", "kill", "stop" or "cont" event, in time
// order.
func (l *holdLog) note(ev event) {
	t := fromNanos(ev.T)
	pfx := procPrefix(ev.P)
	switch ev.K {
	case "grant":
		hd := &holding{proc: ev.P, name: ev.N, id: ev.H, token: ev.Tok, from: t, call: fromNanos(ev.S), end: endOpen}
		k := holdKey{ev.P, ev.H}
		l.holds[k] = hd
		// A process stopped during its Lock call was granted the lock
		// at some instant between the call and the stop, but stamped it
		// after SIGCONT: with no known instant, the holding is left out
		// of the time checks; what it writes is judged by its fence.
		if p, ok := pausedDuring(l.pauses[pfx], fromNanos(ev.S), t); ok {
			hd.from, hd.to, hd.end = p, p, endPaused
			l.unplaced++
			return
		}
		// Stamped after the coordinator's SIGSTOP stamp, with no SIGCONT
		// yet: the process ran on for a moment between the stamp and
		// the signal's arrival (a loaded machine can delay either by
		// hundreds of milliseconds). Its holding began before it really
		// stopped and ends, for the time checks, at the stop, like the
		// holdings the stop found open; what it writes after SIGCONT is
		// judged by its fence.
		if from, ok := l.stoppedAt[pfx]; ok {
			hd.from, hd.to, hd.end = from, from, endPaused
			l.unplaced++
			return
		}
		// Stamped after the coordinator's SIGKILL stamp: likewise, the
		// process ran on for a moment before the signal arrived, and its
		// holding ended with it, at an instant no one stamped; left open,
		// it would overlap every later grant of the name.
		if at, ok := l.killedAt[pfx]; ok {
			hd.from, hd.to, hd.end = at, at, endKilled
			l.unplaced++
			return
		}
		l.all = append(l.all, hd)
		if l.open[pfx] == nil {
			l.open[pfx] = map[holdKey]*holding{}
		}
		l.open[pfx][k] = hd
	case "end":
		k := holdKey{ev.P, ev.H}
		if hd := l.open[pfx][k]; hd != nil {
			hd.to, hd.end = t, ev.Msg
			delete(l.open[pfx], k)
		}
	case "kill", "stop":
		cause := endKilled
		if ev.K == "stop" {
			cause = endPaused
			l.stoppedAt[pfx] = t
		}
		for k, hd := range l.open[pfx] {
			hd.to, hd.end = t, cause
			delete(l.open[pfx], k)
		}
		if ev.K == "kill" {
			l.killedAt[pfx] = t
			l.kills++
			l.endPause(pfx, t)
		}
	case "cont":
		l.endPause(pfx, t)
	}
}

func (l *holdLog) endPause(pfx string, t time.Time) {
	if from, ok := l.stoppedAt[pfx]; ok {
		l.pauses[pfx] = append(l.pauses[pfx], pause{from, t})
		delete(l.stoppedAt, pfx)
	}
}
