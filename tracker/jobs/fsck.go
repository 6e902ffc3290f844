package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// Fsck event codes (Worker/Fsck.pm).
const (
	evNoPaths      = "NOPA"
	evPolicy       = "POVI"
	evFileMissing  = "MISS"
	evBadLength    = "BLEN"
	evCantFix      = "GONE"
	evStartSearch  = "SRCH"
	evFoundFid     = "FOND"
	evReReplicate  = "REPL"
	evBadCount     = "BCNT"
	evBadChecksum  = "BSUM"
	evNoChecksum   = "NSUM"
	evMultiSum     = "MSUM"
	evBadHashType  = "BALG"
	fsckStallRetry = time.Minute // a fid we could not check for connectivity comes back
)

// errStalled: a storage node did not answer; check the fid later.
var errStalled = errors.New("jobs: fsck stalled")

// errNotObserved: a device of the fid is not checked by the monitor yet;
// check the fid again soon, without counting a failure.
var errNotObserved = errors.New("jobs: device not observed yet")

// fsckWorker works the fsck queue (Worker::Fsck).
func (m *Manager) fsckWorker(stop context.Context) {
	m.queueWorker(stop, JobFsck, []store.Queue{store.QueueFsck}, m.fsckItem)
}

// fsckOpts are the settings read per item, as the original reads them per
// batch.
type fsckOpts struct {
	policyOnly bool
	// checksumOff and checksum are fsck_checksum: "off", or an algorithm
	// every file is digested with (HashNone: only hashed classes are).
	checksumOff bool
	checksum    store.HashType
	skipCount   bool
}

func (m *Manager) fsckSettings(ctx context.Context) (fsckOpts, error) {
	set, err := m.st.ServerSettings(ctx)
	if err != nil {
		return fsckOpts{}, fmt.Errorf("jobs: read settings: %w", err)
	}
	o := fsckOpts{policyOnly: truthy(set["fsck_opt_policy_only"]), skipCount: truthy(set["skip_devcount"])}
	// An unknown name counts as unset, as Checksum->valid_alg has it.
	if alg := set["fsck_checksum"]; alg == "off" {
		o.checksumOff = true
	} else if ht, ok := store.ParseHashType(alg); ok {
		o.checksum = ht
	}
	return o, nil
}

func truthy(s string) bool { return s != "" && s != "0" }

// fsckItem checks one fid; a fid that could not be checked for want of a
// storage node is put off, everything else leaves the queue.
func (m *Manager) fsckItem(ctx context.Context, it store.QueueItem) error {
	q := store.QueueFsck
	o, err := m.fsckSettings(ctx)
	if err != nil {
		return err
	}
	err = m.checkFid(ctx, it.Fid, o)
	if errors.Is(err, errNotObserved) {
		return m.reschedule(ctx, q, it.Fid, m.settleDelay(), false)
	}
	if errors.Is(err, errStalled) {
		if rerr := m.reschedule(ctx, q, it.Fid, fsckStallRetry, true); rerr != nil {
			return rerr
		}
		return err
	}
	if err != nil {
		return err
	}
	return m.finish(ctx, q, it.Fid)
}

func (m *Manager) fsckLog(ctx context.Context, fid int64, code string, devid int) error {
	if err := m.st.AppendFsckLog(ctx, store.FsckEvent{Fid: fid, Code: code, DevID: devid}); err != nil {
		return fmt.Errorf("jobs: fsck log %s fid %d: %w", code, fid, err)
	}
	return nil
}

// fidState is what fsck knows about a fid.
type fidState struct {
	f   store.File
	w   *world
	cls store.Class
	pol cluster.ReplPolicy
	on  []int
}

func (m *Manager) loadFid(ctx context.Context, fid int64) (*fidState, error) {
	f, err := m.st.File(ctx, fid)
	if err != nil {
		return nil, fmt.Errorf("jobs: read fid %d: %w", fid, err)
	}
	on, err := m.st.FileOn(ctx, fid)
	if err != nil {
		return nil, fmt.Errorf("jobs: file_on of fid %d: %w", fid, err)
	}
	w, err := m.loadWorld(ctx, on...)
	if err != nil {
		return nil, err
	}
	cls := w.class(f)
	pol, err := parsePolicy(cls.ReplPolicy)
	if err != nil {
		return nil, err
	}
	return &fidState{f: f, w: w, cls: cls, pol: pol, on: on}, nil
}

