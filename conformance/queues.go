package conformance

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

var allQueues = []store.Queue{store.QueueReplicate, store.QueueDelete, store.QueueFsck, store.QueueRebalance}

// entry builds a queue entry with the columns q really has: a device for
// replicate, fsck and rebalance, an argument for fsck and rebalance.
func entry(q store.Queue, fid int64, after time.Duration) store.QueueEntry {
	e := store.QueueEntry{Fid: fid, After: after}
	if q != store.QueueDelete {
		e.DevID = int(fid%7) + 1
	}
	if q == store.QueueFsck || q == store.QueueRebalance {
		e.Arg = fmt.Sprintf("arg-%s-%d", q, fid)
	}
	return e
}

func item(t *testing.T, s *store.Store, q store.Queue, fid int64) store.QueueItem {
	t.Helper()
	it, err := s.QueueItem(t.Context(), q, fid)
	ok(t, err, "QueueItem(%s, %d)", q, fid)
	return it
}

func queueLen(t *testing.T, s *store.Store, q store.Queue) int64 {
	t.Helper()
	n, err := s.QueueLength(t.Context(), q)
	ok(t, err, "QueueLength(%s)", q)
	return n
}

func leaseFids(t *testing.T, s *store.Store, q store.Queue, n int, lease time.Duration) []int64 {
	t.Helper()
	items, err := s.Lease(t.Context(), q, n, lease)
	ok(t, err, "Lease(%s, %d, %v)", q, n, lease)
	var fids []int64
	for _, it := range items {
		if it.Queue != q {
			t.Errorf("Lease(%s) returned a row of queue %s", q, it.Queue)
		}
		fids = append(fids, it.Fid)
	}
	slices.Sort(fids)
	return fids
}

func parked(it store.QueueItem) bool { return it.NextTry.Equal(store.EndOfTime) }

func testQueueLifecycleReplicate(t *testing.T, e *env) { queueLifecycle(t, e, store.QueueReplicate) }
func testQueueLifecycleDelete(t *testing.T, e *env)    { queueLifecycle(t, e, store.QueueDelete) }
func testQueueLifecycleFsck(t *testing.T, e *env)      { queueLifecycle(t, e, store.QueueFsck) }
func testQueueLifecycleRebalance(t *testing.T, e *env) { queueLifecycle(t, e, store.QueueRebalance) }

// queueLifecycle walks one row of q through what its worker does to it.
func queueLifecycle(t *testing.T, e *env, q store.Queue) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	const fid = 1234
	en := entry(q, fid, 0)
	ok(t, a.Enqueue(ctx, q, en), "Enqueue(%s)", q)
	now := dbNow(t, a)
	it := item(t, b, q, fid)
	if it.Queue != q || it.Fid != fid || it.DevID != en.DevID || it.Arg != en.Arg || it.FailCount != 0 {
		t.Errorf("QueueItem = %+v; want queue %s, fid %d, devid %d, arg %q, no failures", it, q, fid, en.DevID, en.Arg)
	}
	if it.NextTry.After(now) {
		t.Errorf("NextTry of a row due now = %v; want at or before %v", it.NextTry, now)
	}
	if n := queueLen(t, a, q); n != 1 {
		t.Errorf("QueueLength(%s) = %d; want 1", q, n)
	}

	if got := leaseFids(t, b, q, 10, time.Hour); !slices.Equal(got, []int64{fid}) {
		t.Fatalf("Lease(%s) = %v; want [%d]", q, got, fid)
	}
	ok(t, b.Reschedule(ctx, q, fid, 0, true), "Reschedule(failed)")
	if it := item(t, a, q, fid); it.FailCount != 1 || parked(it) {
		t.Errorf("after a failed Reschedule: %+v; want failcount 1, not parked", it)
	}
	ok(t, b.Reschedule(ctx, q, fid, time.Hour, false), "Reschedule(1h)")
	it = item(t, a, q, fid)
	if it.FailCount != 1 || it.NextTry.Before(now.Add(50*time.Minute)) || parked(it) {
		t.Errorf("after Reschedule(1h, not failed): %+v; want failcount 1, nexttry about %v", it, now.Add(time.Hour))
	}
	ok(t, b.Reschedule(ctx, q, fid, store.Never, true), "Reschedule(Never)")
	if it := item(t, a, q, fid); !parked(it) || it.FailCount != 2 {
		t.Errorf("after Reschedule(Never, failed): %+v; want NextTry %v and failcount 2", it, store.EndOfTime)
	}
	if got := leaseFids(t, a, q, 10, time.Hour); len(got) != 0 {
		t.Errorf("Lease(%s) with only a parked row = %v; want none", q, got)
	}
	if n := queueLen(t, a, q); n != 1 {
		t.Errorf("QueueLength(%s) with a parked row = %d; want 1", q, n)
	}
	ok(t, a.Finish(ctx, q, fid), "Finish")
	_, err := a.QueueItem(ctx, q, fid)
	isErr(t, err, store.ErrNotFound, "QueueItem after Finish")
	ok(t, b.Finish(ctx, q, fid), "second Finish")
	isErr(t, a.Reschedule(ctx, q, fid, 0, false), store.ErrNotFound, "Reschedule of a finished row")
	if _, err := a.QueueItem(ctx, q, fid); err == nil {
		t.Errorf("refused Reschedule re-created the row")
	}
	if n := queueLen(t, a, q); n != 0 {
		t.Errorf("QueueLength(%s) after Finish = %d; want 0", q, n)
	}
}

