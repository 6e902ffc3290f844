package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gomogile/gomogile/store"
)

// worker is one goroutine of a simulated tracker in a worker process,
// doing what a tracker's request handlers and jobs do to the metadata, at
// random, and telling the coordinator everything it did.
type worker struct {
	p    *proc
	st   *store.Store
	name string // the Store's incarnation: "p<slot>.<gen>s<j>"
	rng  *rand.Rand
}

// The operations and their weights.
var operations = []struct {
	weight int
	fn     func(w *worker, ctx context.Context) error
}{
	{30, (*worker).increment},
	{20, (*worker).upload},
	{12, (*worker).placeLocked},
	{8, (*worker).placeUnlocked},
	{4, (*worker).rename},
	{4, (*worker).delete},
	{14, (*worker).replicate},
	{4, (*worker).enqueue},
}

func (w *worker) loop(ctx context.Context) {
	total := 0
	for _, o := range operations {
		total += o.weight
	}
	for ctx.Err() == nil {
		n := w.rng.IntN(total)
		i := 0
		for n >= operations[i].weight {
			n -= operations[i].weight
			i++
		}
		// The run ending (SIGTERM) lets the operation under way finish:
		// an operation cut off by our own shutdown would look like a fault.
		opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.p.cfg.OpTimeout)
		err := operations[i].fn(w, opCtx)
		cancel()
		if err != nil && ctx.Err() == nil {
			// A broken database must not become a busy loop.
			sleepCtx(ctx, time.Duration(1+w.rng.IntN(10))*time.Millisecond)
		}
	}
}

func (w *worker) emit(ev event) {
	ev.P = w.name
	w.p.em.emit(ev)
}

// op records one Store call that returned just now: when it was called and
// returned, its deadline and the kind of its outcome. It returns err
// unchanged.
func (w *worker) op(ctx context.Context, name string, start time.Time, err error) error {
	return w.opAt(ctx, name, start, time.Now(), err)
}

// opAt is op for a call that returned at end: where other events are
// emitted between the return and the record, a write to a full pipe (a
// coordinator slow to read) must not count as the call's own time.
func (w *worker) opAt(ctx context.Context, name string, start, end time.Time, err error) error {
	ev := event{K: "op", Op: name, S: nanos(start), T: nanos(end), E: kindOf(err)}
	if dl, ok := ctx.Deadline(); ok {
		ev.D = nanos(dl)
	}
	if ev.E == "other" {
		ev.Msg = err.Error()
		if len(ev.Msg) > 300 {
			ev.Msg = ev.Msg[:300]
		}
	}
	w.emit(ev)
	return err
}

// hold is a lock held by a worker: Lock returned it and it has not ended.
type hold struct {
	id    int64
	name  string
	lock  store.Lock
	token int64
	done  chan struct{}
	ended atomic.Bool
}

// endAs records the end of the holding once, at t.
func (w *worker) endAs(h *hold, t time.Time, cause string) {
	if h.ended.CompareAndSwap(false, true) {
		w.emit(event{K: "end", H: h.id, N: h.name, Msg: cause, T: nanos(t)})
	}
}

// lock takes name and registers the holding; a watcher records the moment
// Lost closes.
func (w *worker) lock(ctx context.Context, name string) (*hold, error) {
	// Mostly a patient wait, sometimes a try-once or a short wait, so
	// that timeouts happen and can be timed.
	timeout := w.p.cfg.LockTimeout
	switch w.rng.IntN(10) {
	case 0:
		timeout = 0
	case 1:
		timeout = 5 * time.Millisecond
	}
	start := time.Now()
	l, err := w.st.Lock(ctx, name, timeout)
	got := time.Now()
	w.op(ctx, "lock", start, err)
	if errors.Is(err, store.ErrLockTimeout) {
		// Promise 2: a timeout never comes before the time asked.
		if waited := got.Sub(start); waited < timeout {
			w.emit(event{K: "early", N: name, Msg: fmt.Sprintf("%s: Lock(%q, %v) timed out after %v", w.name, name, timeout, waited)})
		}
	}
	if err != nil {
		return nil, err
	}
	h := &hold{id: w.p.holds.Add(1), name: name, lock: l, token: tokenOf(l), done: make(chan struct{})}
	w.emit(event{K: "grant", N: name, H: h.id, Tok: h.token, S: nanos(start), T: nanos(got)})
	w.p.wg.Add(1)
	go func() {
		defer w.p.wg.Done()
		select {
		case <-l.Lost():
			w.endAs(h, time.Now(), "lost")
		case <-h.done:
		}
	}()
	return h, nil
}