// meetsPolicy is FID::devids_meet_policy.
func (s *fidState) meetsPolicy() bool {
	var devs []*device
	for _, id := range s.on {
		if d, ok := s.w.devs[id]; ok {
			devs = append(devs, d)
		}
	}
	rr := s.pol.ReplicateTo(devs, s.w.devs, map[int]bool{}, s.cls.MinDevCount, s.w.set)
	return rr.Happy && !rr.TooHappy
}

// checkFid is Fsck.pm's check_fid: cheap checks first, the slow fix path
// (under the fid's replicate lock) when something looks wrong.
func (m *Manager) checkFid(ctx context.Context, fid int64, o fsckOpts) error {
	s, err := m.loadFid(ctx, fid)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted before we got to it
	}
	if err != nil {
		return err
	}
	if len(s.on) == 0 {
		return m.fsckFix(ctx, fid, o, evNoPaths, func(s *fidState) bool { return len(s.on) > 0 })
	}
	if !s.meetsPolicy() {
		return m.fsckFix(ctx, fid, o, evPolicy, (*fidState).meetsPolicy)
	}
	if err := m.maybeFixDevcount(ctx, s, o); err != nil {
		return err
	}
	if s.cls.HashType != store.HashNone {
		if _, err := m.st.Checksum(ctx, fid); errors.Is(err, store.ErrNotFound) {
			return m.fsckFix(ctx, fid, o, "", nil)
		} else if err != nil {
			return fmt.Errorf("jobs: checksum of fid %d: %w", fid, err)
		}
	}
	if o.policyOnly {
		return nil
	}
	if o.checksum != store.HashNone {
		return m.fsckFix(ctx, fid, o, "", nil)
	}
	for _, id := range s.on {
		d := s.w.devs[id]
		if d == nil || d.Dead() {
			return m.fsckFix(ctx, fid, o, "", nil)
		}
		if d.Unobserved() {
			return fmt.Errorf("%w: dev%d", errNotObserved, id)
		}
		if !d.ShouldReadFrom() {
			m.logUnreachable(d)
			return fmt.Errorf("%w: dev%d not readable", errStalled, id)
		}
		size, err := m.nodes.Size(ctx, d.FidURL(fid, true))
		if err != nil && !errors.Is(err, cluster.ErrMissing) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			m.logConnectivity(d)
			return fmt.Errorf("%w: dev%d: %w", errStalled, id, err)
		}
		if err != nil || size != s.f.Length {
			return m.fsckFix(ctx, fid, o, "", nil)
		}
	}
	if s.cls.HashType != store.HashNone && !o.checksumOff {
		return m.fsckFix(ctx, fid, o, "", nil)
	}
	return nil
}

// fsckFix takes the fid's lock, rechecks a lockless finding (logging it if
// it holds), and runs fixFid, logging GONE when nothing can be done.
func (m *Manager) fsckFix(ctx context.Context, fid int64, o fsckOpts, reason string, recheck func(*fidState) bool) error {
	l, err := m.lockFid(ctx, fid)
	if errors.Is(err, store.ErrLockTimeout) {
		return fmt.Errorf("%w: fid %d locked", errStalled, fid)
	}
	if err != nil {
		return err
	}
	defer m.release(l)
	ctx = store.WithFence(ctx, l)
	s, err := m.loadFid(ctx, fid)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	fixed := false
	if recheck != nil {
		fixed = recheck(s)
		if !fixed {
			if err := m.fsckLog(ctx, fid, reason, 0); err != nil {
				return err
			}
		}
	}
	if !fixed {
		fixed, err = m.fixFid(ctx, s, o)
		if err != nil {
			return err
		}
	}
	if !fixed {
		return m.fsckLog(ctx, fid, evCantFix, 0)
	}
	return nil
}

// fixFid is Fsck.pm's slow path: look at every copy (size, and checksum
// when the class or fsck_checksum asks), search every device when no copy
// is good, forget bad copies, reconcile checksums, and queue replication
// when the policy is no longer met.
func (m *Manager) fixFid(ctx context.Context, s *fidState, o fsckOpts) (bool, error) {
	fid := s.f.Fid
	sc, err := m.newFidScan(ctx, s, o)
	if err != nil {
		return false, err
	}
	if err := sc.check(ctx, s.on, false); err != nil {
		return false, err
	}
	if len(sc.good) == 0 {
		found, err := sc.search(ctx)
		if err != nil || !found {
			return false, err
		}
	}
	if err := m.forgetDevs(ctx, fid, sc.bad); err != nil {
		return false, err
	}
	if sc.alg != store.HashNone {
		if err := m.fixChecksums(ctx, s, o, sc.alg, sc.cur, sc.sums, sc.sumOrder); err != nil {
			return false, err
		}
	}

	s2, err := m.loadFid(ctx, fid)
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if !s2.meetsPolicy() {
		if err := m.st.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: fid, After: time.Second}); err != nil {
			return false, fmt.Errorf("jobs: queue fid %d for replication: %w", fid, err)
		}
		return true, m.fsckLog(ctx, fid, evReReplicate, 0)
	}
	return true, m.maybeFixDevcount(ctx, s2, o)
}