func testEnqueueIdempotent(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	for _, q := range allQueues {
		const fid = 77
		first := entry(q, fid, time.Hour)
		ok(t, a.Enqueue(ctx, q, first), "Enqueue(%s, 1h)", q)
		ok(t, a.Reschedule(ctx, q, fid, 2*time.Hour, true), "Reschedule(failed)")
		now := dbNow(t, a)

		// Later: nothing moves, nothing is reset.
		later := store.QueueEntry{Fid: fid, After: 3 * time.Hour}
		if q != store.QueueDelete {
			later.DevID = first.DevID + 1
		}
		if q == store.QueueFsck || q == store.QueueRebalance {
			later.Arg = "other"
		}
		ok(t, b.Enqueue(ctx, q, later), "Enqueue(%s, 3h) again", q)
		it := item(t, a, q, fid)
		if it.FailCount != 1 || it.DevID != first.DevID || it.Arg != first.Arg {
			t.Errorf("%s: after a second Enqueue: %+v; want failcount 1, devid %d, arg %q kept", q, it, first.DevID, first.Arg)
		}
		if it.NextTry.After(now.Add(2*time.Hour+time.Minute)) || it.NextTry.Before(now.Add(2*time.Hour-time.Minute)) {
			t.Errorf("%s: NextTry after a later Enqueue = %v; want unchanged at about %v", q, it.NextTry, now.Add(2*time.Hour))
		}
		// Earlier: nexttry moves, the rest is kept.
		sooner := later
		sooner.After = 0
		ok(t, b.Enqueue(ctx, q, sooner), "Enqueue(%s, now) again", q)
		it = item(t, a, q, fid)
		if it.FailCount != 1 || it.DevID != first.DevID || it.Arg != first.Arg {
			t.Errorf("%s: after an earlier Enqueue: %+v; want failcount 1, devid %d, arg %q kept", q, it, first.DevID, first.Arg)
		}
		if it.NextTry.After(now.Add(time.Minute)) {
			t.Errorf("%s: NextTry after an earlier Enqueue = %v; want moved to about %v", q, it.NextTry, now)
		}
		if n := queueLen(t, a, q); n != 1 {
			t.Errorf("QueueLength(%s) after three Enqueues of one fid = %d; want 1", q, n)
		}
	}
	// Several entries in one call.
	ok(t, a.Enqueue(ctx, store.QueueReplicate, entry(store.QueueReplicate, 1, 0), entry(store.QueueReplicate, 2, 0), entry(store.QueueReplicate, 77, 0)), "Enqueue of three")
	if n := queueLen(t, a, store.QueueReplicate); n != 3 {
		t.Errorf("QueueLength(replicate) = %d; want 3", n)
	}
}

func testEnqueueNever(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	q := store.QueueReplicate
	ok(t, s.Enqueue(ctx, q, entry(q, 5, store.Never), entry(q, 6, time.Hour)), "Enqueue")
	if it := item(t, s, q, 5); !parked(it) {
		t.Errorf("row enqueued with Never: NextTry %v; want %v", it.NextTry, store.EndOfTime)
	}
	n, err := s.Expedite(ctx, q)
	ok(t, err, "Expedite")
	if n != 1 {
		t.Errorf("Expedite() = %d; want 1 (the parked row stays)", n)
	}
	if it := item(t, s, q, 5); !parked(it) {
		t.Errorf("parked row after Expedite: NextTry %v; want still %v", it.NextTry, store.EndOfTime)
	}
	if got := leaseFids(t, s, q, 10, time.Hour); !slices.Equal(got, []int64{6}) {
		t.Errorf("Lease() = %v; want [6], never the parked row", got)
	}
	// Enqueueing again due now is earlier than the end of time.
	ok(t, s.Enqueue(ctx, q, entry(q, 5, 0)), "Enqueue again, due now")
	if got := leaseFids(t, s, q, 10, time.Hour); !slices.Equal(got, []int64{5}) {
		t.Errorf("Lease() after unparking = %v; want [5]", got)
	}
}

