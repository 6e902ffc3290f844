// Package storemetrics measures a store.Store from the outside: [Wrap]
// returns a Store that behaves exactly like the one it wraps and counts, in
// a Prometheus registry of the caller's, what the tracker asks of it. Every
// backend gets the same metrics this way without a line of backend code; the
// few numbers only a lock mechanism knows come through the optional
// LockStats method (see store.LockStats).
//
// # Metrics
//
//	gomogile_store_call_seconds{op}                 histogram of every Store call
//	gomogile_store_errors_total{op,error}           failed calls by sentinel (see errorLabel)
//	gomogile_lock_acquisitions_total{lock}          locks granted
//	gomogile_lock_wait_seconds{lock}                histogram: time to a grant
//	gomogile_lock_hold_seconds{lock}                histogram: grant to release
//	gomogile_lock_timeouts_total{lock}              Lock calls that failed with ErrLockTimeout
//	gomogile_lock_lost_total{lock}                  Lost() firings of held locks
//	gomogile_locks_held                             locks held now
//	gomogile_lock_reaped_total                      lease mechanism: expired owners' locks freed
//	gomogile_lock_sessions_pinned                   session mechanism: sessions pinned now
//	gomogile_queue_enqueued_total{queue}            rows queued: by Enqueue, CommitFile and DeleteFile
//	gomogile_queue_leased_total{queue}              rows handed out by Lease
//	gomogile_queue_finished_total{queue}            rows finished (replications, deletions… done)
//	gomogile_queue_retried_total{queue}             rows rescheduled after a failure
//
// Queue depths and the cluster's state are the tracker's to report (package
// tracker's status listener): this package only sees calls go by.
//
// The lock label is the lock name with every run of digits replaced by
// "N" ("mgfs:fid:N:replicate"), so per-fid locks make one series.
package storemetrics

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gomogile/gomogile/store"
)

type metrics struct {
	callSeconds  *prometheus.HistogramVec
	errors       *prometheus.CounterVec
	lockAcquired *prometheus.CounterVec
	lockWait     *prometheus.HistogramVec
	lockHold     *prometheus.HistogramVec
	lockTimeouts *prometheus.CounterVec
	lockLost     *prometheus.CounterVec
	locksHeld    prometheus.Gauge
	enqueued     *prometheus.CounterVec
	leased       *prometheus.CounterVec
	finished     *prometheus.CounterVec
	retried      *prometheus.CounterVec
}

func newMetrics() *metrics {
	lockBuckets := []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300}
	return &metrics{
		callSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gomogile_store_call_seconds", Help: "Time of each metadata store call, by operation.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomogile_store_errors_total", Help: "Failed metadata store calls, by operation and store sentinel.",
		}, []string{"op", "error"}),
		lockAcquired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomogile_lock_acquisitions_total", Help: "Named locks granted.",
		}, []string{"lock"}),
		lockWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gomogile_lock_wait_seconds", Help: "Time from a Lock call to its grant.", Buckets: lockBuckets,
		}, []string{"lock"}),
		lockHold: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gomogile_lock_hold_seconds", Help: "Time a named lock was held, grant to release.", Buckets: lockBuckets,
		}, []string{"lock"}),
		lockTimeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomogile_lock_timeouts_total", Help: "Lock calls that timed out.",
		}, []string{"lock"}),
		lockLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomogile_lock_lost_total", Help: "Held locks whose Lost channel fired.",
		}, []string{"lock"}),
		locksHeld: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gomogile_locks_held", Help: "Named locks this tracker holds now.",
		}),
		enqueued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomogile_queue_enqueued_total", Help: "Queue rows added (by Enqueue, and by CommitFile and DeleteFile, which queue rows of their own), by queue.",
		}, []string{"queue"}),
		leased: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomogile_queue_leased_total", Help: "Queue rows leased to this tracker's workers, by queue.",
		}, []string{"queue"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomogile_queue_finished_total", Help: "Queue rows finished by this tracker (replications, deletions, fsck and rebalance checks done), by queue.",
		}, []string{"queue"}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomogile_queue_retried_total", Help: "Queue rows rescheduled after a failure, by queue.",
		}, []string{"queue"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.callSeconds, m.errors, m.lockAcquired, m.lockWait, m.lockHold,
		m.lockTimeouts, m.lockLost, m.locksHeld, m.enqueued, m.leased, m.finished, m.retried}
}

// Wrap returns st measured into reg. The returned Store owns st: its Close
// closes st. It fails only when reg already holds these metrics (one Store
// per registry).
func Wrap(st store.Store, reg prometheus.Registerer) (store.Store, error) {
	s := &Store{inner: st, m: newMetrics(), closed: make(chan struct{}), held: map[*lock]struct{}{}}
	cs := s.m.collectors()
	switch ls, ok := st.(interface{ LockStats() store.LockStats }); {
	case !ok:
	case st.Capabilities().LockMechanism == "lease":
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "gomogile_lock_reaped_total", Help: "Locks of expired lease owners this tracker freed.",
		}, func() float64 { return float64(ls.LockStats().Reaped) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "gomogile_lock_wakeups_total", Help: "Lock waits ended by a notification or this tracker's release rather than a poll.",
			}, func() float64 { return float64(ls.LockStats().Woken) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "gomogile_lock_owner_incarnation", Help: "This tracker's lock owner incarnation (0 while unregistered); a change means every lock was lost.",
			}, func() float64 { return float64(ls.LockStats().Owner) }))
	case st.Capabilities().LockMechanism == "session":
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gomogile_lock_sessions_pinned", Help: "Database sessions pinned to held locks now.",
		}, func() float64 { return float64(ls.LockStats().Pinned) }))
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, r := range cs[:i] {
				reg.Unregister(r)
			}
			return nil, err
		}
	}
	return s, nil
}

