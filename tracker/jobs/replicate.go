package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// Lock names of the original (Store.pm, Store/MySQL.pm).
func replicateLockName(fid int64) string {
	return "mgfs:fid:" + strconv.FormatInt(fid, 10) + ":replicate"
}
func devcountLockName(fid int64) string { return "mgfs:fid:" + strconv.FormatInt(fid, 10) }

const (
	replicateLockWait = time.Second      // should_begin_replicating_fidid
	devcountLockWait  = 10 * time.Second // update_devcount_atomic
	lockBusyRetry     = 5 * time.Second  // a fid another worker holds comes back this soon
)

// Outcomes of replicate() that are not failures.
type replResult int

const (
	replDone        replResult = iota + 1 // copies made, policy met
	replLostRace                          // policy met before we did anything
	replNoFid                             // the file is gone
	replWouldWorsen                       // rebalance: only non-ideal places left
)

// replError codes mirror replicate()'s errref values.
type replError struct {
	code string // no_source, source_down, not_observed, too_happy, policy_*, copy_error
	err  error
}

func (e *replError) Error() string {
	if e.err != nil {
		return e.code + ": " + e.err.Error()
	}
	return e.code
}
func (e *replError) Unwrap() error { return e.err }

func replErr(code string, format string, args ...any) error {
	return &replError{code: code, err: fmt.Errorf(format, args...)}
}

func replCode(err error) string {
	var re *replError
	if errors.As(err, &re) {
		return re.code
	}
	return ""
}

// replOpts are replicate()'s options.
type replOpts struct {
	source  int          // preferred source device (fromdevid); 0 = any
	mask    map[int]bool // devices to pretend the fid is not on (rebalance)
	targets []int        // restrict destinations (rebalance policy); nil = all
}

// lockFid takes the per-fid replicate lock; ErrLockTimeout when another
// worker (in any tracker) holds it.
func (m *Manager) lockFid(ctx context.Context, fid int64) (store.Lock, error) {
	l, err := m.st.Lock(ctx, replicateLockName(fid), replicateLockWait)
	if err != nil {
		return nil, fmt.Errorf("jobs: lock fid %d: %w", fid, err)
	}
	return l, nil
}

// noteOnDevice records a verified copy under the devcount lock, as
// DevFID::add_to_db with update_devcount_atomic does.
func (m *Manager) noteOnDevice(ctx context.Context, fid int64, devid int) error {
	l, err := m.st.Lock(ctx, devcountLockName(fid), devcountLockWait)
	if err != nil {
		return fmt.Errorf("jobs: lock devcount of fid %d: %w", fid, err)
	}
	defer m.release(l)
	if _, err := m.st.AddFileOn(store.WithFence(ctx, l), fid, devid); err != nil {
		return fmt.Errorf("jobs: add fid %d on dev%d: %w", fid, devid, err)
	}
	return nil
}

// forgetOnDevice is noteOnDevice's inverse (Device::forget_about).
func (m *Manager) forgetOnDevice(ctx context.Context, fid int64, devid int) error {
	l, err := m.st.Lock(ctx, devcountLockName(fid), devcountLockWait)
	if err != nil {
		return fmt.Errorf("jobs: lock devcount of fid %d: %w", fid, err)
	}
	defer m.release(l)
	if _, err := m.st.RemoveFileOn(store.WithFence(ctx, l), fid, devid); err != nil {
		return fmt.Errorf("jobs: remove fid %d from dev%d: %w", fid, devid, err)
	}
	return nil
}

// replicate copies fid until its class's policy is met (Replicate.pm's
// replicate()). The caller holds the fid's replicate lock.
func (m *Manager) replicate(ctx context.Context, fid int64, o replOpts) (replResult, error) {
	j, res, err := m.replPlan(ctx, fid, o)
	if j == nil {
		return res, err
	}
	gotRequest := false
	var rr cluster.ReplRequest
	for {
		rr = j.pol.ReplicateTo(j.tellPol, j.dests, j.destFailed, j.cls.MinDevCount, j.w.set)
		if rr.Happy {
			break
		}
		ddev, res, err := j.destination(rr)
		if ddev == nil {
			if res != 0 || err != nil {
				return res, err
			}
			break // no suggestion
		}
		gotRequest = true
		sdev, err := j.source()
		if err != nil {
			return 0, err
		}
		got, err := m.copyBlob(ctx, j.w.devs[sdev], ddev, fid, j.f.Length, j.known, j.cls.HashType)
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			m.log.Warn("copy failed", "job", JobReplicate, "fid", fid, "from", sdev, "to", ddev.ID, "err", err)
			j.copyFailed(sdev, ddev, err)
			continue
		}
		if err := m.noteOnDevice(ctx, fid, ddev.ID); err != nil {
			return 0, err
		}
		if j.known == nil && got != nil {
			c := store.Checksum{Fid: fid, HashType: j.cls.HashType, Sum: got}
			if err := m.st.SetChecksum(ctx, c); err != nil {
				return 0, fmt.Errorf("jobs: store checksum of fid %d: %w", fid, err)
			}
			j.known = &c
		}
		j.onDevs = append(j.onDevs, ddev)
		j.tellPol = append(j.tellPol, ddev)
		j.up = append(j.up, ddev.ID)
	}
	return j.outcome(rr, gotRequest)
}