func testEnqueueInvalidQueue(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	for _, q := range []store.Queue{0, 5, -1, 99} {
		isErr(t, s.Enqueue(ctx, q, store.QueueEntry{Fid: 9}), store.ErrInvalid, "Enqueue to queue %d", int(q))
	}
	for _, q := range allQueues {
		if _, err := s.QueueItem(ctx, q, 9); err == nil {
			t.Errorf("queue %s has fid 9 after refused Enqueues; want nothing written", q)
		}
		if n := queueLen(t, s, q); n != 0 {
			t.Errorf("QueueLength(%s) after refused Enqueues = %d; want 0", q, n)
		}
	}
}

func testLeaseDueOnly(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	q := store.QueueFsck
	var due []int64
	for fid := int64(1); fid <= 5; fid++ {
		ok(t, a.Enqueue(ctx, q, entry(q, fid, 0)), "Enqueue")
		due = append(due, fid)
	}
	ok(t, a.Enqueue(ctx, q, entry(q, 10, time.Hour), entry(q, 11, store.Never)), "Enqueue")
	now := dbNow(t, a)
	items, err := b.Lease(ctx, q, 100, time.Hour)
	ok(t, err, "Lease")
	var got []int64
	for _, it := range items {
		got = append(got, it.Fid)
		if want := entry(q, it.Fid, 0); it.DevID != want.DevID || it.Arg != want.Arg {
			t.Errorf("leased row %+v; want devid %d, arg %q", it, want.DevID, want.Arg)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, due) {
		t.Fatalf("Lease() = %v; want the due rows %v", got, due)
	}
	for _, fid := range due {
		if it := item(t, a, q, fid); it.NextTry.Before(now.Add(50 * time.Minute)) {
			t.Errorf("leased row %d has NextTry %v; want pushed to about %v", fid, it.NextTry, now.Add(time.Hour))
		}
	}
	if again := leaseFids(t, a, q, 100, time.Hour); len(again) != 0 {
		t.Errorf("second Lease() = %v; want none: the rows are leased", again)
	}
	if n := queueLen(t, a, q); n != 7 {
		t.Errorf("QueueLength = %d; want 7: leasing removes nothing", n)
	}
}

func testLeaseMax(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	q := store.QueueReplicate
	for fid := int64(1); fid <= 5; fid++ {
		ok(t, s.Enqueue(ctx, q, entry(q, fid, 0)), "Enqueue")
	}
	first := leaseFids(t, s, q, 2, time.Hour)
	second := leaseFids(t, s, q, 2, time.Hour)
	third := leaseFids(t, s, q, 2, time.Hour)
	if len(first) != 2 || len(second) != 2 || len(third) != 1 {
		t.Fatalf("Lease(max 2) three times = %v, %v, %v; want 2, 2 and 1 rows", first, second, third)
	}
	all := slices.Concat(first, second, third)
	slices.Sort(all)
	if !slices.Equal(all, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("rows leased = %v; want each of 1..5 once", all)
	}
}

func testLeaseOrder(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	q := store.QueueDelete
	// The older row has the larger fid, so fid order would be wrong.
	ok(t, s.Enqueue(ctx, q, entry(q, 900, 0)), "Enqueue(900)")
	first := item(t, s, q, 900).NextTry
	// nexttry may be kept in whole seconds: wait for the next one.
	if !waitFor(5*time.Second, func() bool { return !dbNow(t, s).Before(first.Add(time.Second)) }) {
		t.Fatalf("database clock did not reach %v within 5s", first.Add(time.Second))
	}
	ok(t, s.Enqueue(ctx, q, entry(q, 100, 0)), "Enqueue(100)")
	if it := item(t, s, q, 100); !it.NextTry.After(first) {
		t.Fatalf("NextTry of the later row %v is not after %v", it.NextTry, first)
	}
	if got := leaseFids(t, s, q, 1, time.Hour); !slices.Equal(got, []int64{900}) {
		t.Errorf("Lease(max 1) = %v; want [900], the oldest nexttry", got)
	}
	if got := leaseFids(t, s, q, 1, time.Hour); !slices.Equal(got, []int64{100}) {
		t.Errorf("second Lease(max 1) = %v; want [100]", got)
	}
}

func testLeaseExpires(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	q := store.QueueRebalance
	ok(t, a.Enqueue(ctx, q, entry(q, 1, 0), entry(q, 2, 0)), "Enqueue")
	// nexttry is kept in whole seconds (schema 17), so a lease of d may
	// end up to a second early; 3s leaves the second Store's look, made at
	// once, well inside it even on a loaded machine.
	if got := leaseFids(t, a, q, 10, 3*time.Second); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("Lease(3s) = %v; want [1 2]", got)
	}
	if got := leaseFids(t, b, q, 10, time.Hour); len(got) != 0 {
		t.Fatalf("Lease() while leased = %v; want none", got)
	}
	var got []int64
	if !waitFor(8*time.Second, func() bool {
		got = slices.Concat(got, leaseFids(t, b, q, 10, time.Hour))
		return len(got) >= 2
	}) {
		t.Fatalf("rows leased for 3s not due again after 8s (got %v)", got)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("Lease() after expiry = %v; want [1 2], each once", got)
	}
}