// fidScan is fixFid's look at a file's copies: which devices hold good
// ones, which bad, and the digests of the good ones.
type fidScan struct {
	m *Manager
	s *fidState
	// alg is the class's algorithm, else fsck_checksum's (class->hashname
	// || opt_checksum): fsck_checksum = off only keeps a hashed class's
	// files off this slow path, it does not stop digesting them here.
	alg       store.HashType
	cur       *store.Checksum // the stored checksum, nil if none
	good, bad []int
	checked   map[int]bool
	sums      map[string][]int // good devices by digest
	sumOrder  []string         // the digests in the order first seen
}

func (m *Manager) newFidScan(ctx context.Context, s *fidState, o fsckOpts) (*fidScan, error) {
	sc := &fidScan{m: m, s: s, alg: s.cls.HashType, checked: map[int]bool{}, sums: map[string][]int{}}
	if sc.alg == store.HashNone {
		sc.alg = o.checksum
	}
	if c, err := m.st.Checksum(ctx, s.f.Fid); err == nil {
		sc.cur = &c
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("jobs: checksum of fid %d: %w", s.f.Fid, err)
	}
	return sc, nil
}

// copyLook is what one device's copy turned out to be.
type copyLook int

const (
	copyGood  copyLook = iota
	copyBad            // missing, wrong length, or on a device that is gone
	copyWrong          // searching: the right length but not the file's bytes; not a copy, not forgotten
)

// check looks at the copies on devids not looked at yet. Desperate is the
// search of every device after no listed copy was good: nothing is
// logged per device, and the first good copy ends it.
func (sc *fidScan) check(ctx context.Context, devids []int, desperate bool) error {
	for _, id := range devids {
		if sc.checked[id] {
			continue
		}
		sc.checked[id] = true
		look, sum, err := sc.lookAt(ctx, id, desperate)
		if err != nil {
			return err
		}
		switch look {
		case copyBad:
			sc.bad = append(sc.bad, id)
		case copyGood:
			if sc.alg != store.HashNone {
				k := string(sum)
				if _, ok := sc.sums[k]; !ok {
					sc.sumOrder = append(sc.sumOrder, k)
				}
				sc.sums[k] = append(sc.sums[k], id)
			}
			sc.good = append(sc.good, id)
			if desperate {
				return nil
			}
		}
	}
	return nil
}

// lookAt is one device's copy of the file, and its digest when alg is
// set. A device it cannot judge now (not observed yet, unreachable, a
// failed read) stalls the whole check: an error, so that nothing is
// decided on what could not be seen.
func (sc *fidScan) lookAt(ctx context.Context, id int, desperate bool) (copyLook, []byte, error) {
	m, fid, length := sc.m, sc.s.f.Fid, sc.s.f.Length
	d := sc.s.w.devs[id]
	if d == nil || d.Dead() {
		return copyBad, nil, nil
	}
	if d.Unobserved() {
		return 0, nil, fmt.Errorf("%w: dev%d", errNotObserved, id)
	}
	if !d.ShouldReadFrom() {
		m.logUnreachable(d)
		return 0, nil, fmt.Errorf("%w: dev%d unreachable", errStalled, id)
	}
	size, missing, err := m.lookAtCopy(ctx, d, fid, length)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		m.logConnectivity(d)
		return 0, nil, fmt.Errorf("%w: dev%d: %w", errStalled, id, err)
	}
	if missing || size != length {
		if !desperate {
			code := evBadLength
			if missing {
				code = evFileMissing
			}
			if err := m.fsckLog(ctx, fid, code, id); err != nil {
				return 0, nil, err
			}
		}
		return copyBad, nil, nil
	}
	if sc.alg == store.HashNone {
		return copyGood, nil, nil
	}
	sum, err := m.digest(ctx, d, fid, length, sc.alg, true, "fsck")
	if errors.Is(err, cluster.ErrMissing) {
		// DELETE could have hit right after the size check.
		if !desperate {
			if err := m.fsckLog(ctx, fid, evFileMissing, id); err != nil {
				return 0, nil, err
			}
		}
		return copyBad, nil, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		return 0, nil, fmt.Errorf("%w: dev%d: %w", errStalled, id, err)
	}
	if desperate && sc.cur != nil && sc.cur.HashType == sc.alg && !bytes.Equal(sum, sc.cur.Sum) {
		// Bytes of the right length that are not the file's: no copy of
		// it.
		return copyWrong, nil, nil
	}
	return copyGood, sum, nil
}