// replJob is one replicate() call's state: the file, where it is, where
// it may go, and what failed so far.
type replJob struct {
	fid   int64
	o     replOpts
	f     store.File
	w     *world
	cls   store.Class
	pol   cluster.ReplPolicy
	known *store.Checksum // checked on every copy; nil: none known yet
	// onDevs hold the fid; tellPol are those the policy is told of (not
	// masked, should have files); up those a copy can be read from.
	onDevs, tellPol []*device
	up              []int
	dests           map[int]*device // where copies may go
	destFailed      map[int]bool
	srcFailed       map[int]bool
	srcRetried      map[int]bool
	lastCopyErr     error
}

// replPlan reads what replicate() decides by. A nil job ends replicate()
// with res and err (the file is gone, it has no readable copy, ...).
func (m *Manager) replPlan(ctx context.Context, fid int64, o replOpts) (*replJob, replResult, error) {
	f, err := m.st.File(ctx, fid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, replNoFid, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("jobs: read fid %d: %w", fid, err)
	}
	on, err := m.st.FileOn(ctx, fid)
	if err != nil {
		return nil, 0, fmt.Errorf("jobs: file_on of fid %d: %w", fid, err)
	}
	need := append([]int(nil), on...)
	if o.source != 0 {
		need = append(need, o.source)
	}
	w, err := m.loadWorld(ctx, need...)
	if err != nil {
		return nil, 0, err
	}
	j := &replJob{fid: fid, o: o, f: f, w: w, cls: w.class(f),
		destFailed: map[int]bool{}, srcFailed: map[int]bool{}, srcRetried: map[int]bool{}}
	if j.pol, err = parsePolicy(j.cls.ReplPolicy); err != nil {
		return nil, 0, &replError{code: "policy_error", err: err}
	}
	// A known checksum is checked on every copy, whatever the class says
	// now; a class with a hash type gets one computed while copying.
	if c, err := m.st.Checksum(ctx, fid); err == nil && c.HashType.New() != nil {
		j.known = &c
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, 0, fmt.Errorf("jobs: checksum of fid %d: %w", fid, err)
	}
	for _, id := range on {
		d, ok := w.devs[id]
		if !ok {
			continue
		}
		j.onDevs = append(j.onDevs, d)
		if d.ShouldHaveFiles() && !o.mask[id] {
			j.tellPol = append(j.tellPol, d)
		}
		if d.ShouldReadFrom() {
			j.up = append(j.up, id)
		}
	}
	if len(j.onDevs) == 0 {
		return nil, 0, replErr("no_source", "fid %d is on no device", fid)
	}
	if len(j.up) == 0 {
		for _, d := range j.onDevs {
			if d.Unobserved() {
				return nil, 0, replErr("not_observed", "dev%d holds fid %d but is not checked yet", d.ID, fid)
			}
		}
		return nil, 0, replErr("source_down", "no readable device holds fid %d", fid)
	}
	j.dests = w.devs
	if o.targets != nil {
		j.dests = map[int]*device{}
		for _, id := range o.targets {
			if d, ok := w.devs[id]; ok {
				j.dests[id] = d
			}
		}
	}
	return j, 0, nil
}

// destination is where the next copy goes by the policy's request rr: an
// ideal device not masked, else the first desperate one. Nil with no
// result and no error: the policy suggests nothing.
func (j *replJob) destination(rr cluster.ReplRequest) (*device, replResult, error) {
	var ddev *device
	switch {
	case len(rr.Ideal) > 0:
		for _, d := range rr.Ideal {
			if !j.o.mask[d.ID] {
				ddev = d
				break
			}
		}
		if ddev == nil {
			// Masking left only non-ideal places: moving there would
			// worsen the layout, so rebalance must not.
			return nil, replWouldWorsen, nil
		}
	case len(rr.Desperate) > 0:
		ddev = rr.Desperate[0]
	default:
		return nil, 0, nil
	}
	if j.destFailed[ddev.ID] {
		return nil, 0, replErr("policy_error_doing_failed", "policy chose dev%d again for fid %d", ddev.ID, j.fid)
	}
	for _, d := range j.onDevs {
		if d.ID == ddev.ID {
			return nil, 0, replErr("policy_error_already_there", "policy chose dev%d, which holds fid %d", ddev.ID, j.fid)
		}
	}
	return ddev, 0, nil
}

// source is the device the next copy is read from: the preferred source
// (fromdevid) while it has not failed, else a random readable one.
func (j *replJob) source() (int, error) {
	var choices []int
	for _, id := range j.up {
		if !j.srcFailed[id] {
			choices = append(choices, id)
		}
	}
	if len(choices) == 0 {
		return 0, &replError{code: "source_down", err: fmt.Errorf("no source left for fid %d: %w", j.fid, j.lastCopyErr)}
	}
	if slices.Contains(choices, j.o.source) {
		return j.o.source, nil
	}
	return choices[rand.IntN(len(choices))], nil
}

