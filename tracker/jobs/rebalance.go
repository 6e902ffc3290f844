package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

const (
	rebalBatch    = 500   // queue_rate_for_rebal's default
	rebalQueueMax = 10000 // queue_size_for_rebal's default
)

// jobMasterLoop is Worker::JobMaster's injection half: fsck batches while
// fsck_host names this tracker and rebalance batches while rebal_host
// does. Devices in state drain are not emptied: since 2.40 drain only stops
// new files from going there (moving files off is what rebalance is for).
// (Leasing is done by each worker
// through the store, so the original's in-memory queue hand-off has no
// counterpart.)
func (m *Manager) jobMasterLoop(ctx context.Context) {
	jc := m.classes[JobMaster]
	log := m.log.With("job", JobMaster)
	t := time.NewTicker(m.opts.QueuePoll)
	defer t.Stop()
	// Placement needs to know which devices are writeable.
	if !m.waitMonitor(ctx) {
		return
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, m.opts.PassTimeout)
		err := m.jobMasterPass(pctx, log)
		cancel()
		if err != nil {
			if isCtxErr(ctx, err) {
				return
			}
			jc.errors.Add(1)
			log.Error("pass", "err", err)
		}
		jc.processed.Add(1)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wakeOf(ctx):
		}
	}
}

func (m *Manager) jobMasterPass(ctx context.Context, log *slog.Logger) error {
	// Each injection runs under its own try-once lock: trackers sharing a
	// hostname never inject the same batch twice.
	// fsck and rebalance are injected only by the tracker the settings
	// name, checked before locking so that other trackers never hold it up.
	for _, inj := range []struct {
		setting, lock string
		fn            func() error
	}{
		{"fsck_host", "mgfs:job_master:fsck", func() error { return m.injectFsck(ctx) }},
		{"rebal_host", "mgfs:job_master:rebalance", func() error { return m.injectRebalance(ctx, log) }},
	} {
		host, err := m.setting(ctx, inj.setting)
		if err != nil {
			return err
		}
		if host == "" || host != m.host {
			continue
		}
		if err := m.tryLocked(ctx, inj.lock, inj.fn); err != nil {
			return err
		}
	}
	return nil
}

// tryLocked runs fn holding the named lock, or does nothing if another
// holder has it.
func (m *Manager) tryLocked(ctx context.Context, name string, fn func() error) error {
	l, err := m.st.Lock(ctx, name, 0)
	if errors.Is(err, store.ErrLockTimeout) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jobs: lock %s: %w", name, err)
	}
	defer m.release(l)
	return fn()
}

// rebalanceItem moves one copy off a device (Replicate::rebalance_devfid):
// copy it elsewhere (restricted to the row's target devices, if any), then
// delete the copy on the source device. The row leaves the queue whatever
// happens, as in the original.
func (m *Manager) rebalanceItem(ctx context.Context, it store.QueueItem) error {
	q := store.QueueRebalance
	l, err := m.lockFid(ctx, it.Fid)
	if errors.Is(err, store.ErrLockTimeout) {
		return m.reschedule(ctx, q, it.Fid, lockBusyRetry, false)
	}
	if err != nil {
		return err
	}
	defer m.release(l)
	err = m.moveOff(ctx, it)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if ferr := m.finish(ctx, q, it.Fid); ferr != nil {
		return ferr
	}
	return err
}

