// Package migrate moves an installation's metadata from one database to
// another, whatever their backends, through the store contract alone (so
// a backend written elsewhere is a source or a target with nothing written
// for it), and proves the copy: after it, the two databases' canonical
// dumps (store/dump) must hash alike table by table.
//
// The target must be empty, or hold an unfinished move from the same
// source, which is then resumed. From its first write until the check has
// passed, the target holds store.MoveSetting, naming the source and how
// far the copy got; a tracker refuses to start on it meanwhile. Every
// batch of rows is written with that record in one transaction
// (store.Store.ImportRows), so after a crash, a kill -9 or a lost
// connection the record never says more than was written, and a new run
// goes on from there.
//
// A source with a tracker running on it is refused unless the caller says
// it is quiesced: the copy is of a database at rest. A monitor's usage
// report less than LiveWindow old (devices' mb_asof) is taken as a tracker
// running.
package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/dump"
)

// Errors a move ends with before it writes anything.
var (
	// ErrTargetNotEmpty: the target holds rows and no unfinished move.
	ErrTargetNotEmpty = errors.New("migrate: the target database is not empty")
	// ErrOtherMove: the target holds an unfinished move from another
	// source.
	ErrOtherMove = errors.New("migrate: the target holds an unfinished move from another source")
	// ErrSourceLive: a tracker seems to run on the source.
	ErrSourceLive = errors.New("migrate: a tracker is running on the source")
	// ErrSourceMidMove: the source is itself the target of an unfinished
	// move.
	ErrSourceMidMove = errors.New("migrate: the source is the target of an unfinished move")
	// ErrSourceEmpty: the source holds no installation: no domain, host,
	// device or fid (a new database, or a DSN naming the wrong one).
	ErrSourceEmpty = errors.New("migrate: the source holds no MogileFS installation")
	// ErrSourceReplicas: the source names read replicas (2.73's slave
	// settings), which are replicas of it, not of the target.
	ErrSourceReplicas = errors.New("migrate: the source names read replicas (slave_keys)")
	// ErrMismatch: after the copy the two databases' dumps differ.
	ErrMismatch = errors.New("migrate: source and target differ")
)

// LiveWindow is how recent a monitor's usage report on the source must be
// for a tracker to be taken as running there (the monitor reports every
// few seconds).
const LiveWindow = 30 * time.Second

// Options are a move's knobs; the zero value is the defaults.
type Options struct {
	// Batch is how many files one transaction copies (default 2000).
	Batch int
	// SourceQuiesced skips the check for a tracker running on the source.
	SourceQuiesced bool
	// Source names the source in the target's record (a redacted DSN):
	// a resumed move must name the same one.
	Source string
	// Progress, if set, is called after every batch.
	Progress func(Progress)
}

// Progress is how far a move has got.
type Progress struct {
	Phase       string // "namespace", "files", "queues", "fsck_log", "verify", "done"
	Files       int64  // files copied so far (this run and any before it)
	TotalFiles  int64  // files in the source
	Rows        int64  // rows this run wrote
	Started     time.Time
	ResumedFrom int64 // the fid a resumed run went on after; 0 for a fresh one
}

// record is what the target's store.MoveSetting holds.
type record struct {
	Source string `json:"source"`
	Phase  string `json:"phase"`
	// After is the last key copied in Phase: a fid for files and queues
	// (Queue naming the queue), a source log id for fsck_log.
	After int64  `json:"after"`
	Queue string `json:"queue,omitempty"`
}