// search looks for a good copy on every device fsck may search, after
// none of the listed copies was good, and records the first it finds.
// found is false when there is none anywhere.
func (sc *fidScan) search(ctx context.Context) (found bool, err error) {
	m, fid := sc.m, sc.s.f.Fid
	if err := m.fsckLog(ctx, fid, evStartSearch, 0); err != nil {
		return false, err
	}
	var all []int
	for id, d := range sc.s.w.devs {
		if d.FsckSearchOn() {
			all = append(all, id)
		}
	}
	rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	if err := sc.check(ctx, all, true); err != nil {
		return false, err
	}
	if len(sc.good) == 0 {
		// No good copy anywhere: forget only the copies on devices that
		// are gone (dead or deleted). A copy that answered wrongly twice
		// may still be the last of the file's bytes (a device that comes
		// back, a node that lied): it stays for an operator, and GONE
		// says so.
		var gone []int
		for _, id := range sc.bad {
			if d := sc.s.w.devs[id]; d == nil || d.Dead() {
				gone = append(gone, id)
			}
		}
		if err := m.forgetDevs(ctx, fid, gone); err != nil {
			return false, err
		}
		if _, err := m.st.SyncDevCount(ctx, fid); err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, fmt.Errorf("jobs: sync devcount of fid %d: %w", fid, err)
		}
		return false, nil
	}
	if err := m.noteOnDevice(ctx, fid, sc.good[0]); err != nil {
		return false, err
	}
	return true, m.fsckLog(ctx, fid, evFoundFid, 0)
}

func (m *Manager) forgetDevs(ctx context.Context, fid int64, devids []int) error {
	for _, id := range devids {
		m.log.Warn("removing file_on mapping", "job", JobFsck, "fid", fid, "dev", id)
		if err := m.forgetOnDevice(ctx, fid, id); err != nil {
			return err
		}
	}
	return nil
}

// fixChecksums is Fsck.pm's fix_checksums: one checksum on every copy is
// compared with (or, for a hashed class, stored as) the known one, cur;
// copies that disagree with a known good checksum are forgotten, so
// replication rebuilds them. No single read decides: a copy is forgotten
// only when a second digest of it disagrees with cur too, and never unless
// another copy matches cur; a checksum is recorded only when two reads
// agree (two copies, or one copy digested twice); copies that disagree
// with nothing recorded to decide between them are all kept.
func (m *Manager) fixChecksums(ctx context.Context, s *fidState, o fsckOpts, alg store.HashType, cur *store.Checksum, sums map[string][]int, order []string) error {
	fid := s.f.Fid
	switch {
	case len(sums) == 1:
		disk := []byte(order[0])
		if cur != nil {
			if !bytes.Equal(cur.Sum, disk) {
				m.log.Warn("checksum does not match disk", "job", JobFsck, "fid", fid,
					"want", fmt.Sprintf("%s:%x", cur.HashType, cur.Sum), "disk", fmt.Sprintf("%s:%x", alg, disk))
				if cur.HashType != alg {
					return m.fsckLog(ctx, fid, evBadHashType, 0)
				}
				return m.fsckLog(ctx, fid, evBadChecksum, 0)
			}
			return nil
		}
		if s.cls.HashType != store.HashNone {
			if err := m.fsckLog(ctx, fid, evNoChecksum, 0); err != nil {
				return err
			}
			if devs := sums[order[0]]; len(devs) == 1 {
				ok, err := m.digestAgain(ctx, s, devs[0], alg, disk)
				if err != nil {
					return err
				}
				if !ok {
					m.log.Warn("two reads of the only copy disagree; no checksum recorded", "job", JobFsck, "fid", fid, "dev", devs[0])
					return nil
				}
			}
			if err := m.st.SetChecksum(ctx, store.Checksum{Fid: fid, HashType: s.cls.HashType, Sum: disk}); err != nil {
				return fmt.Errorf("jobs: store checksum of fid %d: %w", fid, err)
			}
		}
		return nil
	case len(sums) == 0:
		return nil
	case cur != nil:
		if good := sums[string(cur.Sum)]; len(good) > 0 {
			var badDevs []int
			for _, k := range order {
				if k == string(cur.Sum) {
					continue
				}
				for _, id := range sums[k] {
					ok, err := m.digestAgain(ctx, s, id, alg, cur.Sum)
					if err != nil {
						return err
					}
					if !ok {
						badDevs = append(badDevs, id)
					}
				}
			}
			return m.forgetDevs(ctx, fid, badDevs)
		}
		if s.cls.HashType == store.HashNone {
			return nil
		}
		return m.fsckLog(ctx, fid, evBadChecksum, 0)
	case o.checksumOff || o.checksum != store.HashNone:
		// opt_checksum is set (even to "off": a hashed class brought
		// us here): nothing says which copy is right.
		return m.fsckLog(ctx, fid, evMultiSum, 0)
	default:
		if s.cls.HashType == store.HashNone {
			return nil
		}
		return m.fsckLog(ctx, fid, evBadChecksum, 0)
	}
}