// lost reports whether the holding's Lost has closed: a tracker checks it
// before writing under a lock.
func (w *worker) lost(h *hold) bool {
	select {
	case <-h.lock.Lost():
		w.endAs(h, time.Now(), "lost")
		return true
	default:
		return h.ended.Load()
	}
}

// release ends the holding at the Release call, then releases; a done ctx
// must not leave it held, so the release gets a context of its own.
func (w *worker) release(ctx context.Context, h *hold) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.p.cfg.OpTimeout)
	defer cancel()
	start := time.Now()
	if !w.lost(h) {
		w.endAs(h, start, "released")
	}
	err := h.lock.Release(rctx)
	close(h.done)
	return w.op(rctx, "release", start, err)
}

// increment is a read-modify-write of a counter under its lock, with Get
// and a fenced Set rather than IncrServerSetting, so only the lock and its
// fence keep it right.
func (w *worker) increment(ctx context.Context) error {
	i := w.rng.IntN(w.p.cfg.Counters)
	h, err := w.lock(ctx, counterLock(i))
	if err != nil {
		return err
	}
	getStart := time.Now()
	v, err := w.st.ServerSetting(ctx, counterKey(i))
	w.op(ctx, "get", getStart, err)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			w.emit(event{K: "bad", Msg: fmt.Sprintf("counter %d vanished (read by %s)", i, w.name)})
		}
		return errors.Join(err, w.release(ctx, h))
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		w.emit(event{K: "bad", Msg: fmt.Sprintf("counter %d read as %q by %s", i, v, w.name)})
		return w.release(ctx, h)
	}
	if w.lost(h) {
		w.emit(event{K: "lostpre", C: i + 1})
		return w.release(ctx, h)
	}
	w.emit(event{K: "guard", C: i + 1, H: h.id})
	// Work a moment between the check and the write, as a tracker
	// computing the new value would: the window in which a pause or a
	// partition leaves a holder writing after its lock went elsewhere,
	// which only the fence can refuse.
	// Now and then a slow one: a holder in the middle of it when its lock
	// is lost is one another may be granted the lock beside.
	think := time.Duration(w.rng.IntN(3)) * time.Millisecond
	if w.rng.IntN(10) == 0 {
		think = time.Duration(10+w.rng.IntN(40)) * time.Millisecond
	}
	sleepCtx(ctx, think)
	setStart := time.Now()
	w.emit(event{K: "set", C: i + 1, H: h.id, N: h.name, Tok: h.token, S: nanos(getStart), T: nanos(setStart), V: n, W: n + 1})
	err = w.st.SetServerSetting(fenced(ctx, h.lock), counterKey(i), strconv.FormatInt(n+1, 10))
	setEnd := time.Now()
	w.emit(event{K: "setdone", C: i + 1, H: h.id, O: outcomeOf(err), V: n, W: n + 1, T: nanos(setEnd)})
	w.opAt(ctx, "set", setStart, setEnd, err)
	return errors.Join(err, w.release(ctx, h))
}

func (w *worker) key() (int, string) {
	return w.p.cfg.Dmids[w.rng.IntN(len(w.p.cfg.Dmids))], fmt.Sprintf("k%03d", w.rng.IntN(w.p.cfg.Keys))
}

func (w *worker) devices() []int {
	devids := w.p.cfg.Devids
	n := 1 + w.rng.IntN(3)
	perm := w.rng.Perm(len(devids))
	out := make([]int, n)
	for i := range out {
		out[i] = devids[perm[i]]
	}
	return out
}