func (m *Manager) moveOff(ctx context.Context, it store.QueueItem) error {
	fid, src := it.Fid, it.DevID
	var targets []int
	if strings.TrimSpace(it.Arg) != "" {
		for _, s := range strings.Split(it.Arg, ",") {
			if id, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
				targets = append(targets, id)
			}
		}
	}
	res, err := m.replicate(ctx, fid, replOpts{mask: map[int]bool{src: true}, targets: targets})
	tooHappy := replCode(err) == "too_happy"
	if err != nil && !tooHappy {
		return fmt.Errorf("jobs: rebalance fid %d off dev%d: %w", fid, src, err)
	}
	if res == replNoFid {
		return nil
	}
	if res == replWouldWorsen {
		return fmt.Errorf("jobs: rebalance fid %d off dev%d: no suitable destination devices", fid, src)
	}
	on, err := m.st.FileOn(ctx, fid)
	if err != nil {
		return fmt.Errorf("jobs: file_on of fid %d: %w", fid, err)
	}
	onSrc := false
	for _, id := range on {
		onSrc = onSrc || id == src
	}
	if !onSrc {
		return nil // someone else moved it
	}
	w, err := m.loadWorld(ctx, append(append([]int(nil), on...), src)...)
	if err != nil {
		return err
	}
	// Never leave the file with fewer copies than its class wants. The
	// policy, asked with the destinations limited to the row's targets,
	// can call a file happy whose other copies are all on those targets
	// (from_devices=2 to_devices=1,3 with copies on 1, 2 and 3): the
	// original then deletes the source copy and drops the file below its
	// mindevcount. gomogile keeps the copy.
	if err := m.keepsEnough(ctx, w, fid, on, src); err != nil {
		return err
	}
	if tooHappy || res == replLostRace {
		// Nothing copied: delete the source copy only if another copy is
		// really there with the right size.
		f, err := m.st.File(ctx, fid)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("jobs: read fid %d: %w", fid, err)
		}
		ok := false
		for _, id := range on {
			d := w.devs[id]
			if id == src || d == nil || !d.ShouldReadFrom() {
				continue
			}
			if sz, err := m.nodes.Size(ctx, d.FidURL(fid, true)); err == nil && sz == f.Length {
				ok = true
				break
			}
		}
		if !ok {
			return nil
		}
	}
	d := w.devs[src]
	if d == nil {
		return fmt.Errorf("jobs: rebalance fid %d: no dev%d", fid, src)
	}
	if err := m.nodes.Remove(ctx, d.FidURL(fid, false), m.opts.RebalanceIgnoreMissing); err != nil {
		return fmt.Errorf("jobs: rebalance fid %d off dev%d: %w", fid, src, err)
	}
	return m.forgetOnDevice(ctx, fid, src)
}

// injectRebalance is JobMaster's _inject_rebalance_queues with
// Rebalance::next_fids_to_rebalance: while rebal_host names this tracker,
// take source devices one at a time (marking each drain while it is
// worked), queue batches of its fids with their candidate destinations,
// honour limit_by count/size per device or globally, and finish or stop
// (rebal_signal=stop) as the original does.
func (m *Manager) injectRebalance(ctx context.Context, log *slog.Logger) error {
	p, err := m.rebalancePass(ctx)
	if p == nil || err != nil {
		return err
	}
	if sig, err := m.setting(ctx, "rebal_signal"); err != nil {
		return err
	} else if sig == "stop" {
		return p.stop(ctx)
	}
	if p.s.SdevCurrent == 0 {
		if done, err := p.nextSource(ctx, log); done || err != nil {
			return err
		}
	}
	dests := destDevices(p.pol, p.w, p.s)
	if len(dests) == 0 {
		return fmt.Errorf("jobs: rebalance cannot find suitable destination devices")
	}
	return p.queueBatch(ctx, dests)
}

// rebalPass is one pass of injectRebalance: the policy, the cluster, the
// run's state (saved at the end of the pass) and the batch size.
type rebalPass struct {
	m    *Manager
	pol  cluster.RebalPolicy
	w    *world
	now  time.Time
	s    cluster.RebalState
	rate int64
}

