package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/store"
)

const (
	drainBatch    = 500   // queue_rate_for_rebal's default
	rebalQueueMax = 10000 // queue_size_for_rebal's default
)

// jobMasterLoop is Worker::JobMaster's injection half: fsck batches while
// fsck_host names this tracker, rebalance batches while rebal_host does,
// and the files of devices in state drain. (Leasing is done by each worker
// through the store, so the original's in-memory queue hand-off has no
// counterpart.)
func (m *Manager) jobMasterLoop(ctx context.Context) {
	jc := m.classes[JobMaster]
	log := m.log.With("job", JobMaster)
	t := time.NewTicker(m.opts.QueuePoll)
	defer t.Stop()
	drain := &drainCursor{next: map[int]int64{}, restart: map[int]time.Time{}}
	// Placement needs to know which devices are writeable.
	if !m.waitMonitor(ctx) {
		return
	}
	for {
		if err := m.jobMasterPass(ctx, log, drain); err != nil {
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
		}
	}
}

func (m *Manager) jobMasterPass(ctx context.Context, log *slog.Logger, drain *drainCursor) error {
	// Each injection runs under its own try-once lock: trackers sharing a
	// hostname (or all of them, for draining) never inject the same batch
	// twice, and one tracker's drain work never starves another's fsck.
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
	return m.tryLocked(ctx, "mgfs:job_master:drain", func() error { return m.injectDrain(ctx, drain) })
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

// drainRestart is how long a drain waits after a full pass over a device
// before starting over, so that files whose move failed (no destination,
// say) are retried without churning the queue.
const drainRestart = 30 * time.Second

// drainCursor remembers, per draining device, the fid after which the next
// batch starts, and when a finished pass may start over.
type drainCursor struct {
	next    map[int]int64
	restart map[int]time.Time
}

// injectDrain queues the files of every device in state drain into the
// rebalance queue (with no target list: any device the policy likes).
// Devices a running rebalance works on are left to it.
func (m *Manager) injectDrain(ctx context.Context, c *drainCursor) error {
	devs, err := m.st.Devices(ctx)
	if err != nil {
		return fmt.Errorf("jobs: read devices: %w", err)
	}
	qlen, err := m.st.QueueLength(ctx, store.QueueRebalance)
	if err != nil {
		return fmt.Errorf("jobs: rebalance queue length: %w", err)
	}
	if qlen >= rebalQueueMax {
		return nil
	}
	owned, err := m.rebalanceDevices(ctx)
	if err != nil {
		return err
	}
	for _, d := range devs {
		if d.Status != store.DeviceDrain || owned[d.ID] {
			delete(c.next, d.ID)
			delete(c.restart, d.ID)
			continue
		}
		if time.Now().Before(c.restart[d.ID]) {
			continue
		}
		fids, err := m.st.FidsOnDevice(ctx, d.ID, c.next[d.ID], drainBatch)
		if err != nil {
			return fmt.Errorf("jobs: fids on dev%d: %w", d.ID, err)
		}
		if len(fids) == 0 {
			if c.next[d.ID] != 0 {
				c.restart[d.ID] = time.Now().Add(drainRestart)
			}
			delete(c.next, d.ID)
			continue
		}
		entries := make([]store.QueueEntry, len(fids))
		for i, fid := range fids {
			entries[i] = store.QueueEntry{Fid: fid, DevID: d.ID}
		}
		if err := m.st.Enqueue(ctx, store.QueueRebalance, entries...); err != nil {
			return fmt.Errorf("jobs: queue dev%d for draining: %w", d.ID, err)
		}
		c.next[d.ID] = fids[len(fids)-1]
	}
	return nil
}

// rebalanceItem moves one copy off a device (Replicate::rebalance_devfid):
// copy it elsewhere (restricted to the row's target devices, if any), then
// delete the copy on the source device. The row leaves the queue whatever
// happens, as in the original; a drain re-queues what is still there.
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
			if id == src || d == nil || !d.shouldReadFrom() {
				continue
			}
			if sz, err := m.nodes.size(ctx, d.fidURL(fid, true)); err == nil && sz == f.Length {
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
	if err := m.nodes.remove(ctx, d.fidURL(fid, false)); err != nil {
		return fmt.Errorf("jobs: rebalance fid %d off dev%d: %w", fid, src, err)
	}
	return m.forgetOnDevice(ctx, fid, src)
}

// rebalPolicy is Rebalance.pm's policy, the space-separated key=value list
// of the rebal_policy setting (lists comma-separated).
type rebalPolicy struct {
	fromAllDevs, toAllDevs            bool
	fromHosts, fromDevices            []int
	fromPercentUsed, fromPercentFree  float64
	fromSpaceUsed, fromSpaceFree      int64
	fidAge, limitType, limitBy, limit string
	toHosts, toDevices                []int
	notToHosts, notToDevices          []int
	toPercentUsed, toPercentFree      float64
	toSpaceUsed, toSpaceFree          int64
	useDestDevs                       string
	leaveInDrainMode                  bool
}

func parseKV(s string) map[string]string {
	out := map[string]string{}
	for _, tup := range strings.Fields(s) {
		k, v, _ := strings.Cut(tup, "=")
		out[k] = v
	}
	return out
}

func intList(v string) []int {
	var out []int
	for _, s := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func joinInts(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}

// parseRebalPolicy refuses unknown keys, as the original does.
func parseRebalPolicy(s string) (rebalPolicy, error) {
	p := rebalPolicy{fromAllDevs: true, toAllDevs: true, fidAge: "old", limitType: "device", limitBy: "none", useDestDevs: "all"}
	f := func(v string) float64 { x, _ := strconv.ParseFloat(v, 64); return x }
	n := func(v string) int64 { x, _ := strconv.ParseInt(v, 10, 64); return x }
	for k, v := range parseKV(s) {
		switch k {
		case "from_all_devs":
			p.fromAllDevs = truthy(v)
		case "to_all_devs":
			p.toAllDevs = truthy(v)
		case "from_hosts":
			p.fromHosts = intList(v)
		case "from_devices":
			p.fromDevices = intList(v)
		case "from_percent_used":
			p.fromPercentUsed = f(v)
		case "from_percent_free":
			p.fromPercentFree = f(v)
		case "from_space_used":
			p.fromSpaceUsed = n(v)
		case "from_space_free":
			p.fromSpaceFree = n(v)
		case "fid_age":
			p.fidAge = v
		case "limit_type":
			p.limitType = v
		case "limit_by":
			p.limitBy = v
		case "limit":
			p.limit = v
		case "to_hosts":
			p.toHosts = intList(v)
		case "to_devices":
			p.toDevices = intList(v)
		case "to_percent_used":
			p.toPercentUsed = f(v)
		case "to_percent_free":
			p.toPercentFree = f(v)
		case "to_space_used":
			p.toSpaceUsed = n(v)
		case "to_space_free":
			p.toSpaceFree = n(v)
		case "not_to_hosts":
			p.notToHosts = intList(v)
		case "not_to_devices":
			p.notToDevices = intList(v)
		case "use_dest_devs":
			p.useDestDevs = v
		case "leave_in_drain_mode":
			p.leaveInDrainMode = truthy(v)
		default:
			return p, fmt.Errorf("jobs: rebalance policy: invalid setting %q: %w", k, store.ErrInvalid)
		}
	}
	if p.fidAge != "old" {
		// FidsOnDevice pages ascending only.
		return p, fmt.Errorf("jobs: rebalance policy: fid_age=%s not supported (only old): %w", p.fidAge, store.ErrInvalid)
	}
	switch p.limitBy {
	case "none", "count", "size":
	default:
		return p, fmt.Errorf("jobs: rebalance policy: limit_by=%s not supported: %w", p.limitBy, store.ErrInvalid)
	}
	return p, nil
}

// rebalState is Rebalance.pm's state, saved in rebal_state.
type rebalState struct {
	completedDevs, sourceDevs                    []int
	sdevCurrent                                  int
	sdevLastFid                                  int64
	sdevLimit, limit                             int64
	fidsQueued, bytesQueued                      int64
	timeStarted, timeFinished, timeStopped       int64
	timeLatestRun, timeLatestEmptyRun, emptyRuns int64
}

func parseRebalState(s string) rebalState {
	kv := parseKV(s)
	n := func(k string) int64 { x, _ := strconv.ParseInt(kv[k], 10, 64); return x }
	return rebalState{
		completedDevs: intList(kv["completed_devs"]), sourceDevs: intList(kv["source_devs"]),
		sdevCurrent: int(n("sdev_current")), sdevLastFid: n("sdev_lastfid"), sdevLimit: n("sdev_limit"),
		limit: n("limit"), fidsQueued: n("fids_queued"), bytesQueued: n("bytes_queued"),
		timeStarted: n("time_started"), timeFinished: n("time_finished"), timeStopped: n("time_stopped"),
		timeLatestRun: n("time_latest_run"), timeLatestEmptyRun: n("time_latest_empty_run"), emptyRuns: n("empty_runs"),
	}
}

func (s rebalState) String() string {
	kv := map[string]string{
		"completed_devs": joinInts(s.completedDevs), "source_devs": joinInts(s.sourceDevs),
		"sdev_current": strconv.Itoa(s.sdevCurrent), "sdev_lastfid": strconv.FormatInt(s.sdevLastFid, 10),
		"sdev_limit": strconv.FormatInt(s.sdevLimit, 10), "limit": strconv.FormatInt(s.limit, 10),
		"fids_queued": strconv.FormatInt(s.fidsQueued, 10), "bytes_queued": strconv.FormatInt(s.bytesQueued, 10),
		"time_started": strconv.FormatInt(s.timeStarted, 10), "time_finished": strconv.FormatInt(s.timeFinished, 10),
		"time_stopped": strconv.FormatInt(s.timeStopped, 10), "time_latest_run": strconv.FormatInt(s.timeLatestRun, 10),
		"time_latest_empty_run": strconv.FormatInt(s.timeLatestEmptyRun, 10), "empty_runs": strconv.FormatInt(s.emptyRuns, 10),
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + kv[k]
	}
	return strings.Join(parts, " ")
}

func contains(ids []int, id int) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// filterSource is Rebalance::filter_source_devices.
func (p rebalPolicy) filterSource(w *world) []int {
	var out []int
	for _, id := range sortedIDs(w.devs) {
		d := w.devs[id]
		if !d.canDeleteFrom() {
			continue
		}
		if len(p.fromDevices) > 0 && !contains(p.fromDevices, id) {
			continue
		}
		if len(p.fromHosts) > 0 && !contains(p.fromHosts, d.HostID) {
			continue
		}
		total, used, known := d.usageMB()
		if p.fromPercentUsed > 0 && (!known || float64(used)/float64(total)*100 <= p.fromPercentUsed) {
			continue
		}
		if p.fromPercentFree > 0 && (!known || d.percentFree()*100 <= p.fromPercentFree) {
			continue
		}
		if p.fromSpaceUsed > 0 && (!known || used <= p.fromSpaceUsed) {
			continue
		}
		if p.fromSpaceFree > 0 && (!known || total-used <= p.fromSpaceFree) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// filterDest is Rebalance::filter_dest_devices.
func (p rebalPolicy) filterDest(w *world, s rebalState) []int {
	skip := map[int]bool{s.sdevCurrent: true}
	for _, id := range s.sourceDevs {
		skip[id] = true
	}
	for _, id := range s.completedDevs {
		skip[id] = true
	}
	var out []int
	for _, id := range sortedIDs(w.devs) {
		d := w.devs[id]
		if skip[id] || !d.shouldGetNewFiles() {
			continue
		}
		if len(p.toDevices) > 0 && !contains(p.toDevices, id) {
			continue
		}
		if len(p.toHosts) > 0 && !contains(p.toHosts, d.HostID) {
			continue
		}
		if contains(p.notToDevices, id) || contains(p.notToHosts, d.HostID) {
			continue
		}
		total, used, known := d.usageMB()
		if p.toPercentUsed > 0 && (!known || float64(used)/float64(total)*100 <= p.toPercentUsed) {
			continue
		}
		if p.toPercentFree > 0 && (!known || d.percentFree()*100 <= p.toPercentFree) {
			continue
		}
		if p.toSpaceUsed > 0 && (!known || used <= p.toSpaceUsed) {
			continue
		}
		if p.toSpaceFree > 0 && (!known || total-used <= p.toSpaceFree) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// humanToBytes parses "100g", "5m", "1024" (Rebalance::_human_to_bytes).
func humanToBytes(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	if s != "" {
		if i := strings.IndexByte("bkmgtp", s[len(s)-1]); i >= 0 {
			for ; i > 0; i-- {
				mult *= 1024
			}
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("jobs: rebalance limit %q: %w", s, store.ErrInvalid)
	}
	return n * mult, nil
}

// rebalanceDevices are the devices a saved rebalance state claims, which
// the drain injector leaves alone.
func (m *Manager) rebalanceDevices(ctx context.Context) (map[int]bool, error) {
	st, err := m.setting(ctx, "rebal_state")
	if err != nil || st == "" {
		return nil, err
	}
	host, err := m.setting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	s := parseRebalState(st)
	owned := map[int]bool{}
	if host != "" {
		for _, id := range s.sourceDevs {
			owned[id] = true
		}
		owned[s.sdevCurrent] = true
	}
	return owned, nil
}

// injectRebalance is JobMaster's _inject_rebalance_queues with
// Rebalance::next_fids_to_rebalance: while rebal_host names this tracker,
// take source devices one at a time (marking each drain while it is
// worked), queue batches of its fids with their candidate destinations,
// honour limit_by count/size per device or globally, and finish or stop
// (rebal_signal=stop) as the original does.
func (m *Manager) injectRebalance(ctx context.Context, log *slog.Logger) error {
	host, err := m.setting(ctx, "rebal_host")
	if err != nil || host == "" || host != m.host {
		return err
	}
	qlen, err := m.st.QueueLength(ctx, store.QueueRebalance)
	if err != nil {
		return fmt.Errorf("jobs: rebalance queue length: %w", err)
	}
	if qlen >= m.intSetting(ctx, "queue_size_for_rebal", rebalQueueMax) {
		return nil
	}
	rate := m.intSetting(ctx, "queue_rate_for_rebal", drainBatch)
	polStr, err := m.setting(ctx, "rebal_policy")
	if err != nil {
		return err
	}
	pol, err := parseRebalPolicy(polStr)
	if err != nil {
		return err
	}
	w, err := m.freshWorld(ctx)
	if err != nil {
		return err
	}
	now, err := m.st.Now(ctx)
	if err != nil {
		return fmt.Errorf("jobs: rebalance: %w", err)
	}
	stStr, err := m.setting(ctx, "rebal_state")
	if err != nil {
		return err
	}
	var s rebalState
	if stStr != "" {
		s = parseRebalState(stStr)
	} else {
		s = rebalState{sourceDevs: pol.filterSource(w), timeStarted: now.Unix()}
	}
	// A run that has not started yet gets its global budget here (the
	// original never sets it, so a global limit moved nothing).
	fresh := s.sdevCurrent == 0 && len(s.completedDevs) == 0 && s.fidsQueued == 0 && s.timeLatestRun == 0
	if fresh && pol.limitType == "global" && pol.limitBy != "none" {
		if s.limit, err = pol.limitValue(); err != nil {
			return err
		}
	}
	save := func() error {
		if err := m.st.SetServerSetting(ctx, "rebal_state", s.String()); err != nil {
			return fmt.Errorf("jobs: save rebalance state: %w", err)
		}
		return nil
	}
	undrain := func(devid int) error {
		if devid == 0 || pol.leaveInDrainMode {
			return nil
		}
		if err := m.st.SetDeviceState(ctx, devid, store.DeviceAlive); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("jobs: rebalance: undrain dev%d: %w", devid, err)
		}
		return nil
	}

	if sig, err := m.setting(ctx, "rebal_signal"); err != nil {
		return err
	} else if sig == "stop" {
		if err := undrain(s.sdevCurrent); err != nil {
			return err
		}
		s.timeStopped = now.Unix()
		if err := m.st.DeleteServerSetting(ctx, "rebal_signal"); err != nil {
			return fmt.Errorf("jobs: rebalance stop: %w", err)
		}
		if err := m.st.DeleteServerSetting(ctx, "rebal_host"); err != nil {
			return fmt.Errorf("jobs: rebalance stop: %w", err)
		}
		return save()
	}

	if s.sdevCurrent == 0 {
		if len(s.sourceDevs) == 0 {
			log.Info("rebalance finished", "fids_queued", s.fidsQueued, "bytes_queued", s.bytesQueued)
			s.timeFinished = now.Unix()
			if err := save(); err != nil {
				return err
			}
			if err := m.st.DeleteServerSetting(ctx, "rebal_host"); err != nil {
				return fmt.Errorf("jobs: rebalance done: %w", err)
			}
			return nil
		}
		s.sdevCurrent, s.sourceDevs = s.sourceDevs[0], s.sourceDevs[1:]
		s.sdevLastFid = 0
		if pol.limitType == "device" && pol.limitBy != "none" {
			if s.sdevLimit, err = pol.limitValue(); err != nil {
				return err
			}
		}
		if len(pol.filterDest(w, s)) == 0 {
			return fmt.Errorf("jobs: rebalance cannot find suitable destination devices")
		}
		// A device being emptied must not take new files meanwhile.
		if err := m.st.SetDeviceState(ctx, s.sdevCurrent, store.DeviceDrain); err != nil {
			return fmt.Errorf("jobs: rebalance: drain dev%d: %w", s.sdevCurrent, err)
		}
		if d, ok := w.devs[s.sdevCurrent]; ok {
			d.Status = store.DeviceDrain
		}
	}
	dests := pol.filterDest(w, s)
	if len(dests) == 0 {
		return fmt.Errorf("jobs: rebalance cannot find suitable destination devices")
	}
	limitLeft := func() *int64 {
		if pol.limitType == "global" {
			return &s.limit
		}
		return &s.sdevLimit
	}
	underLimit := func(length int64, take bool) bool {
		lim := limitLeft()
		switch pol.limitBy {
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
	fids, err := m.st.FidsOnDevice(ctx, s.sdevCurrent, s.sdevLastFid, int(rate))
	if err != nil {
		return fmt.Errorf("jobs: fids on dev%d: %w", s.sdevCurrent, err)
	}
	if len(fids) == 0 || !underLimit(0, false) {
		// This source is done; the next pass picks the next one.
		if err := undrain(s.sdevCurrent); err != nil {
			return err
		}
		s.completedDevs = append(s.completedDevs, s.sdevCurrent)
		s.sdevCurrent, s.sdevLastFid, s.sdevLimit = 0, 0, 0
		return save()
	}
	s.sdevLastFid = fids[len(fids)-1]
	var entries []store.QueueEntry
	for _, fid := range fids {
		f, err := m.st.File(ctx, fid)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("jobs: read fid %d: %w", fid, err)
		}
		if !underLimit(f.Length, true) {
			continue
		}
		ds := append([]int(nil), dests...)
		rand.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
		if n, err := strconv.Atoi(pol.useDestDevs); err == nil && n > 0 && n < len(ds) {
			ds = ds[:n]
		}
		entries = append(entries, store.QueueEntry{Fid: fid, DevID: s.sdevCurrent, Arg: joinInts(ds)})
		s.fidsQueued++
		s.bytesQueued += f.Length
	}
	s.timeLatestRun = now.Unix()
	if len(entries) == 0 {
		s.emptyRuns++
		s.timeLatestEmptyRun = now.Unix()
	} else if err := m.st.Enqueue(ctx, store.QueueRebalance, entries...); err != nil {
		return fmt.Errorf("jobs: queue rebalance batch: %w", err)
	}
	return save()
}

func (p rebalPolicy) limitValue() (int64, error) {
	switch p.limitBy {
	case "size":
		return humanToBytes(p.limit)
	case "count":
		n, err := strconv.ParseInt(strings.TrimSpace(p.limit), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("jobs: rebalance limit %q: %w", p.limit, store.ErrInvalid)
		}
		return n, nil
	}
	return 0, nil
}
