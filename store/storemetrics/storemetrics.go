// Package storemetrics measures a *store.Store: [New] returns a
// store.Observer that counts, in a Prometheus registry of the caller's,
// what the tracker asks of its Store, and the Store (opened with
// store.WithObserver) tells it of every call, lock and queue row. Every
// backend gets the same metrics this way without a line of backend code;
// the few numbers only a lock mechanism knows come through the optional
// LockStats method (see store.LockStats), which [Metrics.Watch] reads.
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
	"context"
	"errors"
	"strings"
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

// Metrics is a store.Observer counting into a Prometheus registry: give it
// to store.Open with store.WithObserver, then Watch the Store opened.
type Metrics struct {
	m   *metrics
	reg prometheus.Registerer
}

var _ store.Observer = (*Metrics)(nil)

// New registers the metrics in reg. It fails only when reg already holds
// them (one Store per registry).
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{m: newMetrics(), reg: reg}
	if err := register(reg, m.m.collectors()); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers every collector of cs or, failing, none.
func register(reg prometheus.Registerer, cs []prometheus.Collector) error {
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, r := range cs[:i] {
				reg.Unregister(r)
			}
			return err
		}
	}
	return nil
}

// Watch adds the numbers only st's lock mechanism knows (its LockStats):
// the reaper's and the wake-ups of "lease", the pinned sessions of
// "session"; nothing for the others.
func (m *Metrics) Watch(st *store.Store) error {
	ls := st
	var cs []prometheus.Collector
	switch st.Capabilities().LockMechanism {
	case "lease":
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "gomogile_lock_reaped_total", Help: "Locks of expired lease owners this tracker freed.",
		}, func() float64 { return float64(ls.LockStats().Reaped) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "gomogile_lock_wakeups_total", Help: "Lock waits ended by a notification or this tracker's release rather than a poll.",
			}, func() float64 { return float64(ls.LockStats().Woken) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "gomogile_lock_owner_incarnation", Help: "This tracker's lock owner incarnation (0 while unregistered); a change means every lock was lost.",
			}, func() float64 { return float64(ls.LockStats().Owner) }))
	case "session":
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gomogile_lock_sessions_pinned", Help: "Database sessions pinned to held locks now.",
		}, func() float64 { return float64(ls.LockStats().Pinned) }))
	}
	return register(m.reg, cs)
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

// Call times every Store call and counts its errors.
func (m *Metrics) Call(op string, took time.Duration, err error) {
	m.m.callSeconds.WithLabelValues(op).Observe(took.Seconds())
	if err != nil {
		m.m.errors.WithLabelValues(op, errorLabel(err)).Inc()
	}
}

// Queue counts queue rows.
func (m *Metrics) Queue(q store.Queue, ev store.QueueEvent, n int) {
	var c *prometheus.CounterVec
	switch ev {
	case store.QueueEnqueued:
		c = m.m.enqueued
	case store.QueueLeased:
		c = m.m.leased
	case store.QueueFinished:
		c = m.m.finished
	case store.QueueRetried:
		c = m.m.retried
	default:
		return
	}
	c.WithLabelValues(q.String()).Add(float64(n))
}

// Lock counts grants, waits, holds, timeouts and losses.
func (m *Metrics) Lock(ev store.LockEvent) {
	label := lockLabel(ev.Name)
	switch ev.Kind {
	case store.LockGranted:
		m.m.lockAcquired.WithLabelValues(label).Inc()
		m.m.lockWait.WithLabelValues(label).Observe(ev.Wait.Seconds())
		m.m.locksHeld.Inc()
	case store.LockTimedOut:
		m.m.lockTimeouts.WithLabelValues(label).Inc()
	case store.LockReleased:
		m.m.lockHold.WithLabelValues(label).Observe(ev.Held.Seconds())
		m.m.locksHeld.Dec()
	case store.LockLost:
		m.m.lockLost.WithLabelValues(label).Inc()
	}
}
