package torture

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/torture/check"
	"github.com/gomogile/gomogile/store"
)

// history is the run's events, merged from every process and the
// coordinator, replayed in time order into the checks.
type history struct {
	r      *run
	events []event
}

func newHistory(r *run) *history {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &history{r: r, events: append([]event(nil), r.history...)}
}

func (h *history) add(ev event) { h.events = append(h.events, ev) }

type holdKey struct {
	proc string
	id   int64
}

// judge replays the history and checks every invariant against it and the
// database, filling the Report.
func (h *history) judge(ctx context.Context, st *store.Store, remaining int64) error {
	r, rep, cfg := h.r, h.r.rep, h.r.cfg
	sort.SliceStable(h.events, func(i, j int) bool { return h.events[i].T < h.events[j].T })

	ops := newOpLog()
	files := newFileLog()
	queue := newQueueLog(cfg.ClockSkew)
	hl := newHoldLog()
	writes := map[holdKey]*guardedWrite{}
	var allWrites []*guardedWrite
	var early, badSeen []string
	var lostPre int64
	commitPending := map[int64]bool{}
	abandonPending := map[int64]bool{}
	requeues := map[holdKey]func(string, time.Time){}
	leases := map[holdKey]*leaseRec{}
	var probes []event
	var dups []event
	var created []event
	var cstarts int64
	var deadlineOps []event
	var opens []event              // openstart, opened, openfail
	stalls := map[string][]pause{} // process prefix → its runtime's stalls

	for _, ev := range h.events {
		t := fromNanos(ev.T)
		switch ev.K {
		case "op":
			ops.noteKind(ev.Op, ev.E, ev.Msg)
			if ev.D != 0 {
				deadlineOps = append(deadlineOps, ev)
			}
		case "stall":
			pfx := procPrefix(ev.P)
			stalls[pfx] = append(stalls[pfx], pause{fromNanos(ev.S), t})
		case "grant", "end", "kill", "stop", "cont":
			hl.note(ev)
		case "probe":
			probes = append(probes, ev)
		case "openstart", "opened", "openfail":
			opens = append(opens, ev)
		case "dupowner":
			dups = append(dups, ev)
		case "early":
			early = append(early, ev.Msg)
		case "bad":
			badSeen = append(badSeen, ev.Msg)
		case "set":
			w := &guardedWrite{ctr: ev.C - 1, proc: ev.P, hold: hl.holds[holdKey{ev.P, ev.H}], get: fromNanos(ev.S), invoke: t, outcome: maybe, read: ev.V, wrote: ev.W}
			if w.hold == nil {
				w.hold = &holding{proc: ev.P, name: ev.N, token: ev.Tok, from: w.get}
			}
			writes[holdKey{ev.P, ev.H}] = w
			allWrites = append(allWrites, w)
		case "setdone":
			if w := writes[holdKey{ev.P, ev.H}]; w != nil {
				w.ret, w.outcome = t, ev.O
			}
		case "lostpre":
			lostPre++
		case "cstart":
			cstarts++
		case "created":
			created = append(created, ev)
		case "ambcreate":
			files.ambiguousCreates++
		case "abandonstart":
			abandonPending[ev.Fid] = true
		case "abandon":
			delete(abandonPending, ev.Fid)
			files.update(ev.Fid, func(rec *fidRec) { rec.abandon = ev.O })
		case "commit":
			commitPending[ev.Fid] = true
		case "commitdone":
			delete(commitPending, ev.Fid)
			files.committed(ev.Fid, ev.O, ev.Fid2)
		case "gone":
			files.gone(ev.Fid)
		case "rq":
			requeues[holdKey{ev.P, ev.H}] = queue.requeue(ev.Fid, ev.Msg, ev.P, t)
		case "rqdone":
			if done := requeues[holdKey{ev.P, ev.H}]; done != nil {
				done(ev.E, t)
				delete(requeues, holdKey{ev.P, ev.H})
			}
		case "enq":
			queue.enqueued(ev.Fid, fromNanos(ev.S), ev.O)
		case "leased":
			until := make([]time.Time, len(ev.Until))
			for i, u := range ev.Until {
				until[i] = fromNanos(u)
			}
			recs := queue.leased(ev.P, fromNanos(ev.S), t, ev.Fids, until, files.known)
			for i, rec := range recs {
				leases[holdKey{ev.P, ev.H + int64(i)}] = rec
			}
		case "letgo":
			if rec := leases[holdKey{ev.P, ev.H}]; rec != nil {
				queue.letGo(rec, t)
			}
		case "finished":
			queue.finished(ev.Fid, ev.E, t)
		}
		// Created fids go in as they come, so that later events find
		// them; the floor is judged below, by call and return times.
		if ev.K == "created" {
			files.created(ev.Fid, ev.P, 0, t)
		}
	}
	// What a SIGKILL cut off has an unknown outcome.
	for fid := range commitPending {
		files.update(fid, func(rec *fidRec) {
			if rec.commit == -1 || rec.commit == notApplied {
				rec.commit = maybe
			}
		})
	}
	for fid := range abandonPending {
		files.update(fid, func(rec *fidRec) {
			if rec.abandon == -1 {
				rec.abandon = maybe
			}
		})
	}
	files.ambiguousCreates += cstarts - ops.total("create_temp")
	files.dups = append(files.dups, fidFloors(created)...)
	rep.Ops, rep.Samples = ops.ops, ops.samples
	// Operations a SIGKILL cut off (or that never returned): their outcome
	// is unknown, and the checks above took them so.
	rep.InFlight = cstarts - ops.total("create_temp") + int64(len(commitPending)+len(abandonPending)+len(requeues))
	for _, w := range allWrites {
		if w.ret.IsZero() {
			rep.InFlight++
		}
	}

	// A session lock dies with its server: a holding that spans a crash of
	// a session-lock server ends at the crash, whatever its holder (cut off
	// by a partition, say) believes. A lease survives in the data; the
	// restart epoch is what keeps the next grant out, and is judged.
	if r.caps.LockMechanism == "session" && r.srv != nil {
		for _, hd := range hl.all {
			if at, ok := r.srv.crashDuring(hd.from, hd.to); ok {
				hd.to, hd.end = at, endCrashed
			}
		}
	}

	// Locks: exclusion by time and by token order, judged by package check.
	bound, doc := lostBound(r.driver)
	slack := bound + cfg.LostSlack
	ls := LockStats{Holds: len(hl.all), Bound: slack, BoundDoc: doc, EndedBy: map[string]int64{}}
	chk := make([]check.Hold, 0, len(hl.all))
	byCall := make([]check.Hold, 0, len(hl.all))
	for _, hd := range hl.all {
		ls.EndedBy[hd.end]++
		c := hd.check()
		// For token order a grant is placed at its Lock call: it was made
		// somewhere between the call and the stamp, which a loaded machine
		// can put late; an earlier holding that ended before the call
		// surely came first.
		bc := c
		if !hd.call.IsZero() {
			bc.From = hd.call
		}
		byCall = append(byCall, bc)
		// Only a Lost is stamped after the fact (by a goroutine woken by
		// the channel); Release, SIGKILL and SIGSTOP are stamped at the
		// instant, and get no slack.
		if c.End == check.Lost {
			c.To = c.To.Add(-slack)
			if c.To.Before(c.From) {
				c.To = c.From
			}
		}
		chk = append(chk, c)
	}
	rep.Locks = ls
	rep.check("locks: no timeout before the time asked", early, fmt.Sprintf("%d lock calls", ops.total("lock")))
	rep.check("locks: no two holders at once (by time)", violations(check.Exclusion(chk, 0)), fmt.Sprintf("%d holdings, ended by %s (%d more granted during a pause, not placed in time); a Lost stamp may come %v after the next grant (%s)",
		ls.Holds, fmtCounts(ls.EndedBy), hl.unplaced, slack, doc))
	rep.check("locks: later grants carry larger fencing tokens", violations(check.TokenOrder(byCall)), fmt.Sprintf("%d holdings", ls.Holds))

	// Dead owners freed within the bound.
	grants := map[string][]*holding{}
	for _, hd := range hl.all {
		grants[hd.name] = append(grants[hd.name], hd)
	}
	for _, hs := range grants {
		sort.SliceStable(hs, func(i, j int) bool { return hs[i].from.Before(hs[j].from) })
	}
	if r.caps.CrossProcess {
		recBound := r.caps.DeadOwnerBound + cfg.RecoverySlack
		var slow []string
		unjudged := 0
		for _, pr := range probes {
			killed := fromNanos(pr.S)
			if r.srv.wasDown(killed, killed.Add(recBound)) || r.electionDuring(killed, killed.Add(recBound)) {
				// A crashed or failing-over server frees nothing on time:
				// its own bound (the restart epoch) is judged by exclusion.
				unjudged++
				continue
			}
			// The first grant after the kill, by anyone: the probe's own or
			// a worker's that came first.
			var first time.Time
			if pr.T != 0 {
				first = fromNanos(pr.T)
			}
			for _, g := range grants[pr.N] {
				if g.from.After(killed) {
					if first.IsZero() || g.from.Before(first) {
						first = g.from
					}
					break
				}
			}
			if first.IsZero() {
				slow = append(slow, fmt.Sprintf("%q, held by a process killed at %s, not granted again within %v (probe: %s)", pr.N, stamp(killed), recBound, pr.E))
				continue
			}
			d := first.Sub(killed)
			rep.Recoveries++
			rep.MaxLockRecovery = max(rep.MaxLockRecovery, d)
			if d > recBound {
				slow = append(slow, fmt.Sprintf("%q, held by a process killed at %s, granted again only %v later", pr.N, stamp(killed), d.Round(time.Millisecond)))
			}
		}
		rep.check("locks: a killed holder's lock freed within DeadOwnerBound", slow, fmt.Sprintf("%d probes after %d kills (%d during a database crash or an etcd election, not judged); worst %v; bound %v + %v slack",
			len(probes), hl.kills, unjudged, rep.MaxLockRecovery.Round(time.Millisecond), r.caps.DeadOwnerBound, cfg.RecoverySlack))
	}

	// A duplicate identity refused: a worker process opening what a live
	// one opens (its lock_owner on PostgreSQL, its file on SQLite). A
	// process paused, partitioned or killed during the attempt renews
	// nothing, and may rightly be taken over; so may one whose renewals
	// a dead pooler cut off.
	if len(dups) > 0 || r.driver == "postgres" || r.driver == "sqlite" {
		var accepted []string
		refused, unjudged := 0, 0
		for _, ev := range dups {
			from, to := fromNanos(ev.S), fromNanos(ev.T)
			switch {
			case ev.Msg == "":
				refused++
			case ev.Msg != "accepted":
				unjudged++ // failed otherwise (the database down)
			case overlapsPause(hl.pauses[ev.P], from, to) || r.srv.wasDown(from.Add(-3*time.Second), to) || r.srv.poolerWasDown(from.Add(-3*time.Second), to):
				unjudged++
			default:
				accepted = append(accepted, fmt.Sprintf("a Store opened with the lock_owner of live process %s at %s was accepted", ev.P, stamp(from)))
			}
		}
		rep.check("locks: a duplicate owner identity refused", accepted, fmt.Sprintf("%d attempts by duplicate worker processes: %d refused (ErrDuplicate; SQLite ErrInUse), %d not judged (the owner paused, the database or the pooler down)", len(dups), refused, unjudged))
	}

	// Guarded counters.
	final := map[int]int64{}
	for i := 0; i < cfg.Counters; i++ {
		s, err := st.ServerSetting(ctx, counterKey(i))
		if err != nil {
			return fmt.Errorf("torture: read counter %d: %w", i, err)
		}
		n, err := parseCounter(s)
		if err != nil {
			badSeen = append(badSeen, fmt.Sprintf("counter %d holds %q, not an integer", i, s))
			continue
		}
		final[i] = n
	}
	cs, cops, stale := counterHistory(allWrites, grants)
	cs.LostBefore = lostPre
	for _, f := range final {
		cs.Final += f
	}
	rep.Counters = cs
	finals := map[string]int64{}
	for i, f := range final {
		finals[counterKey(i)] = f
	}
	rep.check("counters: guarded counters exact", append(badSeen, violations(check.Counters(cops, finals))...), fmt.Sprintf("final %d = %d acknowledged + up to %d unknown (porcupine); %d refused, %d not attempted (lock lost before the write)",
		cs.Final, cs.Acked, cs.Unknown, cs.Refused, cs.LostBefore))
	rep.check("counters: fenced writes never stale", stale, fmt.Sprintf("%d acknowledged writes", cs.Acked))

	// Deadlines: an operation returns by its deadline, unless its process
	// was paused meanwhile; time its process's runtime did not run at all
	// (a starved or stalled process, seen by its stall watch) is taken off
	// its lateness: no code could have returned then.
	var judged []check.Op
	discounted, worstStall := 0, time.Duration(0)
	for _, ps := range stalls {
		for _, p := range ps {
			worstStall = max(worstStall, p.to.Sub(p.from))
		}
	}
	for _, ev := range deadlineOps {
		start, ret := fromNanos(ev.S), fromNanos(ev.T)
		paused := false
		for _, p := range hl.pauses[procPrefix(ev.P)] {
			if p.from.Before(ret) && p.to.After(start) {
				paused = true
			}
		}
		if _, still := hl.stoppedAt[procPrefix(ev.P)]; still {
			paused = true
		}
		if !paused {
			// A call made after its deadline (one of several under one
			// operation's context) must return at once.
			dl := fromNanos(ev.D)
			if dl.Before(start) {
				dl = start
			}
			end := ret
			if st := overlap(stalls[procPrefix(ev.P)], start, ret); st > 0 && ret.After(dl) {
				end = ret.Add(-st)
				discounted++
			}
			judged = append(judged, check.Op{Proc: ev.P, Name: ev.Op, Start: start, End: end, Deadline: dl})
		}
	}
	h.judgeFailover(rep)
	rep.check("deadlines: no operation past its deadline", violations(check.Deadlines(judged, cfg.DeadlineSlack)), fmt.Sprintf("%d operations with a deadline of %v (%d in a paused process not judged; %d late ones judged without their process's stalls, the worst stall %v), slack %v",
		len(judged), cfg.OpTimeout, len(deadlineOps)-len(judged), discounted, worstStall.Round(time.Millisecond), cfg.DeadlineSlack))

	// Files and queue.
	if err := files.judge(ctx, st, rep); err != nil {
		return fmt.Errorf("torture: check files: %w", err)
	}
	queue.judge(remaining, rep)

	if r.bad > 0 {
		rep.finding("history lines cut off", fmt.Sprintf("%d lines could not be decoded (a SIGKILL during a write)", r.bad))
	}
	h.judgeOpens(rep, opens, hl)
	if len(rep.WorkerErrors) > 0 {
		rep.check("workers: every tracker process ran to the end", rep.WorkerErrors, "")
	}
	return nil
}