// sentinels maps each store sentinel to its error label.
var sentinels = []struct {
	err   error
	label string
}{
	{store.ErrNotFound, "not_found"}, {store.ErrDuplicate, "duplicate"},
	{store.ErrHasFiles, "has_files"}, {store.ErrHasClasses, "has_classes"},
	{store.ErrHasDevices, "has_devices"}, {store.ErrInvalid, "invalid"},
	{store.ErrLockTimeout, "lock_timeout"},
	{store.ErrLockLost, "lock_lost"}, {store.ErrClosed, "closed"},
	{store.ErrSchemaMismatch, "schema_mismatch"}, {store.ErrUnknownOutcome, "unknown_outcome"},
	{store.ErrFenced, "fenced"}, {store.ErrUnavailable, "unavailable"},
	{store.ErrNoSpace, "no_space"},
	{context.DeadlineExceeded, "deadline"}, {context.Canceled, "canceled"},
}

// errorLabel names err by the first store sentinel (or context error) it
// matches with errors.Is; "other" when none does.
func errorLabel(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.label
		}
	}
	return "other"
}

// lockLabel collapses each run of digits of a lock name into "N".
func lockLabel(name string) string {
	var b strings.Builder
	digits := false
	for _, r := range name {
		if r >= '0' && r <= '9' {
			if !digits {
				b.WriteByte('N')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(r)
	}
	return b.String()
}

// Store is a measured store.Store; see Wrap.
type Store struct {
	inner store.Store
	m     *metrics

	closed    chan struct{} // ends the Lost watchers
	closeOnce sync.Once

	mu   sync.Mutex
	held map[*lock]struct{} // granted and not yet released, for Held
}

// HeldLock is a named lock this Store holds now; see Held.
type HeldLock struct {
	Name  string
	Token int64     // its fencing token
	Since time.Time // when it was granted
	Lost  bool      // its Lost channel has fired: the holder must stop
}

// Held lists the named locks granted through s and not yet released,
// oldest first: what the status page shows an operator as the locks this
// tracker holds (gomogile_locks_held is their number).
func (s *Store) Held() []HeldLock {
	s.mu.Lock()
	out := make([]HeldLock, 0, len(s.held))
	for l := range s.held {
		h := HeldLock{Name: l.Name(), Token: l.Token(), Since: l.granted}
		select {
		case <-l.Lost():
			h.Lost = true
		default:
		}
		out = append(out, h)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b HeldLock) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Name, b.Name))
	})
	return out
}

var _ store.Store = (*Store)(nil)

// Unwrap is the measured Store.
func (s *Store) Unwrap() store.Store { return s.inner }

// done records one call of op that started at start and returns err.
func (s *Store) done(op string, start time.Time, err error) error {
	s.m.callSeconds.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		s.m.errors.WithLabelValues(op, errorLabel(err)).Inc()
	}
	return err
}

// Lock measures the wait and, once granted, the hold and any loss.
func (s *Store) Lock(ctx context.Context, name string, timeout time.Duration) (store.Lock, error) {
	start := time.Now()
	l, err := s.inner.Lock(ctx, name, timeout)
	label := lockLabel(name)
	if err != nil {
		if errors.Is(err, store.ErrLockTimeout) {
			s.m.lockTimeouts.WithLabelValues(label).Inc()
		}
		return nil, s.done("Lock", start, err)
	}
	s.done("Lock", start, nil)
	granted := time.Now()
	s.m.lockAcquired.WithLabelValues(label).Inc()
	s.m.lockWait.WithLabelValues(label).Observe(granted.Sub(start).Seconds())
	s.m.locksHeld.Inc()
	ml := &lock{Lock: l, s: s, label: label, granted: granted, released: make(chan struct{})}
	s.mu.Lock()
	s.held[ml] = struct{}{}
	s.mu.Unlock()
	go ml.watch()
	return ml, nil
}

// Close closes the measured Store and stops watching its locks.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return s.inner.Close()
}

// lock is a held lock being measured.
type lock struct {
	store.Lock
	s        *Store
	label    string
	granted  time.Time
	once     sync.Once
	released chan struct{}
}

// watch counts a Lost firing while the lock is held.
func (l *lock) watch() {
	select {
	case <-l.Lost():
		select {
		case <-l.released:
		default:
			l.s.m.lockLost.WithLabelValues(l.label).Inc()
		}
	case <-l.released:
	case <-l.s.closed:
	}
}

// end records the hold once, at the first release.
func (l *lock) end() {
	l.once.Do(func() {
		close(l.released)
		l.s.m.lockHold.WithLabelValues(l.label).Observe(time.Since(l.granted).Seconds())
		l.s.m.locksHeld.Dec()
		l.s.mu.Lock()
		delete(l.s.held, l)
		l.s.mu.Unlock()
	})
}

func (l *lock) Release(ctx context.Context) error {
	start := time.Now()
	err := l.Lock.Release(ctx)
	if err == nil || errors.Is(err, store.ErrLockLost) {
		l.end()
	}
	return l.s.done("Release", start, err)
}