// rebalancePass reads what a pass decides by; nil when there is nothing
// to do here: rebal_host names another tracker (or none), or the queue
// is full.
func (m *Manager) rebalancePass(ctx context.Context) (*rebalPass, error) {
	host, err := m.setting(ctx, "rebal_host")
	if err != nil || host == "" || host != m.host {
		return nil, err
	}
	qlen, err := m.st.QueueLength(ctx, store.QueueRebalance)
	if err != nil {
		return nil, fmt.Errorf("jobs: rebalance queue length: %w", err)
	}
	if qlen >= m.intSetting(ctx, "queue_size_for_rebal", rebalQueueMax) {
		return nil, nil
	}
	p := &rebalPass{m: m, rate: m.intSetting(ctx, "queue_rate_for_rebal", rebalBatch)}
	polStr, err := m.setting(ctx, "rebal_policy")
	if err != nil {
		return nil, err
	}
	if p.pol, err = cluster.ParseRebalPolicy(polStr); err != nil {
		return nil, err
	}
	if p.w, err = m.freshWorld(ctx); err != nil {
		return nil, err
	}
	if p.now, err = m.st.Now(ctx); err != nil {
		return nil, fmt.Errorf("jobs: rebalance: %w", err)
	}
	stStr, err := m.setting(ctx, "rebal_state")
	if err != nil {
		return nil, err
	}
	if stStr != "" {
		p.s = cluster.ParseRebalState(stStr)
	} else {
		p.s = cluster.RebalState{SourceDevs: p.pol.SourceDevices(p.w.sorted()), TimeStarted: p.now.Unix()}
	}
	// A run that has not started yet gets its global budget here (the
	// original never sets it, so a global limit moved nothing).
	s := &p.s
	fresh := s.SdevCurrent == 0 && len(s.CompletedDevs) == 0 && s.FidsQueued == 0 && s.TimeLatestRun == 0
	if fresh && p.pol.LimitType == "global" && p.pol.LimitBy != "none" {
		if s.Limit, err = p.pol.LimitValue(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *rebalPass) save(ctx context.Context) error {
	if err := p.m.st.SetServerSetting(ctx, "rebal_state", p.s.String()); err != nil {
		return fmt.Errorf("jobs: save rebalance state: %w", err)
	}
	return nil
}

// undrain puts a source device back to alive once the run is done with
// it, unless the policy leaves it in drain mode.
func (p *rebalPass) undrain(ctx context.Context, devid int) error {
	if devid == 0 || p.pol.LeaveInDrainMode {
		return nil
	}
	if err := p.m.st.SetDeviceState(ctx, devid, store.DeviceAlive); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("jobs: rebalance: undrain dev%d: %w", devid, err)
	}
	return nil
}

// stop ends the run on rebal_signal=stop.
func (p *rebalPass) stop(ctx context.Context) error {
	if err := p.undrain(ctx, p.s.SdevCurrent); err != nil {
		return err
	}
	p.s.TimeStopped = p.now.Unix()
	if err := p.m.st.DeleteServerSetting(ctx, "rebal_signal"); err != nil {
		return fmt.Errorf("jobs: rebalance stop: %w", err)
	}
	if err := p.m.st.DeleteServerSetting(ctx, "rebal_host"); err != nil {
		return fmt.Errorf("jobs: rebalance stop: %w", err)
	}
	return p.save(ctx)
}

// nextSource takes the next source device and marks it drain, or finishes
// the run when none is left (done).
func (p *rebalPass) nextSource(ctx context.Context, log *slog.Logger) (done bool, err error) {
	s := &p.s
	if len(s.SourceDevs) == 0 {
		log.Info("rebalance finished", "fids_queued", s.FidsQueued, "bytes_queued", s.BytesQueued)
		s.TimeFinished = p.now.Unix()
		if err := p.save(ctx); err != nil {
			return true, err
		}
		if err := p.m.st.DeleteServerSetting(ctx, "rebal_host"); err != nil {
			return true, fmt.Errorf("jobs: rebalance done: %w", err)
		}
		return true, nil
	}
	s.SdevCurrent, s.SourceDevs = s.SourceDevs[0], s.SourceDevs[1:]
	s.SdevLastFid = 0
	if p.pol.LimitType == "device" && p.pol.LimitBy != "none" {
		if s.SdevLimit, err = p.pol.LimitValue(); err != nil {
			return false, err
		}
	}
	if len(destDevices(p.pol, p.w, *s)) == 0 {
		return false, fmt.Errorf("jobs: rebalance cannot find suitable destination devices")
	}
	// A device being emptied must not take new files meanwhile.
	if err := p.m.st.SetDeviceState(ctx, s.SdevCurrent, store.DeviceDrain); err != nil {
		return false, fmt.Errorf("jobs: rebalance: drain dev%d: %w", s.SdevCurrent, err)
	}
	if d, ok := p.w.devs[s.SdevCurrent]; ok {
		d.Status = store.DeviceDrain
	}
	return false, nil
}

// underLimit reports whether limit_by (count or size, per device or for
// the whole run) still allows a file of length; take spends it.
func (p *rebalPass) underLimit(length int64, take bool) bool {
	lim := &p.s.SdevLimit
	if p.pol.LimitType == "global" {
		lim = &p.s.Limit
	}
	switch p.pol.LimitBy {
	case "count":
		if !take {
			return *lim > 0
		}
		if *lim <= 0 {
			return false
		}
		*lim--
		return true
	case "size":
		if !take {
			return *lim >= 1024
		}
		if length > *lim {
			return false
		}
		*lim -= length
		return true
	}
	return true
}

// queueBatch queues the source's next fids with their candidate
// destinations, or moves on from a source with none left (or its limit
// spent), and saves the state.
func (p *rebalPass) queueBatch(ctx context.Context, dests []int) error {
	s := &p.s
	fids, err := p.m.st.FidsOnDevice(ctx, s.SdevCurrent, s.SdevLastFid, int(p.rate))
	if err != nil {
		return fmt.Errorf("jobs: fids on dev%d: %w", s.SdevCurrent, err)
	}
	if len(fids) == 0 || !p.underLimit(0, false) {
		// This source is done; the next pass picks the next one.
		if err := p.undrain(ctx, s.SdevCurrent); err != nil {
			return err
		}
		s.CompletedDevs = append(s.CompletedDevs, s.SdevCurrent)
		s.SdevCurrent, s.SdevLastFid, s.SdevLimit = 0, 0, 0
		return p.save(ctx)
	}
	s.SdevLastFid = fids[len(fids)-1]
	var entries []store.QueueEntry
	for _, fid := range fids {
		f, err := p.m.st.File(ctx, fid)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("jobs: read fid %d: %w", fid, err)
		}
		if !p.underLimit(f.Length, true) {
			continue
		}
		ds := append([]int(nil), dests...)
		rand.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
		if n, err := strconv.Atoi(p.pol.UseDestDevs); err == nil && n > 0 && n < len(ds) {
			ds = ds[:n]
		}
		entries = append(entries, store.QueueEntry{Fid: fid, DevID: s.SdevCurrent, Arg: cluster.JoinInts(ds)})
		s.FidsQueued++
		s.BytesQueued += f.Length
	}
	s.TimeLatestRun = p.now.Unix()
	if len(entries) == 0 {
		s.EmptyRuns++
		s.TimeLatestEmptyRun = p.now.Unix()
	} else if err := p.m.st.Enqueue(ctx, store.QueueRebalance, entries...); err != nil {
		return fmt.Errorf("jobs: queue rebalance batch: %w", err)
	}
	return p.save(ctx)
}