func testLeaseConcurrent(t *testing.T, e *env) {
	ss := []*store.Store{e.open(t), e.open(t), e.open(t)}
	ctx := t.Context()
	const rows = 120
	// The same fids in all four queues, leased at once: a lease must
	// neither hand a row out twice nor mix fsck and rebalance rows, which
	// share a table.
	for _, q := range allQueues {
		var entries []store.QueueEntry
		for fid := int64(1); fid <= rows; fid++ {
			entries = append(entries, entry(q, fid, 0))
		}
		ok(t, ss[0].Enqueue(ctx, q, entries...), "Enqueue(%s)", q)
	}
	ok(t, ss[0].Enqueue(ctx, store.QueueReplicate, entry(store.QueueReplicate, rows+1, time.Hour)), "Enqueue")

	var mu sync.Mutex
	got := map[store.Queue]map[int64]int{}
	for _, q := range allQueues {
		got[q] = map[int64]int{}
	}
	const perQueue = 3
	errs := parallel(len(allQueues)*perQueue*len(ss), func(w int) error {
		q := allQueues[w%len(allQueues)]
		s := ss[(w/len(allQueues))%len(ss)]
		for {
			items, err := s.Lease(ctx, q, 7, time.Hour)
			if err != nil {
				return err
			}
			if len(items) == 0 {
				return nil
			}
			mu.Lock()
			for _, it := range items {
				if it.Queue != q {
					mu.Unlock()
					return fmt.Errorf("Lease(%s) returned a %s row", q, it.Queue)
				}
				got[q][it.Fid]++
			}
			mu.Unlock()
		}
	})
	noErrs(t, errs, "Lease")
	for _, q := range allQueues {
		for fid := int64(1); fid <= rows; fid++ {
			if n := got[q][fid]; n != 1 {
				t.Errorf("%s: fid %d leased %d times; want exactly once", q, fid, n)
			}
		}
		if n := len(got[q]); n != rows {
			t.Errorf("%s: %d distinct fids leased; want %d (not the future row)", q, n, rows)
		}
	}
}

func testExpedite(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	q := store.QueueReplicate
	ok(t, a.Enqueue(ctx, q, entry(q, 1, time.Hour), entry(q, 2, 2*time.Hour), entry(q, 3, store.Never)), "Enqueue")
	ok(t, a.Enqueue(ctx, store.QueueDelete, entry(store.QueueDelete, 4, time.Hour)), "Enqueue(delete)")
	n, err := b.Expedite(ctx, q)
	ok(t, err, "Expedite")
	if n != 2 {
		t.Errorf("Expedite() = %d; want 2", n)
	}
	if got := leaseFids(t, a, q, 10, time.Hour); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("Lease() after Expedite = %v; want [1 2]", got)
	}
	if !parked(item(t, a, q, 3)) {
		t.Errorf("parked row moved by Expedite; want it parked")
	}
	if got := leaseFids(t, a, store.QueueDelete, 10, time.Hour); len(got) != 0 {
		t.Errorf("Lease(delete) after Expedite(replicate) = %v; want none: another queue", got)
	}
}