func (r record) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Move copies src into dst and checks the copy. It returns nil only once
// the two dumps match and dst no longer holds the move's record.
func Move(ctx context.Context, src, dst *store.Store, opts Options) error {
	if opts.Batch <= 0 {
		opts.Batch = 2000
	}
	m := &mover{src: src, dst: dst, opts: opts, started: time.Now()}
	if err := m.checkSource(ctx); err != nil {
		return err
	}
	rec, err := m.checkTarget(ctx)
	if err != nil {
		return err
	}
	if rec.Phase == "" {
		rec = record{Source: opts.Source, Phase: "namespace"}
		if err := dst.SetServerSetting(ctx, store.MoveSetting, rec.String()); err != nil {
			return fmt.Errorf("migrate: mark the target: %w", err)
		}
	}
	m.rec = rec
	if m.total, err = countFiles(ctx, src); err != nil {
		return err
	}
	for _, step := range []struct {
		phase string
		run   func(context.Context) error
	}{
		{"namespace", m.namespace},
		{"files", m.files},
		{"queues", m.queues},
		{"fsck_log", m.fsckLog},
		{"verify", m.floor},
	} {
		if phaseIndex(m.rec.Phase) > phaseIndex(step.phase) {
			continue
		}
		if err := step.run(ctx); err != nil {
			return err
		}
	}
	m.report("verify")
	if err := Verify(ctx, src, dst); err != nil {
		return err
	}
	if err := dst.DeleteServerSetting(ctx, store.MoveSetting); err != nil {
		return fmt.Errorf("migrate: unmark the target: %w", err)
	}
	m.report("done")
	return nil
}

var phases = []string{"namespace", "files", "queues", "fsck_log", "verify"}

func phaseIndex(p string) int { return slices.Index(phases, p) }

type mover struct {
	src, dst *store.Store
	opts     Options
	rec      record
	started  time.Time
	total    int64 // files in the source
	copied   int64 // files in the target
	rows     int64
	resumed  int64
	// dmids and classids map the source's ids to the target's.
	dmids    map[int]int
	classids map[[2]int]int
}

func (m *mover) report(phase string) {
	if m.opts.Progress != nil {
		m.opts.Progress(Progress{Phase: phase, Files: m.copied, TotalFiles: m.total, Rows: m.rows,
			Started: m.started, ResumedFrom: m.resumed})
	}
}

func countFiles(ctx context.Context, st *store.Store) (int64, error) {
	cs, err := st.FileCounts(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: count files: %w", err)
	}
	var n int64
	for _, c := range cs {
		n += c.Files
	}
	return n, nil
}

// checkSource refuses a source that is itself mid-move, holds no
// installation, names read replicas, or has a tracker running.
func (m *mover) checkSource(ctx context.Context) error {
	switch _, err := m.src.ServerSetting(ctx, store.MoveSetting); {
	case err == nil:
		return ErrSourceMidMove
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("migrate: read the source: %w", err)
	}
	domains, err := m.src.Domains(ctx)
	if err != nil {
		return fmt.Errorf("migrate: read the source's domains: %w", err)
	}
	hosts, err := m.src.Hosts(ctx)
	if err != nil {
		return fmt.Errorf("migrate: read the source's hosts: %w", err)
	}
	fids, err := m.src.FidCounter(ctx)
	if err != nil {
		return fmt.Errorf("migrate: read the source's fid counter: %w", err)
	}
	if len(domains) == 0 && len(hosts) == 0 && fids == 0 {
		return ErrSourceEmpty
	}
	// Copied, the slave list would send the new database's reads to
	// replicas of the old one.
	if v, err := m.src.ServerSetting(ctx, "slave_keys"); err == nil && strings.TrimSpace(v) != "" {
		return fmt.Errorf("%w: %s; remove them (mogadm slave delete) before the move, and add the new database's replicas after it",
			ErrSourceReplicas, v)
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("migrate: read the source's settings: %w", err)
	}
	if m.opts.SourceQuiesced {
		return nil
	}
	now, err := m.src.Now(ctx)
	if err != nil {
		return fmt.Errorf("migrate: read the source's clock: %w", err)
	}
	devs, err := m.src.Devices(ctx)
	if err != nil {
		return fmt.Errorf("migrate: read the source's devices: %w", err)
	}
	for _, d := range devs {
		if !d.MBAsOf.IsZero() && now.Sub(d.MBAsOf) < LiveWindow {
			return fmt.Errorf("%w: dev%d's usage was reported %s ago (stop the trackers, or say the source is quiesced)",
				ErrSourceLive, d.ID, now.Sub(d.MBAsOf).Round(time.Second))
		}
	}
	return nil
}

