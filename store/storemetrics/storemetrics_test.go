package storemetrics_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
	"github.com/gomogile/gomogile/store/storemetrics"
)

func open(t *testing.T) (*store.Store, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := storemetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.Context(), "sqlite:///"+filepath.Join(t.TempDir(), "db"), store.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := m.Watch(st); err != nil {
		t.Fatal(err)
	}
	return st, reg
}

// value is the one sample of name whose labels are all in want.
func value(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue metric
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

func TestMetrics_Locks(t *testing.T) {
	st, reg := open(t)
	ctx := t.Context()
	l, err := st.Lock(ctx, "mgfs:fid:42:replicate", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := value(t, reg, "gomogile_locks_held", nil); got != 1 {
		t.Errorf("locks held = %v; want 1", got)
	}
	// Not reentrant: a second Lock of the name times out, and is counted.
	if _, err := st.Lock(ctx, "mgfs:fid:42:replicate", 0); !errors.Is(err, store.ErrLockTimeout) {
		t.Fatalf("second Lock: got %v; want ErrLockTimeout", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil { // idempotent: one hold recorded
		t.Fatal(err)
	}
	l2, err := st.Lock(ctx, "mgfs:fid:7:replicate", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lbl := map[string]string{"lock": "mgfs:fid:N:replicate"}
	for name, want := range map[string]float64{
		"gomogile_lock_acquisitions_total": 2, "gomogile_lock_wait_seconds": 2,
		"gomogile_lock_hold_seconds": 2, "gomogile_lock_timeouts_total": 1,
	} {
		if got := value(t, reg, name, lbl); got != want {
			t.Errorf("%s = %v; want %v", name, got, want)
		}
	}
	if got := value(t, reg, "gomogile_locks_held", nil); got != 0 {
		t.Errorf("locks held after release = %v; want 0", got)
	}
	if got := value(t, reg, "gomogile_store_errors_total", map[string]string{"op": "Lock", "error": "lock_timeout"}); got != 1 {
		t.Errorf("lock_timeout errors = %v; want 1", got)
	}
}

func TestMetrics_QueuesAndErrors(t *testing.T) {
	st, reg := open(t)
	ctx := t.Context()
	if err := st.Enqueue(ctx, store.QueueDelete, store.QueueEntry{Fid: 1}, store.QueueEntry{Fid: 2}); err != nil {
		t.Fatal(err)
	}
	items, err := st.Lease(ctx, store.QueueDelete, 10, 60e9)
	if err != nil || len(items) != 2 {
		t.Fatalf("Lease: %v, %v", items, err)
	}
	if err := st.Finish(ctx, store.QueueDelete, 1); err != nil {
		t.Fatal(err)
	}
	if err := st.Reschedule(ctx, store.QueueDelete, 2, 0, true); err != nil {
		t.Fatal(err)
	}
	if _, err := st.File(ctx, 99); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("File(99): got %v; want ErrNotFound", err)
	}
	q := map[string]string{"queue": "delete"}
	for name, want := range map[string]float64{
		"gomogile_queue_enqueued_total": 2, "gomogile_queue_leased_total": 2,
		"gomogile_queue_finished_total": 1, "gomogile_queue_retried_total": 1,
	} {
		if got := value(t, reg, name, q); got != want {
			t.Errorf("%s{queue=delete} = %v; want %v", name, got, want)
		}
	}
	if got := value(t, reg, "gomogile_store_errors_total", map[string]string{"op": "File", "error": "not_found"}); got != 1 {
		t.Errorf("not_found errors of File = %v; want 1", got)
	}
	if got := value(t, reg, "gomogile_store_call_seconds", map[string]string{"op": "Lease"}); got != 1 {
		t.Errorf("Lease calls timed = %v; want 1", got)
	}
}

// Every queued row is counted as enqueued, not only those given to Enqueue:
// CommitFile queues a replicate row (and a delete row for a fid it
// replaces), DeleteFile a delete row. Counting Enqueue alone made
// enqueued - finished go negative on every upload.
func TestMetrics_EnqueuedCountsRowsQueuedByOtherCalls(t *testing.T) {
	st, reg := open(t)
	ctx := t.Context()
	d, err := st.CreateDomain(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	commit := func(key string) store.CommitResult {
		t.Helper()
		fid, err := st.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key, DevIDs: []int{1}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := st.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: key, Length: 1, DevIDs: []int{1}, Replicate: true})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	commit("a")
	second := commit("a") // replaces the first fid, queued for deletion
	if second.ReplacedFid == 0 {
		t.Fatal("second commit of key a replaced nothing")
	}
	if err := st.DeleteFile(ctx, second.File.Fid); err != nil {
		t.Fatal(err)
	}
	for _, q := range []store.Queue{store.QueueReplicate, store.QueueDelete} {
		n, err := st.QueueLength(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got := value(t, reg, "gomogile_queue_enqueued_total", map[string]string{"queue": q.String()}); got != float64(n) {
			t.Errorf("gomogile_queue_enqueued_total{queue=%s} = %v; want %d, the rows queued", q, got, n)
		}
	}
}

// A second New into the same registry is refused.
func TestMetrics_RegistryTaken(t *testing.T) {
	_, reg := open(t)
	if _, err := storemetrics.New(reg); err == nil {
		t.Fatal("second New into one registry: got nil error")
	}
}

func TestMetrics_SQLiteHasNoBackendLockStats(t *testing.T) {
	_, reg := open(t)
	for _, name := range []string{"gomogile_lock_reaped_total", "gomogile_lock_wakeups_total", "gomogile_lock_owner_incarnation", "gomogile_lock_sessions_pinned"} {
		if n, _ := testutil.GatherAndCount(reg, name); n != 0 {
			t.Errorf("%s exported for the in-process mechanism", name)
		}
	}
}

func TestHeld_Lists(t *testing.T) {
	st, _ := open(t)
	held := func() []store.HeldLock {
		h, ok := store.Held(st)
		if !ok {
			t.Fatal("store.Held: the Store Open returned keeps no table")
		}
		return h
	}
	ctx := t.Context()
	if h := held(); len(h) != 0 {
		t.Fatalf("Held() before any Lock = %v; want none", h)
	}
	a, err := st.Lock(ctx, "mgfs:fid:1", 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Lock(ctx, "mgfs:fid:2:replicate", 0)
	if err != nil {
		t.Fatal(err)
	}
	h := held()
	if len(h) != 2 || h[0].Name != "mgfs:fid:1" || h[1].Name != "mgfs:fid:2:replicate" {
		t.Fatalf("Held() = %+v; want mgfs:fid:1 then mgfs:fid:2:replicate", h)
	}
	if h[0].Token != a.Token() || h[1].Token != b.Token() || h[0].Since.IsZero() || h[0].Lost {
		t.Errorf("Held() = %+v; want the grants' tokens (%d, %d), grant times, not lost", h, a.Token(), b.Token())
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if h := held(); len(h) != 1 || h[0].Name != "mgfs:fid:2:replicate" {
		t.Errorf("Held() after releasing mgfs:fid:1 = %+v; want only mgfs:fid:2:replicate", h)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if h := held(); len(h) != 0 {
		t.Errorf("Held() after both releases = %+v; want none", h)
	}
}