// judgeOpens checks that every tracker process opened each of its Stores
// within OpenBound of its first attempt, not counting the time the
// database or the pooler was down (the harness's own doing: no Store can
// open then) or the process paused. An opening cut off by its process's
// SIGKILL or by the end of the run is judged up to that moment.
func (h *history) judgeOpens(rep *Report, evs []event, hl *holdLog) {
	r := h.r
	var infra []check.Span
	for _, w := range r.srv.downWindows() {
		infra = append(infra, check.Span{From: w.from, To: w.to})
	}
	byStore := map[string]*check.StoreOpen{}
	var order []*check.StoreOpen
	for _, ev := range evs {
		o := byStore[ev.P]
		if ev.K == "openstart" {
			o = &check.StoreOpen{Store: ev.P, Start: fromNanos(ev.S)}
			byStore[ev.P] = o
			order = append(order, o)
			continue
		}
		if o == nil {
			continue
		}
		o.End = fromNanos(ev.T)
		o.Opened = ev.K == "opened"
		if ev.K == "openfail" {
			o.LastErr = ev.Msg
		}
	}
	opened, cut := 0, 0
	var worst time.Duration
	list := make([]check.StoreOpen, 0, len(order))
	for _, o := range order {
		pfx := procPrefix(o.Store)
		if o.End.IsZero() {
			if at, ok := hl.killedAt[pfx]; ok {
				o.End = at
			}
		}
		o.Excused = append([]check.Span(nil), infra...)
		for _, p := range hl.pauses[pfx] {
			o.Excused = append(o.Excused, check.Span{From: p.from, To: p.to})
		}
		if from, ok := hl.stoppedAt[pfx]; ok && !o.End.IsZero() {
			// Still paused when the run stopped it (no SIGCONT stamped).
			o.Excused = append(o.Excused, check.Span{From: from, To: o.End})
		}
		if o.Opened {
			opened++
			worst = max(worst, o.End.Sub(o.Start))
		} else {
			cut++
		}
		list = append(list, *o)
	}
	rep.check("workers: every tracker process opened its Stores within OpenBound", violations(check.Opens(list, OpenBound)),
		fmt.Sprintf("%d Stores opened, the slowest in %v; %d cut off by a SIGKILL or the end of the run; bound %v, not counting the time the database or the pooler was down (pooler restarts: %d) or the process paused",
			opened, worst.Round(time.Millisecond), cut, OpenBound, rep.PoolerRestarts))
}