// checkTarget returns the unfinished move's record the target holds, or
// a zero record for an empty target; anything else is refused.
func (m *mover) checkTarget(ctx context.Context) (record, error) {
	v, err := m.dst.ServerSetting(ctx, store.MoveSetting)
	switch {
	case err == nil:
		var r record
		if err := json.Unmarshal([]byte(v), &r); err != nil || phaseIndex(r.Phase) < 0 {
			return record{}, fmt.Errorf("migrate: the target's move record %q is not one of ours: %w", v, ErrOtherMove)
		}
		if r.Source != m.opts.Source {
			return record{}, fmt.Errorf("%w: it is copying from %s, not %s", ErrOtherMove, r.Source, m.opts.Source)
		}
		return r, nil
	case !errors.Is(err, store.ErrNotFound):
		return record{}, fmt.Errorf("migrate: read the target: %w", err)
	}
	var what []string
	settings, err := m.dst.ServerSettings(ctx)
	if err != nil {
		return record{}, fmt.Errorf("migrate: read the target: %w", err)
	}
	for k := range settings {
		if k != "schema_version" {
			what = append(what, "server settings")
			break
		}
	}
	domains, err := m.dst.Domains(ctx)
	if err == nil && len(domains) > 0 {
		what = append(what, "domains")
	}
	hosts, err2 := m.dst.Hosts(ctx)
	if err2 == nil && len(hosts) > 0 {
		what = append(what, "hosts")
	}
	devs, err3 := m.dst.Devices(ctx)
	if err3 == nil && len(devs) > 0 {
		what = append(what, "devices")
	}
	top, err4 := m.dst.MaxFid(ctx)
	if err4 == nil && top > 0 {
		what = append(what, "files")
	}
	if err := errors.Join(err, err2, err3, err4); err != nil {
		return record{}, fmt.Errorf("migrate: read the target: %w", err)
	}
	for _, q := range allQueues {
		n, err := m.dst.QueueLength(ctx, q)
		if err != nil {
			return record{}, fmt.Errorf("migrate: read the target: %w", err)
		}
		if n > 0 {
			what = append(what, q.String()+" queue")
		}
	}
	if on, err := m.dst.FileOnRows(ctx, store.FileOnRow{}, 1); err != nil {
		return record{}, fmt.Errorf("migrate: read the target: %w", err)
	} else if len(on) > 0 {
		what = append(what, "file_on rows")
	}
	if evs, err := m.dst.FsckEvents(ctx, 0, 1); err != nil {
		return record{}, fmt.Errorf("migrate: read the target: %w", err)
	} else if len(evs) > 0 {
		what = append(what, "fsck log")
	}
	if len(what) > 0 {
		return record{}, fmt.Errorf("%w: it holds %v", ErrTargetNotEmpty, what)
	}
	return record{}, nil
}

var allQueues = []store.Queue{store.QueueReplicate, store.QueueDelete, store.QueueFsck, store.QueueRebalance}