// digestAgain digests devid's copy of the fid once more and reports
// whether it gives want. A copy that cannot be read now stalls the check
// (errStalled, the fid comes back later): nothing is decided on a failed
// read.
func (m *Manager) digestAgain(ctx context.Context, s *fidState, devid int, alg store.HashType, want []byte) (bool, error) {
	d := s.w.devs[devid]
	if d == nil {
		return false, nil
	}
	sum, err := m.digest(ctx, d, s.f.Fid, s.f.Length, alg, true, "fsck")
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, fmt.Errorf("%w: dev%d: %w", errStalled, devid, err)
	}
	return bytes.Equal(sum, want), nil
}

// lookAtCopy is a copy's length by HEAD, asked a second time before the
// copy is judged missing or short: one answer does not decide. err is
// for a node that could not be asked.
func (m *Manager) lookAtCopy(ctx context.Context, d *device, fid, length int64) (size int64, missing bool, err error) {
	for try := 0; ; try++ {
		size, err = m.nodes.Size(ctx, d.FidURL(fid, true))
		missing = errors.Is(err, cluster.ErrMissing)
		if err != nil && !missing {
			return 0, false, err
		}
		if (!missing && size == length) || try == 1 {
			return size, missing, nil
		}
	}
}

// maybeFixDevcount logs BCNT and repairs devcount when it disagrees with
// file_on (unless skip_devcount is set).
func (m *Manager) maybeFixDevcount(ctx context.Context, s *fidState, o fsckOpts) error {
	if o.skipCount || len(s.on) == s.f.DevCount {
		return nil
	}
	if err := m.fsckLog(ctx, s.f.Fid, evBadCount, 0); err != nil {
		return err
	}
	l, err := m.st.Lock(ctx, devcountLockName(s.f.Fid), devcountLockWait)
	if err != nil {
		return fmt.Errorf("jobs: lock devcount of fid %d: %w", s.f.Fid, err)
	}
	defer m.release(l)
	if _, err := m.st.SyncDevCount(store.WithFence(ctx, l), s.f.Fid); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("jobs: sync devcount of fid %d: %w", s.f.Fid, err)
	}
	return nil
}