// copyFailed notes a failed copy from sdev to ddev: the side at fault is
// not used again for this fid, except that a source whose two reads
// disagreed gets one more try — one may be the network's or the node's
// passing fault.
func (j *replJob) copyFailed(sdev int, ddev *device, err error) {
	j.lastCopyErr = err
	var ce *copyError
	if !errors.As(err, &ce) || !ce.src {
		j.destFailed[ddev.ID] = true
		return
	}
	if ce.disagree && !j.srcRetried[sdev] {
		j.srcRetried[sdev] = true
		return
	}
	j.srcFailed[sdev] = true
}

// outcome is replicate()'s result once the policy is met or has nothing
// more to suggest.
func (j *replJob) outcome(rr cluster.ReplRequest, gotRequest bool) (replResult, error) {
	if rr.TooHappy {
		return 0, replErr("too_happy", "fid %d is on too many devices", j.fid)
	}
	if rr.Happy {
		if gotRequest {
			return replDone, nil
		}
		return replLostRace, nil
	}
	if j.lastCopyErr != nil {
		return 0, &replError{code: "copy_error", err: j.lastCopyErr}
	}
	for _, d := range j.dests {
		if d.Unobserved() && d.NewFilesState() {
			return 0, replErr("not_observed", "no destination for fid %d yet: dev%d is not checked yet", j.fid, d.ID)
		}
	}
	return 0, replErr("policy_no_suggestions", "no destination for fid %d", j.fid)
}

// replicateBackoff is Replicate.pm's: 15s, 1m, 5m, 30m, 1h, 2h, 4h, 8h,
// then daily, each ±20%.
func replicateBackoff(failcount int) time.Duration {
	steps := []int{15, 60, 300, 1800, 3600, 7200, 14400, 28800}
	secs := 86400
	if failcount >= 0 && failcount < len(steps) {
		secs = steps[failcount]
	}
	return time.Duration(float64(secs)*(0.8+rand.Float64()*0.4)) * time.Second
}

// replicateWorker works the replicate queue, then the rebalance queue, as
// Worker::Replicate does.
func (m *Manager) replicateWorker(stop context.Context) {
	m.queueWorker(stop, JobReplicate, []store.Queue{store.QueueReplicate, store.QueueRebalance},
		func(ctx context.Context, it store.QueueItem) error {
			if it.Queue == store.QueueRebalance {
				return m.rebalanceItem(ctx, it)
			}
			return m.replicateItem(ctx, it)
		})
}

// replicateItem handles one file_to_replicate row.
func (m *Manager) replicateItem(ctx context.Context, it store.QueueItem) error {
	q := store.QueueReplicate
	l, err := m.lockFid(ctx, it.Fid)
	if errors.Is(err, store.ErrLockTimeout) {
		// Someone else works on this fid now; look again soon.
		return m.reschedule(ctx, q, it.Fid, lockBusyRetry, false)
	}
	if err != nil {
		return err
	}
	defer m.release(l)
	ctx = store.WithFence(ctx, l)

	// Done, lost the race, or the file is gone: the row's work is over.
	if _, err = m.replicate(ctx, it.Fid, replOpts{source: it.DevID}); err == nil {
		return m.finish(ctx, q, it.Fid)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch replCode(err) {
	case "no_source":
		// It exists nowhere: park it until an operator looks.
		m.log.Error("no copy left; parked", "job", JobReplicate, "fid", it.Fid)
		if rerr := m.reschedule(ctx, q, it.Fid, store.Never, true); rerr != nil {
			return rerr
		}
		return err
	case "not_observed":
		// A device this tracker's monitor has not looked at yet (just
		// added, or we just started) is no failure: look again once it has.
		return m.reschedule(ctx, q, it.Fid, m.settleDelay(), false)
	case "too_happy":
		// More copies than the policy wants: delete the surplus, as the
		// original's replicator does. A trim that cannot finish now is
		// retried like a failed copy.
		if terr := m.trimSurplus(ctx, it.Fid); terr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if rerr := m.reschedule(ctx, q, it.Fid, m.retryDelay(it.FailCount), true); rerr != nil {
				return rerr
			}
			return terr
		}
		return m.finish(ctx, q, it.Fid)
	}
	if rerr := m.reschedule(ctx, q, it.Fid, m.retryDelay(it.FailCount), true); rerr != nil {
		return rerr
	}
	return err
}

func (m *Manager) reschedule(ctx context.Context, q store.Queue, fid int64, after time.Duration, failed bool) error {
	if err := m.st.Reschedule(ctx, q, fid, after, failed); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("jobs: reschedule %s fid %d: %w", q, fid, err)
	}
	return nil
}

func (m *Manager) finish(ctx context.Context, q store.Queue, fid int64) error {
	if err := m.st.Finish(ctx, q, fid); err != nil {
		return fmt.Errorf("jobs: finish %s fid %d: %w", q, fid, err)
	}
	return nil
}

// settleDelay is how soon work waiting for the monitor's first look at a
// device is tried again.
func (m *Manager) settleDelay() time.Duration {
	return max(2*m.opts.MonitorInterval, time.Second)
}