// namespace copies settings, domains, classes, hosts and devices, each
// only where the target lacks it (a resumed run finds some there), and
// builds the id maps the files need.
func (m *mover) namespace(ctx context.Context) error {
	m.report("namespace")
	settings, err := m.src.ServerSettings(ctx)
	if err != nil {
		return fmt.Errorf("migrate: source settings: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if k == "schema_version" || k == store.MoveSetting {
			continue
		}
		if err := m.dst.SetServerSetting(ctx, k, settings[k]); err != nil {
			return fmt.Errorf("migrate: setting %q: %w", k, err)
		}
	}
	if err := m.mapNamespace(ctx, true); err != nil {
		return err
	}
	hosts, err := m.src.Hosts(ctx)
	if err != nil {
		return fmt.Errorf("migrate: source hosts: %w", err)
	}
	have, err := m.dst.Hosts(ctx)
	if err != nil {
		return fmt.Errorf("migrate: target hosts: %w", err)
	}
	for _, h := range hosts {
		if slices.ContainsFunc(have, func(x store.Host) bool { return x.ID == h.ID }) {
			continue
		}
		if _, err := m.dst.CreateHost(ctx, h); err != nil {
			return fmt.Errorf("migrate: host %s: %w", h.Name, err)
		}
	}
	devs, err := m.src.Devices(ctx)
	if err != nil {
		return fmt.Errorf("migrate: source devices: %w", err)
	}
	haveDevs, err := m.dst.Devices(ctx)
	if err != nil {
		return fmt.Errorf("migrate: target devices: %w", err)
	}
	for _, d := range devs {
		if !slices.ContainsFunc(haveDevs, func(x store.Device) bool { return x.ID == d.ID }) {
			if _, err := m.dst.CreateDevice(ctx, store.Device{ID: d.ID, HostID: d.HostID, Status: d.Status, Weight: d.Weight}); err != nil {
				return fmt.Errorf("migrate: dev%d: %w", d.ID, err)
			}
		}
		// State and weight again: CreateDevice may not take every state.
		if err := m.dst.SetDeviceState(ctx, d.ID, d.Status); err != nil {
			return fmt.Errorf("migrate: dev%d state: %w", d.ID, err)
		}
		if err := m.dst.SetDeviceWeight(ctx, d.ID, d.Weight); err != nil {
			return fmt.Errorf("migrate: dev%d weight: %w", d.ID, err)
		}
		if d.MBTotal != 0 || d.MBUsed != 0 {
			if err := m.dst.SetDeviceUsage(ctx, d.ID, d.MBTotal, d.MBUsed); err != nil {
				return fmt.Errorf("migrate: dev%d usage: %w", d.ID, err)
			}
		}
	}
	return m.advance(ctx, record{Phase: "files"})
}

// mapNamespace maps the source's domain and class ids to the target's by
// name, creating what the target lacks when create is set.
func (m *mover) mapNamespace(ctx context.Context, create bool) error {
	sd, err := m.src.Domains(ctx)
	if err != nil {
		return fmt.Errorf("migrate: source domains: %w", err)
	}
	sc, err := m.src.Classes(ctx)
	if err != nil {
		return fmt.Errorf("migrate: source classes: %w", err)
	}
	td, err := m.dst.Domains(ctx)
	if err != nil {
		return fmt.Errorf("migrate: target domains: %w", err)
	}
	tc, err := m.dst.Classes(ctx)
	if err != nil {
		return fmt.Errorf("migrate: target classes: %w", err)
	}
	byName := map[string]int{}
	for _, d := range td {
		byName[d.Name] = d.ID
	}
	m.dmids = map[int]int{}
	// In id order, so that a fresh target numbers them as the source did
	// where the source has no gaps.
	slices.SortFunc(sd, func(a, b store.Domain) int { return a.ID - b.ID })
	for _, d := range sd {
		id, ok := byName[d.Name]
		if !ok {
			if !create {
				return fmt.Errorf("migrate: domain %q is not in the target", d.Name)
			}
			nd, err := m.dst.CreateDomain(ctx, d.Name)
			if err != nil {
				return fmt.Errorf("migrate: domain %q: %w", d.Name, err)
			}
			id = nd.ID
		}
		m.dmids[d.ID] = id
	}
	type ck struct {
		dmid int
		name string
	}
	cbyName := map[ck]int{}
	for _, c := range tc {
		cbyName[ck{c.DomainID, c.Name}] = c.ID
	}
	m.classids = map[[2]int]int{}
	slices.SortFunc(sc, func(a, b store.Class) int { return cmpInts(a.DomainID, b.DomainID, a.ID, b.ID) })
	for _, c := range sc {
		dm := m.dmids[c.DomainID]
		id, ok := cbyName[ck{dm, c.Name}]
		if !ok {
			if !create {
				return fmt.Errorf("migrate: class %q is not in the target", c.Name)
			}
			nc := c
			nc.DomainID, nc.ID = dm, 0
			got, err := m.dst.CreateClass(ctx, nc)
			if err != nil {
				return fmt.Errorf("migrate: class %q: %w", c.Name, err)
			}
			id = got.ID
		}
		m.classids[[2]int{c.DomainID, c.ID}] = id
	}
	return nil
}

func cmpInts(a1, b1, a2, b2 int) int {
	if a1 != b1 {
		return a1 - b1
	}
	return a2 - b2
}