// upload reserves a fid and commits it (few keys, so commits replace one
// another), or sometimes abandons the tempfile. An unknown outcome is
// retried once, as a tracker would: the contract makes the retry safe.
func (w *worker) upload(ctx context.Context) error {
	dmid, key := w.key()
	devs := w.devices()
	w.emit(event{K: "cstart"})
	start := time.Now()
	fid, err := w.st.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: key, DevIDs: devs})
	end := time.Now()
	if err != nil {
		w.opAt(ctx, "create_temp", start, end, err)
		if outcomeOf(err) == maybe {
			w.emit(event{K: "ambcreate"})
		}
		return err
	}
	// The fid is told before the call's record: a SIGKILL between the two
	// then leaves a create counted as cut off (a cstart without its op),
	// where the other order left a tempfile row whose fid no event names
	// beside a create that looked finished — an orphan the check blamed
	// on the store.
	w.emit(event{K: "created", Fid: fid, S: nanos(start), T: nanos(end)})
	w.opAt(ctx, "create_temp", start, end, nil)
	if w.rng.IntN(10) == 0 {
		w.emit(event{K: "abandonstart", Fid: fid})
		start := time.Now()
		err := w.st.DeleteTempFile(ctx, fid)
		end := time.Now()
		w.emit(event{K: "abandon", Fid: fid, O: outcomeOf(err), T: nanos(end)})
		return w.opAt(ctx, "delete_temp", start, end, err)
	}
	c := store.Commit{Fid: fid, DomainID: dmid, Key: key, Length: int64(w.rng.IntN(1 << 20)), DevIDs: devs, Replicate: w.rng.IntN(2) == 0}
	var rq int64
	if c.Replicate {
		rq = w.requeueStart(fid, "commit")
	}
	start = time.Now()
	w.emit(event{K: "commit", Fid: fid, S: nanos(start)})
	res, err := w.st.CommitFile(ctx, c)
	w.op(ctx, "commit", start, err)
	out := outcomeOf(err)
	if out == maybe {
		rstart := time.Now()
		res, err = w.st.CommitFile(ctx, c)
		w.op(ctx, "commit_retry", rstart, err)
		if err == nil {
			out = applied
		}
	}
	if c.Replicate {
		w.requeueDone(rq, err)
	}
	w.emit(event{K: "commitdone", Fid: fid, O: out, Fid2: res.ReplacedFid})
	if out == applied {
		w.p.addPool(fid)
		if res.ReplacedFid != 0 {
			w.p.unpool(res.ReplacedFid)
		}
	}
	if c.Replicate {
		w.emit(event{K: "enq", Fid: fid, S: nanos(start), O: out})
	}
	return err
}

// placeLocked adds or removes a copy under the fid's devcount lock, as the
// replicate and delete workers do, sometimes holding the replicate lock
// too (promise 4: many locks at once).
func (w *worker) placeLocked(ctx context.Context) error {
	fid, ok := w.p.pick(w.rng)
	if !ok {
		return w.upload(ctx)
	}
	var outer *hold
	if w.rng.IntN(4) == 0 {
		var err error
		if outer, err = w.lock(ctx, fmt.Sprintf("mgfs:fid:%d:replicate", fid)); err != nil {
			return err
		}
	}
	h, err := w.lock(ctx, fmt.Sprintf("mgfs:fid:%d", fid))
	if err == nil {
		// Work under the lock a moment, as a copy would: holders live
		// long enough for kills and pauses to catch some, and a few as
		// long as a real copy, long enough for a lost lock to be granted
		// to another while this holder still believes it holds it.
		work := time.Duration(w.rng.IntN(4)) * time.Millisecond
		if w.rng.IntN(10) == 0 {
			work = time.Duration(20+w.rng.IntN(80)) * time.Millisecond
		}
		sleepCtx(ctx, work)
		err = w.place(ctx, fid)
		err = errors.Join(err, w.release(ctx, h))
	}
	if outer != nil {
		err = errors.Join(err, w.release(ctx, outer))
	}
	return err
}

// placeUnlocked changes file_on with no lock at all: the store alone must
// keep devcount right.
func (w *worker) placeUnlocked(ctx context.Context) error {
	fid, ok := w.p.pick(w.rng)
	if !ok {
		return w.upload(ctx)
	}
	return w.place(ctx, fid)
}

func (w *worker) place(ctx context.Context, fid int64) error {
	devids := w.p.cfg.Devids
	dev := devids[w.rng.IntN(len(devids))]
	start := time.Now()
	if w.rng.IntN(2) == 0 {
		_, err := w.st.AddFileOn(ctx, fid, dev)
		return w.op(ctx, "add_file_on", start, err)
	}
	_, err := w.st.RemoveFileOn(ctx, fid, dev)
	return w.op(ctx, "remove_file_on", start, err)
}