// destDevices are the policy's destinations for the current source: every
// device that should get new files (min_free_space included) minus the
// sources of this run.
func destDevices(pol cluster.RebalPolicy, w *world, s cluster.RebalState) []int {
	skip := map[int]bool{s.SdevCurrent: true}
	for _, id := range s.SourceDevs {
		skip[id] = true
	}
	for _, id := range s.CompletedDevs {
		skip[id] = true
	}
	return pol.DestDevices(w.sorted(), w.set, skip)
}

// keepsEnough checks that fid's copies other than the one on src, on
// devices that should have files, number at least what its class wants
// (the policy's count or the mindevcount). How they are spread over hosts
// is left to the policy as the worker asked it, within the row's targets,
// as in the original: a rebalance from_hosts=1 to_hosts=3 moves a file
// whose other copy is already on host 3 next to it there, as asked.
func (m *Manager) keepsEnough(ctx context.Context, w *world, fid int64, on []int, src int) error {
	f, err := m.st.File(ctx, fid)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jobs: read fid %d: %w", fid, err)
	}
	cls := w.class(f)
	pol, err := parsePolicy(cls.ReplPolicy)
	if err != nil {
		return &replError{code: "policy_error", err: err}
	}
	want := pol.Copies(cls.MinDevCount)
	rest := 0
	for _, id := range on {
		if d, ok := w.devs[id]; ok && id != src && d.ShouldHaveFiles() {
			rest++
		}
	}
	if rest < want {
		return fmt.Errorf("jobs: rebalance fid %d off dev%d: would leave %d copies, below the %d its class wants", fid, src, rest, want)
	}
	return nil
}