// advance records a finished phase on the target.
func (m *mover) advance(ctx context.Context, r record) error {
	r.Source = m.opts.Source
	if err := m.dst.SetServerSetting(ctx, store.MoveSetting, r.String()); err != nil {
		return fmt.Errorf("migrate: record progress: %w", err)
	}
	m.rec = r
	return nil
}

// files copies files with their copies and checksums, batch by batch, in
// fid order: each batch covers the fids after the last one's up to its
// last file (the last batch up to the end), so copies and checksums of
// fids with no file row (a deleted file's copies await the delete job)
// go with the batch whose range holds them.
func (m *mover) files(ctx context.Context) error {
	if len(m.dmids) == 0 {
		if err := m.mapNamespace(ctx, false); err != nil {
			return err
		}
	}
	after := m.rec.After
	m.resumed = after
	if after > 0 {
		n, err := countFiles(ctx, m.dst)
		if err != nil {
			return err
		}
		m.copied = n
	}
	m.report("files")
	onAfter := store.FileOnRow{Fid: after, DevID: math.MaxInt32}
	sumAfter := after
	for {
		fs, err := m.src.Files(ctx, after+1, math.MaxInt64, m.opts.Batch)
		if err != nil {
			return fmt.Errorf("migrate: source files after fid %d: %w", after, err)
		}
		last := len(fs) < m.opts.Batch
		to := int64(math.MaxInt64)
		if !last {
			to = fs[len(fs)-1].Fid
		}
		im := store.Import{}
		for _, f := range fs {
			dm, ok := m.dmids[f.DomainID]
			if !ok {
				return fmt.Errorf("migrate: fid %d names dmid %d, which the source's domain table lacks", f.Fid, f.DomainID)
			}
			// A class row that is gone leaves its files in the domain's
			// default class, as MogileFS reads them; its id must not
			// come to name another class of the target.
			f.DomainID, f.ClassID = dm, m.classids[[2]int{f.DomainID, f.ClassID}]
			im.Files = append(im.Files, f)
		}
		if im.FileOn, onAfter, err = readFileOn(ctx, m.src, onAfter, to); err != nil {
			return err
		}
		if im.Checksums, sumAfter, err = readChecksums(ctx, m.src, sumAfter, to); err != nil {
			return err
		}
		next := record{Phase: "files", After: to}
		if last {
			next = record{Phase: "queues", Queue: allQueues[0].String()}
		}
		next.Source = m.opts.Source
		im.Settings = map[string]string{store.MoveSetting: next.String()}
		if err := m.dst.ImportRows(ctx, im); err != nil {
			return fmt.Errorf("migrate: copy fids %d-%d: %w", after+1, to, err)
		}
		m.rec = next
		m.copied += int64(len(im.Files))
		m.rows += int64(len(im.Files) + len(im.FileOn) + len(im.Checksums))
		m.report("files")
		if last {
			return nil
		}
		after = to
	}
}

// readFileOn reads the source's copies after `after` up to fid to.
func readFileOn(ctx context.Context, src *store.Store, after store.FileOnRow, to int64) ([]store.FileOnRow, store.FileOnRow, error) {
	var out []store.FileOnRow
	for {
		rows, err := src.FileOnRows(ctx, after, pageSize)
		if err != nil {
			return nil, after, fmt.Errorf("migrate: source file_on after fid %d: %w", after.Fid, err)
		}
		for _, r := range rows {
			if r.Fid > to {
				return out, after, nil
			}
			out = append(out, r)
			after = r
		}
		if len(rows) < pageSize {
			return out, after, nil
		}
	}
}

// readChecksums reads the source's checksums after fid after up to fid to.
func readChecksums(ctx context.Context, src *store.Store, after, to int64) ([]store.Checksum, int64, error) {
	var out []store.Checksum
	for {
		cs, err := src.Checksums(ctx, after, pageSize)
		if err != nil {
			return nil, after, fmt.Errorf("migrate: source checksums after fid %d: %w", after, err)
		}
		for _, c := range cs {
			if c.Fid > to {
				return out, after, nil
			}
			out = append(out, c)
			after = c.Fid
		}
		if len(cs) < pageSize {
			return out, after, nil
		}
	}
}