func (w *worker) rename(ctx context.Context) error {
	dmid, from := w.key()
	_, to := w.key()
	start := time.Now()
	return w.op(ctx, "rename", start, w.st.RenameFile(ctx, dmid, from, to))
}

func (w *worker) delete(ctx context.Context) error {
	fid, ok := w.p.pick(w.rng)
	if !ok {
		return nil
	}
	w.emit(event{K: "delstart", Fid: fid})
	start := time.Now()
	err := w.st.DeleteFile(ctx, fid)
	w.op(ctx, "delete_file", start, err)
	if err == nil {
		w.emit(event{K: "gone", Fid: fid})
		w.p.unpool(fid)
	}
	return err
}

func (w *worker) requeueStart(fid int64, what string) int64 {
	id := w.p.rqs.Add(1)
	w.emit(event{K: "rq", H: id, Fid: fid, Msg: what})
	return id
}

func (w *worker) requeueDone(id int64, err error) {
	w.emit(event{K: "rqdone", H: id, E: kindOf(err)})
}

// enqueue queues a committed fid for replication again (idempotent).
func (w *worker) enqueue(ctx context.Context) error {
	fid, ok := w.p.pick(w.rng)
	if !ok {
		return nil
	}
	rq := w.requeueStart(fid, "enqueue")
	start := time.Now()
	err := w.st.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: fid})
	end := time.Now()
	w.requeueDone(rq, err)
	w.opAt(ctx, "enqueue", start, end, err)
	w.emit(event{K: "enq", Fid: fid, S: nanos(start), O: outcomeOf(err)})
	return err
}

// replicate leases a few replicate-queue rows, "works" a few milliseconds
// on each and finishes it; sometimes it reschedules instead, and rarely it
// stalls past the lease so that another worker takes the row over.
func (w *worker) replicate(ctx context.Context) error {
	call := time.Now()
	items, err := w.st.Lease(ctx, store.QueueReplicate, 1+w.rng.IntN(3), w.p.cfg.QueueLease)
	ret := time.Now()
	w.op(ctx, "lease", call, err)
	if err != nil || len(items) == 0 {
		return err
	}
	first := w.leased(call, ret, items)
	for i, it := range items {
		work := time.Duration(1+w.rng.IntN(5)) * time.Millisecond
		stall := w.rng.IntN(50) == 0
		if stall {
			// Let the lease run out; someone else must get the row.
			work = time.Until(it.NextTry) + 50*time.Millisecond
			if dl, ok := ctx.Deadline(); ok && time.Now().Add(work).After(dl) {
				work = 0
			}
		}
		sleepCtx(ctx, work)
		w.emit(event{K: "letgo", H: first + int64(i), Fid: it.Fid})
		if !stall && w.rng.IntN(8) == 0 {
			err = w.reschedule(ctx, it.Fid)
		} else {
			start := time.Now()
			err = w.st.Finish(ctx, store.QueueReplicate, it.Fid)
			w.op(ctx, "finish", start, err)
			w.emit(event{K: "finished", Fid: it.Fid, E: kindOf(err)})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// leased records rows a Lease returned; the lease ids are consecutive from
// the one returned.
func (w *worker) leased(call, ret time.Time, items []store.QueueItem) int64 {
	ev := event{K: "leased", S: nanos(call), T: nanos(ret)}
	for _, it := range items {
		ev.Fids = append(ev.Fids, it.Fid)
		ev.Until = append(ev.Until, nanos(it.NextTry))
	}
	first := w.p.lids.Add(int64(len(items))) - int64(len(items)) + 1
	ev.H = first
	w.emit(ev)
	return first
}

// reschedule gives a row back as failed, due at once.
func (w *worker) reschedule(ctx context.Context, fid int64) error {
	rq := w.requeueStart(fid, "reschedule")
	start := time.Now()
	err := w.st.Reschedule(ctx, store.QueueReplicate, fid, 0, true)
	end := time.Now()
	w.requeueDone(rq, err)
	return w.opAt(ctx, "reschedule", start, end, err)
}

func counterKey(i int) string  { return "torture_ctr_" + strconv.Itoa(i) }
func counterLock(i int) string { return "torture:ctr:" + strconv.Itoa(i) }

// sleepCtx waits d unless ctx ends first; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
