package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/gomogile/gomogile/store"
)

// worker is one goroutine of a simulated tracker, doing what a tracker's
// request handlers and jobs do to the metadata, at random.
type worker struct {
	r    *run
	slot *slot
	rng  *rand.Rand
	stop <-chan struct{}
}

// The operations and their weights.
var operations = []struct {
	weight int
	fn     func(w *worker, ctx context.Context, tr *tracker) error
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
	for {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		tr := w.slot.current()
		n := w.rng.IntN(total)
		i := 0
		for n >= operations[i].weight {
			n -= operations[i].weight
			i++
		}
		opCtx, cancel := context.WithTimeout(ctx, w.r.cfg.OpTimeout)
		err := operations[i].fn(w, opCtx, tr)
		cancel()
		if errors.Is(err, store.ErrClosed) {
			// Crashed under us: carry on with the next incarnation.
			w.slot.waitReplaced(ctx, tr, w.stop)
		}
	}
}

// lock takes name and registers the holding.
func (w *worker) lock(ctx context.Context, tr *tracker, name string) (*hold, error) {
	// Mostly a patient wait, sometimes a try-once or a short wait, so
	// that timeouts happen and can be timed.
	timeout := w.r.cfg.LockTimeout
	switch w.rng.IntN(10) {
	case 0:
		timeout = 0
	case 1:
		timeout = 5 * time.Millisecond
	}
	start := time.Now()
	l, err := tr.st.Lock(ctx, name, timeout)
	w.r.ops.note("lock", err)
	if errors.Is(err, store.ErrLockTimeout) {
		// Promise 2: a timeout never comes before the time asked.
		if waited := time.Since(start); waited < timeout {
			w.r.locks.earlyTimeout(name, tr, waited)
		}
	}
	if err != nil {
		return nil, err
	}
	return w.r.locks.granted(tr, name, l), nil
}

// release lets go of a holding; a done ctx must not leave it held, so the
// release gets a context of its own.
func (w *worker) release(ctx context.Context, h *hold) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.r.cfg.OpTimeout)
	defer cancel()
	return w.r.ops.note("release", w.r.locks.release(rctx, h))
}

// increment is a read-modify-write of a counter under its lock, with Get
// and Set rather than IncrServerSetting, so only the lock keeps it right.
func (w *worker) increment(ctx context.Context, tr *tracker) error {
	i := w.rng.IntN(w.r.cfg.Counters)
	h, err := w.lock(ctx, tr, counterLock(i))
	if err != nil {
		return err
	}
	in := &incr{ctr: i, h: h, outcome: -1}
	in.getStart = time.Now()
	v, err := tr.st.ServerSetting(ctx, counterKey(i))
	w.r.ops.note("get", err)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			w.r.counters.bad("counter %d vanished (read by %s)", i, tr)
		}
		return errors.Join(err, w.release(ctx, h))
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		w.r.counters.bad("counter %d read as %q by %s", i, v, tr)
		return w.release(ctx, h)
	}
	if w.r.locks.isLost(h) {
		// A tracker checks before writing under a lock it may have lost.
		w.r.counters.mu.Lock()
		w.r.counters.lostPre++
		w.r.counters.mu.Unlock()
		return w.release(ctx, h)
	}
	in.setStart = time.Now()
	err = tr.st.SetServerSetting(ctx, counterKey(i), strconv.FormatInt(n+1, 10))
	in.setEnd = time.Now()
	w.r.ops.note("set", err)
	in.outcome = outcomeOf(err)
	rerr := w.release(ctx, h)
	in.releaseOK = rerr == nil
	if in.outcome != notApplied {
		w.r.counters.add(in)
	}
	return errors.Join(err, rerr)
}

func (w *worker) key() (int, string) {
	return w.r.dmids[w.rng.IntN(len(w.r.dmids))], fmt.Sprintf("k%03d", w.rng.IntN(w.r.cfg.Keys))
}

func (w *worker) devices() []int {
	n := 1 + w.rng.IntN(3)
	perm := w.rng.Perm(len(w.r.devids))
	out := make([]int, n)
	for i := range out {
		out[i] = w.r.devids[perm[i]]
	}
	return out
}

// upload reserves a fid and commits it (few keys, so commits replace one
// another), or sometimes abandons the tempfile. An unknown outcome is
// retried once, as a tracker would: the contract makes the retry safe.
func (w *worker) upload(ctx context.Context, tr *tracker) error {
	dmid, key := w.key()
	devs := w.devices()
	floor := w.r.files.floor()
	fid, err := tr.st.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: key, DevIDs: devs})
	w.r.ops.note("create_temp", err)
	if err != nil {
		if outcomeOf(err) == maybe {
			w.r.files.mu.Lock()
			w.r.files.ambiguousCreates++
			w.r.files.mu.Unlock()
		}
		return err
	}
	w.r.files.created(fid, tr.String(), floor)
	if w.rng.IntN(10) == 0 {
		err := tr.st.DeleteTempFile(ctx, fid)
		w.r.ops.note("delete_temp", err)
		w.r.files.update(fid, func(r *fidRec) { r.abandon = outcomeOf(err) })
		return err
	}
	c := store.Commit{Fid: fid, DomainID: dmid, Key: key, Length: int64(w.rng.IntN(1 << 20)), DevIDs: devs, Replicate: w.rng.IntN(2) == 0}
	start := time.Now()
	requeued := func(error) {}
	if c.Replicate {
		requeued = w.r.queue.requeue(fid, "commit", tr)
	}
	res, err := tr.st.CommitFile(ctx, c)
	w.r.ops.note("commit", err)
	out := outcomeOf(err)
	if out == maybe {
		// A new incarnation may be current by now; the retry goes where
		// the tracker's would, to whatever Store it has.
		if cur := w.slot.current(); cur != nil {
			res, err = cur.st.CommitFile(ctx, c)
			w.r.ops.note("commit_retry", err)
			if err == nil {
				out = applied
			}
		}
	}
	requeued(err)
	w.r.files.committed(fid, out, res)
	if c.Replicate {
		w.r.queue.enqueued(fid, start, out)
	}
	return err
}