func testQueueIsolation(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	const fid = 55
	for _, q := range allQueues {
		ok(t, s.Enqueue(ctx, q, entry(q, fid, 0)), "Enqueue(%s)", q)
	}
	for _, q := range allQueues {
		it := item(t, s, q, fid)
		want := entry(q, fid, 0)
		if it.Queue != q || it.DevID != want.DevID || it.Arg != want.Arg {
			t.Errorf("QueueItem(%s) = %+v; want queue %s, devid %d, arg %q", q, it, q, want.DevID, want.Arg)
		}
	}
	ok(t, s.Reschedule(ctx, store.QueueFsck, fid, store.Never, true), "Reschedule(fsck)")
	if it := item(t, s, store.QueueRebalance, fid); parked(it) || it.FailCount != 0 {
		t.Errorf("rebalance row after rescheduling the fsck row: %+v; want untouched", it)
	}
	ok(t, s.Finish(ctx, store.QueueRebalance, fid), "Finish(rebalance)")
	for _, q := range []store.Queue{store.QueueReplicate, store.QueueDelete, store.QueueFsck} {
		item(t, s, q, fid)
	}
	if got := leaseFids(t, s, store.QueueFsck, 10, time.Hour); len(got) != 0 {
		t.Errorf("Lease(fsck) = %v; want none (its row is parked)", got)
	}
	if got := leaseFids(t, s, store.QueueReplicate, 10, time.Hour); !slices.Equal(got, []int64{fid}) {
		t.Errorf("Lease(replicate) = %v; want [%d]", got, fid)
	}
}

func testQueueLengthAndClear(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	for i, q := range allQueues {
		var es []store.QueueEntry
		for fid := int64(1); fid <= int64(3+i); fid++ {
			es = append(es, entry(q, fid, time.Duration(fid)*time.Minute))
		}
		es = append(es, entry(q, 100, store.Never))
		ok(t, a.Enqueue(ctx, q, es...), "Enqueue(%s)", q)
	}
	for i, q := range allQueues {
		if n := queueLen(t, b, q); n != int64(4+i) {
			t.Errorf("QueueLength(%s) = %d; want %d", q, n, 4+i)
		}
	}
	ok(t, b.ClearQueue(ctx, store.QueueFsck), "ClearQueue(fsck)")
	for i, q := range allQueues {
		want := int64(4 + i)
		if q == store.QueueFsck {
			want = 0
		}
		if n := queueLen(t, a, q); n != want {
			t.Errorf("QueueLength(%s) after ClearQueue(fsck) = %d; want %d", q, n, want)
		}
	}
	ok(t, b.ClearQueue(ctx, store.QueueRebalance), "ClearQueue(rebalance)")
	ok(t, b.ClearQueue(ctx, store.QueueRebalance), "second ClearQueue(rebalance)")
	if n := queueLen(t, a, store.QueueRebalance); n != 0 {
		t.Errorf("QueueLength(rebalance) after ClearQueue = %d; want 0", n)
	}
	if n := queueLen(t, a, store.QueueReplicate); n != 4 {
		t.Errorf("QueueLength(replicate) after clearing others = %d; want 4", n)
	}
}

// testQueueItemsPaging: QueueItems lists one queue's rows (parked ones
// included, never another queue's, even where two share a table) above a
// fid, ascending, with every column, a page at a time.
func testQueueItemsPaging(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	for i, q := range allQueues {
		var es []store.QueueEntry
		for fid := int64(1); fid <= int64(4+i); fid++ {
			es = append(es, entry(q, fid*3+int64(i), time.Duration(fid)*time.Minute))
		}
		es = append(es, entry(q, 1000+int64(i), store.Never))
		ok(t, s.Enqueue(ctx, q, es...), "Enqueue(%s)", q)
	}
	for _, q := range allQueues {
		want, err := s.QueueItems(ctx, q, 0, 1000)
		ok(t, err, "QueueItems(%s)", q)
		if n := queueLen(t, s, q); int64(len(want)) != n {
			t.Fatalf("QueueItems(%s) lists %d rows; QueueLength says %d", q, len(want), n)
		}
		for i, it := range want {
			if one := item(t, s, q, it.Fid); one != it {
				t.Errorf("QueueItems(%s)[%d] = %+v; QueueItem says %+v", q, i, it, one)
			}
			if i > 0 && want[i-1].Fid >= it.Fid {
				t.Errorf("QueueItems(%s) not ascending at %d: %d then %d", q, i, want[i-1].Fid, it.Fid)
			}
		}
		for _, page := range []int{1, 2} {
			var got []store.QueueItem
			after := int64(0)
			for n := 0; n < 100; n++ {
				its, err := s.QueueItems(ctx, q, after, page)
				ok(t, err, "QueueItems(%s, %d, %d)", q, after, page)
				got = append(got, its...)
				if len(its) < page {
					break
				}
				after = its[len(its)-1].Fid
			}
			if !slices.Equal(got, want) {
				t.Errorf("QueueItems(%s) in pages of %d = %v; want %v", q, page, got, want)
			}
		}
	}
	if _, err := s.QueueItems(ctx, store.Queue(99), 0, 10); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("QueueItems(unknown queue): got %v; want ErrInvalid", err)
	}
}