type pause struct{ from, to time.Time }

// overlap is how much of [from, to] the pauses cover.
func overlap(ps []pause, from, to time.Time) time.Duration {
	var d time.Duration
	for _, p := range ps {
		if a, b := maxTime(p.from, from), minTime(p.to, to); b.After(a) {
			d += b.Sub(a)
		}
	}
	return d
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// overlapsPause reports whether a pause overlapped [from, to].
func overlapsPause(ps []pause, from, to time.Time) bool {
	for _, p := range ps {
		if p.from.Before(to) && p.to.After(from) {
			return true
		}
	}
	return false
}

// pausedDuring reports the start of a pause that began within [from, to].
func pausedDuring(ps []pause, from, to time.Time) (time.Time, bool) {
	for _, p := range ps {
		if !p.from.Before(from) && !p.from.After(to) {
			return p.from, true
		}
	}
	return time.Time{}, false
}

// fidFloors checks that each CreateTempFile returned a fid above every fid
// returned before the call started, by any process.
func fidFloors(created []event) []string {
	byRet := append([]event(nil), created...)
	sort.Slice(byRet, func(i, j int) bool { return byRet[i].T < byRet[j].T })
	prefixMax := make([]int64, len(byRet))
	var m int64
	for i, ev := range byRet {
		m = max(m, ev.Fid)
		prefixMax[i] = m
	}
	var bad []string
	for _, ev := range created {
		// Fids returned strictly before this call started.
		n := sort.Search(len(byRet), func(i int) bool { return byRet[i].T >= ev.S })
		if n > 0 && ev.Fid <= prefixMax[n-1] {
			bad = append(bad, fmt.Sprintf("fid %d returned to %s, not above fid %d returned before its call", ev.Fid, ev.P, prefixMax[n-1]))
		}
	}
	return bad
}

// lostBound is how late a backend's package documentation allows Lost to
// fire after the server freed the lock; 0 holds a backend to design §4
// promise 8 exactly.
func lostBound(driver string) (time.Duration, string) {
	switch driver {
	case "mysql", "mariadb":
		return 200 * time.Millisecond, "store/mysql: a grant after a session that ended underneath its holder waits until that holder's Lost must have fired; the stamp of a Lost seen at the socket may trail a grant by a ping period (200ms)"
	}
	return 0, "design §4 promise 8: Lost fires before another holder can get the lock"
}

// violations renders package check's verdicts as problem lines.
func violations(vs []check.Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

// judgeFailover checks, after each failover, that every worker slot got
// acknowledged work done on the promoted primary before the next failover:
// the Stores are to find it through their multi-host DSN by themselves,
// and every acknowledged commit being there says nothing if none came
// after the failover. A failover followed by less than failoverWork of
// load (the run's end, or the next failover) is not judged: a slot may
// spend that long paused or restarting after a kill.
func (h *history) judgeFailover(rep *Report) {
	r := h.r
	fos := r.srv.failoverWindows()
	if len(fos) == 0 {
		return
	}
	const failoverWork = 5 * time.Second
	var end int64
	for _, ev := range h.events {
		if ev.K == "op" {
			end = max(end, ev.T)
		}
	}
	var problems []string
	total, judged := 0, 0
	for i, w := range fos {
		until := end
		if i+1 < len(fos) {
			until = nanos(fos[i+1].from)
		}
		if time.Duration(until-nanos(w.to)) < failoverWork {
			continue
		}
		judged++
		after := map[int]int{}
		for _, ev := range h.events {
			var slot int
			if ev.K != "op" || ev.E != "ok" || ev.S <= nanos(w.to) || ev.S >= until {
				continue
			}
			if _, err := fmt.Sscanf(ev.P, "p%d.", &slot); err == nil {
				after[slot]++
				total++
			}
		}
		for slot := 0; slot < r.cfg.Procs; slot++ {
			if after[slot] == 0 {
				problems = append(problems, fmt.Sprintf("slot %d: no acknowledged operation between the failover that ended at %s and the next", slot, w.to.Format("15:04:05.000")))
			}
		}
	}
	rep.check("failover: every slot works on each promoted primary", problems,
		fmt.Sprintf("%d failovers, %d followed by %v of load judged: %d acknowledged operations on their new primaries", len(fos), judged, failoverWork, total))
}