// injectFsck is JobMaster's _inject_fsck_queues: while fsck_host names
// this tracker, queue the next batch of fids after fsck_highest_fid_checked
// (up to fsck_fid_at_end), or, when none is left, mark fsck stopped.
func (m *Manager) injectFsck(ctx context.Context) error {
	host, err := m.setting(ctx, "fsck_host")
	if err != nil || host == "" || host != m.host {
		return err
	}
	if err := m.summarizeFsckLog(ctx); err != nil {
		return err
	}
	qlen, err := m.st.QueueLength(ctx, store.QueueFsck)
	if err != nil {
		return fmt.Errorf("jobs: fsck queue length: %w", err)
	}
	if qlen >= m.intSetting(ctx, "queue_size_for_fsck", 20000) {
		return nil
	}
	maxChecked := m.intSetting(ctx, "fsck_highest_fid_checked", 0)
	atEnd := m.intSetting(ctx, "fsck_fid_at_end", 0)
	rate := m.intSetting(ctx, "queue_rate_for_fsck", 1000)
	var fids []store.File
	if atEnd > maxChecked {
		fids, err = m.st.Files(ctx, maxChecked+1, atEnd, int(rate))
		if err != nil {
			return fmt.Errorf("jobs: list fids for fsck: %w", err)
		}
	}
	if len(fids) == 0 {
		// Set fsck_host last: scripts take its absence as "done".
		if err := m.st.SetServerSetting(ctx, "fsck_highest_fid_checked", strconv.FormatInt(maxChecked, 10)); err != nil {
			return fmt.Errorf("jobs: fsck done: %w", err)
		}
		now, err := m.st.Now(ctx)
		if err != nil {
			return fmt.Errorf("jobs: fsck done: %w", err)
		}
		if err := m.st.SetServerSetting(ctx, "fsck_stop_time", strconv.FormatInt(now.Unix(), 10)); err != nil {
			return fmt.Errorf("jobs: fsck done: %w", err)
		}
		if err := m.st.DeleteServerSetting(ctx, "fsck_host"); err != nil {
			return fmt.Errorf("jobs: fsck done: %w", err)
		}
		m.log.Info("fsck: every fid queued", "job", JobMaster, "highest", maxChecked)
		return nil
	}
	entries := make([]store.QueueEntry, len(fids))
	for i, f := range fids {
		entries[i] = store.QueueEntry{Fid: f.Fid}
	}
	if err := m.st.Enqueue(ctx, store.QueueFsck, entries...); err != nil {
		return fmt.Errorf("jobs: queue fids for fsck: %w", err)
	}
	last := fids[len(fids)-1].Fid
	if err := m.st.SetServerSetting(ctx, "fsck_highest_fid_checked", strconv.FormatInt(last, 10)); err != nil {
		return fmt.Errorf("jobs: advance fsck: %w", err)
	}
	return nil
}

// summarizeFsckLog adds the events logged since fsck_logid_processed to the
// fsck_sum_evcount_<code> settings !fsck_status reports
// (Store::fsck_log_summarize).
func (m *Manager) summarizeFsckLog(ctx context.Context) error {
	l, err := m.st.Lock(ctx, "mgfs:fscksum", 0)
	if errors.Is(err, store.ErrLockTimeout) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jobs: lock mgfs:fscksum: %w", err)
	}
	defer m.release(l)
	ctx = store.WithFence(ctx, l) // a summary written after a newer grant would count rows twice
	after := m.intSetting(ctx, "fsck_logid_processed", 0)
	counts := map[string]int64{}
	last := after
	for {
		evs, err := m.st.FsckEvents(ctx, last, 1000)
		if err != nil {
			return fmt.Errorf("jobs: read fsck log: %w", err)
		}
		for _, e := range evs {
			counts[e.Code]++
			last = e.LogID
		}
		if len(evs) < 1000 {
			break
		}
	}
	if last == after {
		return nil
	}
	for code, n := range counts {
		if _, err := m.st.IncrServerSetting(ctx, "fsck_sum_evcount_"+code, n); err != nil {
			return fmt.Errorf("jobs: summarize fsck log: %w", err)
		}
	}
	if err := m.st.SetServerSetting(ctx, "fsck_logid_processed", strconv.FormatInt(last, 10)); err != nil {
		return fmt.Errorf("jobs: summarize fsck log: %w", err)
	}
	return nil
}

// setting reads a server setting, "" when absent.
func (m *Manager) setting(ctx context.Context, key string) (string, error) {
	v, err := m.st.ServerSetting(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("jobs: setting %s: %w", key, err)
	}
	return v, nil
}

// intSetting reads an integer setting; absent, empty or 0 give def, as
// Perl's `|| default` does.
func (m *Manager) intSetting(ctx context.Context, key string, def int64) int64 {
	v, err := m.setting(ctx, key)
	if err != nil || v == "" {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n == 0 {
		return def
	}
	return n
}

// logConnectivity is the original's line for a copy fsck cannot reach,
// which operators' scripts wait for on !watch.
func (m *Manager) logConnectivity(d *device) {
	m.log.Warn(fmt.Sprintf("Connectivity problem reaching device %d on host %s", d.ID, d.Host.IP), "job", JobFsck)
}

// logUnreachable logs the connectivity line for a copy fsck skips because
// the monitor saw its device unreachable (its state allows reading): the
// original tried such a copy and logged the line when that failed.
func (m *Manager) logUnreachable(d *device) {
	if d.CanReadFrom() {
		m.logConnectivity(d)
	}
}