// placeLocked adds or removes a copy under the fid's devcount lock, as the
// replicate and delete workers do, sometimes holding the replicate lock
// too (promise 4: many locks at once).
func (w *worker) placeLocked(ctx context.Context, tr *tracker) error {
	fid, ok := w.r.files.pick(w.rng)
	if !ok {
		return w.upload(ctx, tr)
	}
	var outer *hold
	if w.rng.IntN(4) == 0 {
		var err error
		if outer, err = w.lock(ctx, tr, fmt.Sprintf("mgfs:fid:%d:replicate", fid)); err != nil {
			return err
		}
	}
	h, err := w.lock(ctx, tr, fmt.Sprintf("mgfs:fid:%d", fid))
	if err == nil {
		// Work under the lock a moment, as a copy would: holders live
		// long enough for crashes and kills to catch some.
		sleepCtx(ctx, time.Duration(w.rng.IntN(4))*time.Millisecond)
		err = w.place(ctx, tr, fid)
		err = errors.Join(err, w.release(ctx, h))
	}
	if outer != nil {
		err = errors.Join(err, w.release(ctx, outer))
	}
	return err
}

// placeUnlocked changes file_on with no lock at all: the store alone must
// keep devcount right.
func (w *worker) placeUnlocked(ctx context.Context, tr *tracker) error {
	fid, ok := w.r.files.pick(w.rng)
	if !ok {
		return w.upload(ctx, tr)
	}
	return w.place(ctx, tr, fid)
}

func (w *worker) place(ctx context.Context, tr *tracker, fid int64) error {
	dev := w.r.devids[w.rng.IntN(len(w.r.devids))]
	if w.rng.IntN(2) == 0 {
		_, err := tr.st.AddFileOn(ctx, fid, dev)
		return w.r.ops.note("add_file_on", err)
	}
	_, err := tr.st.RemoveFileOn(ctx, fid, dev)
	return w.r.ops.note("remove_file_on", err)
}

func (w *worker) rename(ctx context.Context, tr *tracker) error {
	dmid, from := w.key()
	_, to := w.key()
	return w.r.ops.note("rename", tr.st.RenameFile(ctx, dmid, from, to))
}

func (w *worker) delete(ctx context.Context, tr *tracker) error {
	fid, ok := w.r.files.pick(w.rng)
	if !ok {
		return nil
	}
	err := tr.st.DeleteFile(ctx, fid)
	w.r.ops.note("delete_file", err)
	if err == nil {
		w.r.files.gone(fid)
	}
	return err
}

// enqueue queues a committed fid for replication again (idempotent).
func (w *worker) enqueue(ctx context.Context, tr *tracker) error {
	fid, ok := w.r.files.pick(w.rng)
	if !ok {
		return nil
	}
	start := time.Now()
	requeued := w.r.queue.requeue(fid, "enqueue", tr)
	err := tr.st.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: fid})
	requeued(err)
	w.r.ops.note("enqueue", err)
	w.r.queue.enqueued(fid, start, outcomeOf(err))
	return err
}

// replicate leases a few replicate-queue rows, "works" a few milliseconds
// on each and finishes it; sometimes it reschedules instead, and rarely it
// stalls past the lease so that another worker takes the row over.
func (w *worker) replicate(ctx context.Context, tr *tracker) error {
	call := time.Now()
	items, err := tr.st.Lease(ctx, store.QueueReplicate, 1+w.rng.IntN(3), w.r.cfg.QueueLease)
	w.r.ops.note("lease", err)
	if err != nil || len(items) == 0 {
		return err
	}
	recs := w.r.leased(tr, call, items)
	for i, it := range items {
		work := time.Duration(1+w.rng.IntN(5)) * time.Millisecond
		stall := w.rng.IntN(50) == 0
		if stall {
			// Let the lease run out; someone else must get the row.
			work = time.Until(it.NextTry) + 50*time.Millisecond
		}
		if !sleepCtx(ctx, work) {
			return ctx.Err()
		}
		w.r.queue.letGo(recs[i])
		if !stall && w.rng.IntN(8) == 0 {
			err = w.reschedule(ctx, tr, it.Fid)
		} else {
			err = tr.st.Finish(ctx, store.QueueReplicate, it.Fid)
			w.r.ops.note("finish", err)
			w.r.queue.finished(it.Fid, err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// reschedule gives a row back as failed, due at once.
func (w *worker) reschedule(ctx context.Context, tr *tracker, fid int64) error {
	requeued := w.r.queue.requeue(fid, "reschedule", tr)
	err := tr.st.Reschedule(ctx, store.QueueReplicate, fid, 0, true)
	requeued(err)
	return w.r.ops.note("reschedule", err)
}

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