// pageSize is how many rows one read of the source asks for where a batch
// is bounded by fid rather than by count.
const pageSize = 5000

// queues copies the four queues, each in fid order, a batch per
// transaction with the record of how far it got.
func (m *mover) queues(ctx context.Context) error {
	start := slices.IndexFunc(allQueues, func(q store.Queue) bool { return q.String() == m.rec.Queue })
	if start < 0 {
		start = 0
	}
	for i := start; i < len(allQueues); i++ {
		q := allQueues[i]
		after := int64(0)
		if i == start {
			after = m.rec.After
		}
		for {
			its, err := m.src.QueueItems(ctx, q, after, m.opts.Batch)
			if err != nil {
				return fmt.Errorf("migrate: source %s queue after fid %d: %w", q, after, err)
			}
			next := record{Phase: "queues", Queue: q.String()}
			if len(its) > 0 {
				next.After = its[len(its)-1].Fid
			}
			done := len(its) < m.opts.Batch
			if done {
				if i+1 < len(allQueues) {
					next = record{Phase: "queues", Queue: allQueues[i+1].String()}
				} else {
					next = record{Phase: "fsck_log"}
				}
			}
			next.Source = m.opts.Source
			if err := m.dst.ImportRows(ctx, store.Import{Queue: its, Settings: map[string]string{store.MoveSetting: next.String()}}); err != nil {
				return fmt.Errorf("migrate: copy the %s queue after fid %d: %w", q, after, err)
			}
			m.rec = next
			m.rows += int64(len(its))
			m.report("queues")
			if done {
				break
			}
			after = next.After
		}
	}
	return nil
}

// fsckLog copies the fsck log in the source's log id order.
func (m *mover) fsckLog(ctx context.Context) error {
	after := m.rec.After
	for {
		evs, err := m.src.FsckEvents(ctx, after, m.opts.Batch)
		if err != nil {
			return fmt.Errorf("migrate: source fsck log after %d: %w", after, err)
		}
		next := record{Phase: "fsck_log", After: after}
		if len(evs) > 0 {
			next.After = evs[len(evs)-1].LogID
		}
		done := len(evs) < m.opts.Batch
		if done {
			next = record{Phase: "verify"}
		}
		next.Source = m.opts.Source
		if err := m.dst.ImportRows(ctx, store.Import{FsckLog: evs, Settings: map[string]string{store.MoveSetting: next.String()}}); err != nil {
			return fmt.Errorf("migrate: copy the fsck log after %d: %w", after, err)
		}
		m.rec = next
		m.rows += int64(len(evs))
		m.report("fsck_log")
		if done {
			return nil
		}
		after = next.After
	}
}

// floor raises the target's fid counter to the source's: every fid the
// source has handed out, an upload in flight's (tempfiles are not copied)
// or one whose rows are all gone, stays handed out.
func (m *mover) floor(ctx context.Context) error {
	top, err := m.src.FidCounter(ctx)
	if err != nil {
		return fmt.Errorf("migrate: the source's fid counter: %w", err)
	}
	if top == 0 {
		return nil
	}
	if err := m.dst.ImportRows(ctx, store.Import{FidFloor: top}); err != nil {
		return fmt.Errorf("migrate: raise the target's fid counter to %d: %w", top, err)
	}
	return nil
}

// Verify compares the two databases' canonical dumps table by table and
// returns ErrMismatch naming the tables that differ.
func Verify(ctx context.Context, a, b *store.Store) error {
	da, err := dump.Digest(ctx, a)
	if err != nil {
		return fmt.Errorf("migrate: digest of the source: %w", err)
	}
	db, err := dump.Digest(ctx, b)
	if err != nil {
		return fmt.Errorf("migrate: digest of the target: %w", err)
	}
	var diff []string
	for i := range da {
		if da[i] != db[i] {
			diff = append(diff, fmt.Sprintf("%s (%d rows against %d)", da[i].Table, da[i].Rows, db[i].Rows))
		}
	}
	if len(diff) > 0 {
		return fmt.Errorf("%w: %v", ErrMismatch, diff)
	}
	return nil
}
