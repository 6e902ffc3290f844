package conformance

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// SeedEnv names the environment variable that fixes the seed of the
// Differential case, to replay a failure: the case logs the seed it used.
const SeedEnv = "GOMOGILE_CONFORMANCE_SEED"

// diffOps is how many random operations the Differential case applies.
const diffOps = 600

// Pools the generator draws from. Keys and prefixes mix LIKE
// metacharacters, case and non-ASCII so that byte order and literal
// prefixes matter; explicit queue fids stay clear of allocated ones.
var (
	diffDomainNames = []string{"d0", "d1", "D0", "dé"}
	diffClassNames  = []string{"c0", "c1", "C0"}
	diffKeys        = []string{"a", "a%", "a_b", "ab", "a\\b", "A", "é", "日本", "\u00ff", "z", "%x", "_"}
	diffPrefixes    = []string{"", "a", "a%", "a_", "%", "_", "\\", "A", "é", "日", "z"}
	diffSettingKeys = []string{"diff.s0", "diff.s1", "diff.S0"}
	diffCounterKeys = []string{"diff.n0", "diff.n1"}
	diffValues      = []string{"x", "X", "é日本", "a b", "%_\\", "0"}
	diffQueueFid    = int64(900000)
)

func diffSeed(t *testing.T) uint64 {
	if v := os.Getenv(SeedEnv); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", SeedEnv, v, err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// diff is one run of the Differential case.
type diff struct {
	t      *testing.T
	seed   uint64
	rng    *rand.Rand
	m      *model
	ss     []*store.Store
	s      *store.Store // the Store of the current operation
	devs   []int
	step   int
	recent []string
}

func testDifferential(t *testing.T, e *env) {
	seed := diffSeed(t)
	t.Logf("seed %d (replay with %s=%d)", seed, SeedEnv, seed)
	d := &diff{
		t:    t,
		seed: seed,
		rng:  rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		m:    newModel(),
		ss:   []*store.Store{e.open(t), e.open(t)},
	}
	d.devs = mkDevices(t, d.ss[0], 4)

	ops := []struct {
		weight int
		name   string
		run    func() bool // false: not applicable now, draw again
	}{
		{4, "CreateDomain", d.createDomain},
		{1, "DeleteDomain", d.deleteDomain},
		{3, "CreateClass", d.createClass},
		{1, "DeleteClass", d.deleteClass},
		{1, "Domains", d.compareDomains},
		{1, "Classes", d.compareClasses},
		{10, "CreateTempFile", d.createTempFile},
		{10, "CommitFile", d.commitFile},
		{2, "TempFile", d.tempFile},
		{1, "DeleteTempFile", d.deleteTempFile},
		{6, "AddFileOn", d.addFileOn},
		{4, "RemoveFileOn", d.removeFileOn},
		{2, "FileOn", d.fileOn},
		{2, "SyncDevCount", d.syncDevCount},
		{3, "RenameFile", d.renameFile},
		{3, "DeleteFile", d.deleteFile},
		{2, "SetFileClass", d.setFileClass},
		{4, "File", d.file},
		{3, "FileByKey", d.fileByKey},
		{1, "Files", d.files},
		{1, "MaxFid", d.maxFid},
		{5, "ListKeys", d.listKeys},
		{5, "Enqueue", d.enqueue},
		{3, "Reschedule", d.reschedule},
		{2, "Finish", d.finish},
		{3, "QueueItem", d.queueItem},
		{2, "QueueLength", d.queueLength},
		{3, "Lease", d.lease},
		{1, "Expedite", d.expedite},
		{1, "ClearQueue", d.clearQueue},
		{3, "SetServerSetting", d.setSetting},
		{3, "ServerSetting", d.getSetting},
		{1, "DeleteServerSetting", d.deleteSetting},
		{3, "IncrServerSetting", d.incrSetting},
		{1, "ServerSettings", d.compareSettings},
	}
	total := 0
	for _, op := range ops {
		total += op.weight
	}
	counts := map[string]int{}
	for d.step = 0; d.step < diffOps; d.step++ {
		d.s = d.ss[d.rng.IntN(len(d.ss))]
		for {
			n := d.rng.IntN(total)
			i := 0
			for n >= ops[i].weight {
				n -= ops[i].weight
				i++
			}
			if ops[i].run() {
				counts[ops[i].name]++
				break
			}
		}
	}
	t.Logf("operations applied: %v", counts)
	d.s = d.ss[0]
	d.compareAll()
}

// note records an operation for the failure report.
func (d *diff) note(format string, args ...any) string {
	op := fmt.Sprintf(format, args...)
	d.recent = append(d.recent, fmt.Sprintf("%3d %s", d.step, op))
	if len(d.recent) > 20 {
		d.recent = d.recent[1:]
	}
	return op
}

func (d *diff) fail(format string, args ...any) {
	d.t.Helper()
	d.t.Fatalf("seed %d, op %d: %s\nlast operations:\n  %s\n(replay with %s=%d)",
		d.seed, d.step, fmt.Sprintf(format, args...), strings.Join(d.recent, "\n  "), SeedEnv, d.seed)
}

// category names an error's sentinel, for comparing error results.
func category(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{
		{store.ErrNotFound, "NotFound"},
		{store.ErrDuplicate, "Duplicate"},
		{store.ErrHasFiles, "HasFiles"},
		{store.ErrHasClasses, "HasClasses"},
		{store.ErrHasDevices, "HasDevices"},
		{store.ErrInvalid, "Invalid"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	if err == nil {
		return "ok"
	}
	return "unexpected error: " + err.Error()
}

// expect compares err's category with the acceptable ones and reports
// whether the operation succeeded.
func (d *diff) expect(op string, err error, want ...string) bool {
	d.t.Helper()
	if got := category(err); !slices.Contains(want, got) {
		d.fail("%s: got %s; want %s", op, got, strings.Join(want, " or "))
	}
	return err == nil
}

func pick[T any](d *diff, from []T) T { return from[d.rng.IntN(len(from))] }

func (d *diff) chance(p float64) bool { return d.rng.Float64() < p }

func (d *diff) devSubset() []int {
	var out []int
	for _, dev := range d.devs {
		if d.chance(0.4) {
			out = append(out, dev)
		}
	}
	return out
}

// someDomain picks a known domain, or an unknown id now and then.
func (d *diff) someDomain(unknown float64) (int, bool) {
	ids := d.m.domainIDs()
	if len(ids) == 0 || d.chance(unknown) {
		return 9999, false
	}
	return pick(d, ids), true
}

// someFid picks a fid the model knows, or one nobody has.
func (d *diff) someFid() int64 {
	fids := d.m.knownFids()
	if len(fids) == 0 || d.chance(0.1) {
		return d.m.topFid + 1000
	}
	return pick(d, fids)
}

func (d *diff) createDomain() bool {
	name := pick(d, diffDomainNames)
	op := d.note("CreateDomain(%q)", name)
	dom, err := d.s.CreateDomain(d.t.Context(), name)
	want := "ok"
	if d.m.domainByName(name) {
		want = "Duplicate"
	}
	if d.expect(op, err, want) {
		if dom.Name != name || dom.ID <= 0 || d.m.domains[dom.ID] != "" {
			d.fail("%s = %+v; want name %q and a fresh positive id", op, dom, name)
		}
		d.m.domains[dom.ID] = name
	}
	return true
}

func (d *diff) deleteDomain() bool {
	// The contract leaves what becomes of a domain's tempfiles unspecified,
	// so only domains without them are deleted.
	var ids []int
	for _, id := range d.m.domainIDs() {
		if !d.m.domainHasTemps(id) {
			ids = append(ids, id)
		}
	}
	dmid := 9999
	if len(ids) > 0 && d.chance(0.8) {
		dmid = pick(d, ids)
	}
	op := d.note("DeleteDomain(%d)", dmid)
	err := d.s.DeleteDomain(d.t.Context(), dmid)
	var want []string
	if _, ok := d.m.domains[dmid]; !ok {
		want = append(want, "NotFound")
	} else {
		if d.m.domainHasFiles(dmid) {
			want = append(want, "HasFiles")
		}
		if len(d.m.classIDs(dmid)) > 0 {
			want = append(want, "HasClasses")
		}
	}
	if len(want) == 0 {
		want = []string{"ok"}
	}
	if d.expect(op, err, want...) {
		delete(d.m.domains, dmid)
	}
	return true
}

func (d *diff) createClass() bool {
	dmid, known := d.someDomain(0.1)
	name := pick(d, diffClassNames)
	c := store.Class{DomainID: dmid, Name: name, MinDevCount: 1 + d.rng.IntN(3), HashType: store.HashType(d.rng.IntN(2))}
	if d.chance(0.3) {
		c.ReplPolicy = "MultipleHosts(2)"
	}
	op := d.note("CreateClass(%+v)", c)
	got, err := d.s.CreateClass(d.t.Context(), c)
	want := "ok"
	switch {
	case !known:
		want = "NotFound"
	case d.m.classByName(dmid, name):
		want = "Duplicate"
	}
	if d.expect(op, err, want) {
		c.ID = got.ID
		if got != c || got.ID <= 0 {
			d.fail("%s = %+v; want %+v with a new positive id", op, got, c)
		}
		if _, taken := d.m.classes[[2]int{dmid, got.ID}]; taken {
			d.fail("%s got id %d, already taken in domain %d", op, got.ID, dmid)
		}
		d.m.classes[[2]int{dmid, got.ID}] = got
	}
	return true
}

func (d *diff) deleteClass() bool {
	dmid, _ := d.someDomain(0.1)
	classid := 77
	if ids := d.m.classIDs(dmid); len(ids) > 0 && d.chance(0.85) {
		classid = pick(d, ids)
	}
	op := d.note("DeleteClass(%d, %d)", dmid, classid)
	err := d.s.DeleteClass(d.t.Context(), dmid, classid)
	_, exists := d.m.classes[[2]int{dmid, classid}]
	want := "ok"
	switch {
	case !exists:
		want = "NotFound"
	case d.m.classHasFiles(dmid, classid):
		want = "HasFiles"
	}
	if d.expect(op, err, want) {
		delete(d.m.classes, [2]int{dmid, classid})
	}
	return true
}

func (d *diff) compareDomains() bool {
	op := d.note("Domains()")
	ds, err := d.s.Domains(d.t.Context())
	d.expect(op, err, "ok")
	got := map[int]string{}
	for _, dom := range ds {
		got[dom.ID] = dom.Name
	}
	if !maps.Equal(got, d.m.domains) {
		d.fail("%s = %v; want %v", op, got, d.m.domains)
	}
	return true
}

func (d *diff) compareClasses() bool {
	op := d.note("Classes()")
	cs, err := d.s.Classes(d.t.Context())
	d.expect(op, err, "ok")
	got := map[[2]int]store.Class{}
	for _, c := range cs {
		if c.ID != 0 {
			got[[2]int{c.DomainID, c.ID}] = c
		}
	}
	if !maps.Equal(got, d.m.classes) {
		d.fail("%s = %v; want %v (default classes aside)", op, got, d.m.classes)
	}
	return true
}

func (d *diff) createTempFile() bool {
	dmid, known := d.someDomain(0)
	if !known {
		return false
	}
	tf := store.TempFile{DomainID: dmid, Key: pick(d, diffKeys), DevIDs: d.devSubset()}
	if ids := d.m.classIDs(dmid); len(ids) > 0 && d.chance(0.5) {
		tf.ClassID = pick(d, ids)
	}
	op := d.note("CreateTempFile(%+v)", tf)
	fid, err := d.s.CreateTempFile(d.t.Context(), tf)
	d.expect(op, err, "ok")
	if fid <= d.m.topFid {
		d.fail("%s = %d; want above every fid handed out so far (%d)", op, fid, d.m.topFid)
	}
	d.m.topFid = fid
	tf.Fid = fid
	d.m.temps[fid] = tf
	return true
}

func (d *diff) commitFile() bool {
	var c store.Commit
	switch r := d.rng.Float64(); {
	case r < 0.7 && len(d.m.temps) > 0:
		tf := d.m.temps[pick(d, slices.Sorted(maps.Keys(d.m.temps)))]
		c = store.Commit{Fid: tf.Fid, DomainID: tf.DomainID, Key: tf.Key, ClassID: tf.ClassID,
			Length: d.rng.Int64N(1 << 20), DevIDs: d.devSubset(), Replicate: d.chance(0.5)}
	case len(d.m.commits) > 0 && r < 0.9:
		// A retry, maybe of a file changed or gone since.
		c = d.m.commits[pick(d, slices.Sorted(maps.Keys(d.m.commits)))].c
	default:
		dmid, _ := d.someDomain(0)
		c = store.Commit{Fid: d.m.topFid + 500, DomainID: dmid, Key: pick(d, diffKeys)}
	}
	op := d.note("CommitFile(%+v)", c)
	res, err := d.s.CommitFile(d.t.Context(), c)

	if _, ok := d.m.temps[c.Fid]; ok {
		if !d.expect(op, err, "ok") {
			return true
		}
		delete(d.m.temps, c.Fid)
		want := store.CommitResult{}
		if old := d.m.byKey(c.DomainID, c.Key); old != 0 {
			want.ReplacedFid = old
			delete(d.m.files, old)
			d.m.touch(old)
		}
		if d.m.fileOn[c.Fid] == nil {
			d.m.fileOn[c.Fid] = map[int]bool{}
		}
		for _, dev := range c.DevIDs {
			d.m.fileOn[c.Fid][dev] = true
		}
		want.File = store.File{Fid: c.Fid, DomainID: c.DomainID, Key: c.Key, Length: c.Length,
			ClassID: c.ClassID, DevCount: len(d.m.fileOn[c.Fid])}
		d.m.files[c.Fid] = want.File
		if res != want {
			d.fail("%s = %+v; want %+v", op, res, want)
		}
		d.m.commits[c.Fid] = &mcommit{c: c, res: res, pristine: true}
		if want.ReplacedFid != 0 {
			d.learnRow(op, store.QueueDelete, want.ReplacedFid)
		}
		if c.Replicate {
			d.learnRow(op, store.QueueReplicate, c.Fid)
		}
		return true
	}
	if f, ok := d.m.files[c.Fid]; ok && f.DomainID == c.DomainID && f.Key == c.Key {
		// A retry of an applied commit: the same result, applied once.
		d.expect(op, err, "ok")
		if mc := d.m.commits[c.Fid]; mc != nil && mc.pristine && reflect.DeepEqual(mc.c, c) && res != mc.res {
			d.fail("%s (a retry) = %+v; want the first result %+v", op, res, mc.res)
		}
		return true
	}
	d.expect(op, err, "NotFound")
	return true
}

// learnRow checks that an operation queued fid on q as a side effect and
// adopts the row's device, argument and due time, which the contract
// leaves to the backend.
func (d *diff) learnRow(op string, q store.Queue, fid int64) {
	d.t.Helper()
	it, err := d.s.QueueItem(d.t.Context(), q, fid)
	if err != nil {
		d.fail("%s: QueueItem(%s, %d) of the row it should have queued: %v", op, q, fid, err)
	}
	now, err := d.s.Now(d.t.Context())
	if err != nil {
		d.fail("Now: %v", err)
	}
	lv := levelDue
	switch {
	case it.NextTry.Equal(store.EndOfTime):
		lv = levelParked
	case it.NextTry.After(now.Add(30 * time.Minute)):
		lv = levelLater
	case it.NextTry.After(now.Add(time.Second)):
		d.fail("%s queued %s row %+v due in %v; the model knows only now, later and never", op, q, it, it.NextTry.Sub(now))
	}
	if r := d.m.queues[q][fid]; r != nil {
		if it.FailCount != r.fails || it.DevID != r.devID || it.Arg != r.arg {
			d.fail("%s re-queued %s row %+v; want failcount %d, devid %d, arg %q kept", op, q, it, r.fails, r.devID, r.arg)
		}
		r.level = lv
		return
	}
	if it.FailCount != 0 {
		d.fail("%s queued %s row %+v; want failcount 0", op, q, it)
	}
	d.m.queues[q][fid] = &mrow{devID: it.DevID, arg: it.Arg, level: lv}
}

func (d *diff) tempFile() bool {
	fid := d.someFid()
	op := d.note("TempFile(%d)", fid)
	got, err := d.s.TempFile(d.t.Context(), fid)
	want, ok := d.m.temps[fid]
	if !ok {
		d.expect(op, err, "NotFound")
		return true
	}
	d.expect(op, err, "ok")
	if got.Fid != fid || got.DomainID != want.DomainID || got.Key != want.Key || got.ClassID != want.ClassID ||
		!slices.Equal(sortedInts(got.DevIDs), sortedInts(want.DevIDs)) {
		d.fail("%s = %+v; want %+v", op, got, want)
	}
	return true
}

func (d *diff) deleteTempFile() bool {
	fid := d.someFid()
	op := d.note("DeleteTempFile(%d)", fid)
	err := d.s.DeleteTempFile(d.t.Context(), fid)
	if _, ok := d.m.temps[fid]; ok {
		d.expect(op, err, "ok")
		delete(d.m.temps, fid)
	} else {
		d.expect(op, err, "NotFound")
	}
	return true
}

func (d *diff) addFileOn() bool {
	fid, dev := d.someFid(), pick(d, d.devs)
	op := d.note("AddFileOn(%d, %d)", fid, dev)
	added, err := d.s.AddFileOn(d.t.Context(), fid, dev)
	d.expect(op, err, "ok")
	if want := !d.m.fileOn[fid][dev]; added != want {
		d.fail("%s = %v; want %v", op, added, want)
	}
	if d.m.fileOn[fid] == nil {
		d.m.fileOn[fid] = map[int]bool{}
	}
	d.m.fileOn[fid][dev] = true
	d.m.setDevCount(fid)
	d.m.touch(fid)
	return true
}

func (d *diff) removeFileOn() bool {
	fid, dev := d.someFid(), pick(d, d.devs)
	op := d.note("RemoveFileOn(%d, %d)", fid, dev)
	removed, err := d.s.RemoveFileOn(d.t.Context(), fid, dev)
	d.expect(op, err, "ok")
	if want := d.m.fileOn[fid][dev]; removed != want {
		d.fail("%s = %v; want %v", op, removed, want)
	}
	delete(d.m.fileOn[fid], dev)
	d.m.setDevCount(fid)
	d.m.touch(fid)
	return true
}

func (d *diff) fileOn() bool {
	fid := d.someFid()
	op := d.note("FileOn(%d)", fid)
	got, err := d.s.FileOn(d.t.Context(), fid)
	d.expect(op, err, "ok")
	if want := d.m.fileOnList(fid); !slices.Equal(got, want) {
		d.fail("%s = %v; want %v", op, got, want)
	}
	return true
}

func (d *diff) syncDevCount() bool {
	fid := d.someFid()
	op := d.note("SyncDevCount(%d)", fid)
	n, err := d.s.SyncDevCount(d.t.Context(), fid)
	if _, ok := d.m.files[fid]; !ok {
		d.expect(op, err, "NotFound")
		return true
	}
	d.expect(op, err, "ok")
	if want := len(d.m.fileOn[fid]); n != want {
		d.fail("%s = %d; want %d", op, n, want)
	}
	return true
}

func (d *diff) renameFile() bool {
	dmid, _ := d.someDomain(0.05)
	from, to := pick(d, diffKeys), pick(d, diffKeys)
	if from == to {
		return false
	}
	op := d.note("RenameFile(%d, %q, %q)", dmid, from, to)
	err := d.s.RenameFile(d.t.Context(), dmid, from, to)
	src, dst := d.m.byKey(dmid, from), d.m.byKey(dmid, to)
	switch {
	case src == 0 && dst != 0:
		d.expect(op, err, "NotFound", "Duplicate")
	case src == 0:
		d.expect(op, err, "NotFound")
	case dst != 0:
		d.expect(op, err, "Duplicate")
	default:
		d.expect(op, err, "ok")
		f := d.m.files[src]
		f.Key = to
		d.m.files[src] = f
		d.m.touch(src)
	}
	return true
}

func (d *diff) deleteFile() bool {
	fid := d.someFid()
	if _, ok := d.m.temps[fid]; ok {
		return false // DeleteFile of a tempfile alone is left unspecified
	}
	op := d.note("DeleteFile(%d)", fid)
	err := d.s.DeleteFile(d.t.Context(), fid)
	if _, ok := d.m.files[fid]; !ok {
		d.expect(op, err, "NotFound")
		return true
	}
	d.expect(op, err, "ok")
	delete(d.m.files, fid)
	d.m.touch(fid)
	d.learnRow(op, store.QueueDelete, fid)
	return true
}

func (d *diff) setFileClass() bool {
	fid := d.someFid()
	classid := 0
	if f, ok := d.m.files[fid]; ok {
		if ids := d.m.classIDs(f.DomainID); len(ids) > 0 && d.chance(0.7) {
			classid = pick(d, ids)
		}
	}
	op := d.note("SetFileClass(%d, %d)", fid, classid)
	err := d.s.SetFileClass(d.t.Context(), fid, classid)
	f, ok := d.m.files[fid]
	if !ok {
		d.expect(op, err, "NotFound")
		return true
	}
	d.expect(op, err, "ok")
	f.ClassID = classid
	d.m.files[fid] = f
	d.m.touch(fid)
	return true
}

func (d *diff) file() bool {
	fid := d.someFid()
	op := d.note("File(%d)", fid)
	got, err := d.s.File(d.t.Context(), fid)
	want, ok := d.m.files[fid]
	if !ok {
		d.expect(op, err, "NotFound")
		return true
	}
	d.expect(op, err, "ok")
	if got != want {
		d.fail("%s = %+v; want %+v", op, got, want)
	}
	return true
}

func (d *diff) fileByKey() bool {
	dmid, _ := d.someDomain(0.05)
	key := pick(d, diffKeys)
	op := d.note("FileByKey(%d, %q)", dmid, key)
	got, err := d.s.FileByKey(d.t.Context(), dmid, key)
	fid := d.m.byKey(dmid, key)
	if fid == 0 {
		d.expect(op, err, "NotFound")
		return true
	}
	d.expect(op, err, "ok")
	if want := d.m.files[fid]; got != want {
		d.fail("%s = %+v; want %+v", op, got, want)
	}
	return true
}

func (d *diff) files() bool {
	from, to := d.someFid(), d.someFid()
	if from > to {
		from, to = to, from
	}
	limit := 1 + d.rng.IntN(6)
	op := d.note("Files(%d, %d, %d)", from, to, limit)
	got, err := d.s.Files(d.t.Context(), from, to, limit)
	d.expect(op, err, "ok")
	if want := d.m.filesRange(from, to, limit); !slices.Equal(got, want) {
		d.fail("%s = %+v; want %+v", op, got, want)
	}
	return true
}

func (d *diff) maxFid() bool {
	op := d.note("MaxFid()")
	got, err := d.s.MaxFid(d.t.Context())
	d.expect(op, err, "ok")
	if want := d.m.maxFid(); got != want {
		d.fail("%s = %d; want %d", op, got, want)
	}
	return true
}

func (d *diff) listKeys() bool {
	dmid, _ := d.someDomain(0.05)
	prefix, after := pick(d, diffPrefixes), ""
	if d.chance(0.4) {
		after = pick(d, diffKeys)
	}
	limit := 1 + d.rng.IntN(5)
	if d.chance(0.5) {
		limit = 100
	}
	op := d.note("ListKeys(%d, %q, %q, %d)", dmid, prefix, after, limit)
	got, err := d.s.ListKeys(d.t.Context(), dmid, prefix, after, limit)
	d.expect(op, err, "ok")
	if want := d.m.listKeys(dmid, prefix, after, limit); !slices.Equal(got, want) {
		d.fail("%s = %q; want %q", op, got, want)
	}
	return true
}

// queueFid picks a fid of the explicit queue pool, or a fid the file
// operations queued.
func (d *diff) queueFid(q store.Queue) int64 {
	if d.chance(0.25) {
		if fids := slices.Sorted(maps.Keys(d.m.queues[q])); len(fids) > 0 {
			return pick(d, fids)
		}
	}
	return diffQueueFid + int64(d.rng.IntN(10))
}

func (d *diff) someAfter() time.Duration {
	return pick(d, []time.Duration{0, 0, time.Hour, store.Never})
}

func (d *diff) enqueue() bool {
	if d.chance(0.05) {
		op := d.note("Enqueue(queue 9)")
		d.expect(op, d.s.Enqueue(d.t.Context(), 9, store.QueueEntry{Fid: diffQueueFid}), "Invalid")
		return true
	}
	q := pick(d, allQueues)
	var es []store.QueueEntry
	seen := map[int64]bool{}
	for range 1 + d.rng.IntN(3) {
		fid := diffQueueFid + int64(d.rng.IntN(10))
		if seen[fid] {
			continue
		}
		seen[fid] = true
		e := store.QueueEntry{Fid: fid, After: d.someAfter()}
		if q != store.QueueDelete {
			e.DevID = pick(d, d.devs)
		}
		if q == store.QueueFsck || q == store.QueueRebalance {
			e.Arg = pick(d, []string{"", "x", "é"})
		}
		es = append(es, e)
	}
	op := d.note("Enqueue(%s, %+v)", q, es)
	d.expect(op, d.s.Enqueue(d.t.Context(), q, es...), "ok")
	for _, e := range es {
		d.m.enqueue(q, e)
	}
	return true
}

func (d *diff) reschedule() bool {
	q := pick(d, allQueues)
	fid, after, failed := d.queueFid(q), d.someAfter(), d.chance(0.5)
	op := d.note("Reschedule(%s, %d, %v, %v)", q, fid, after, failed)
	err := d.s.Reschedule(d.t.Context(), q, fid, after, failed)
	r := d.m.queues[q][fid]
	if r == nil {
		d.expect(op, err, "NotFound")
		return true
	}
	d.expect(op, err, "ok")
	r.level = levelOf(store.QueueEntry{After: after})
	if failed {
		r.fails++
	}
	return true
}

func (d *diff) finish() bool {
	q := pick(d, allQueues)
	fid := d.queueFid(q)
	op := d.note("Finish(%s, %d)", q, fid)
	d.expect(op, d.s.Finish(d.t.Context(), q, fid), "ok")
	delete(d.m.queues[q], fid)
	return true
}

func (d *diff) checkRow(op string, it store.QueueItem, q store.Queue, fid int64, r *mrow, now time.Time) {
	d.t.Helper()
	if it.Queue != q || it.Fid != fid || it.DevID != r.devID || it.Arg != r.arg || it.FailCount != r.fails {
		d.fail("%s = %+v; want queue %s, fid %d, devid %d, arg %q, failcount %d", op, it, q, fid, r.devID, r.arg, r.fails)
	}
	var okTime bool
	switch r.level {
	case levelDue:
		okTime = !it.NextTry.After(now.Add(time.Second))
	case levelLater:
		okTime = it.NextTry.After(now.Add(30*time.Minute)) && !it.NextTry.Equal(store.EndOfTime)
	case levelParked:
		okTime = it.NextTry.Equal(store.EndOfTime)
	}
	if !okTime {
		d.fail("%s: NextTry %v (now %v); want %s", op, it.NextTry, now, []string{"due", "an hour or more away", "parked"}[r.level])
	}
}

func (d *diff) queueItem() bool {
	q := pick(d, allQueues)
	fid := d.queueFid(q)
	op := d.note("QueueItem(%s, %d)", q, fid)
	it, err := d.s.QueueItem(d.t.Context(), q, fid)
	r := d.m.queues[q][fid]
	if r == nil {
		d.expect(op, err, "NotFound")
		return true
	}
	d.expect(op, err, "ok")
	now, err := d.s.Now(d.t.Context())
	d.expect("Now()", err, "ok")
	d.checkRow(op, it, q, fid, r, now)
	return true
}

func (d *diff) queueLength() bool {
	q := pick(d, allQueues)
	op := d.note("QueueLength(%s)", q)
	n, err := d.s.QueueLength(d.t.Context(), q)
	d.expect(op, err, "ok")
	if want := int64(len(d.m.queues[q])); n != want {
		d.fail("%s = %d; want %d", op, n, want)
	}
	return true
}

func (d *diff) lease() bool {
	q := pick(d, allQueues)
	n := 1 + d.rng.IntN(4)
	op := d.note("Lease(%s, %d, 1h)", q, n)
	items, err := d.s.Lease(d.t.Context(), q, n, time.Hour)
	d.expect(op, err, "ok")
	due := d.m.rowsAt(q, levelDue)
	if want := min(n, len(due)); len(items) != want {
		d.fail("%s returned %d rows %+v; want %d of the due %v", op, len(items), items, want, due)
	}
	seen := map[int64]bool{}
	for _, it := range items {
		r := d.m.queues[q][it.Fid]
		if r == nil || r.level != levelDue || seen[it.Fid] {
			d.fail("%s returned %+v; want only due rows %v, each once", op, it, due)
		}
		seen[it.Fid] = true
		if it.Queue != q || it.DevID != r.devID || it.Arg != r.arg || it.FailCount != r.fails {
			d.fail("%s returned %+v; want devid %d, arg %q, failcount %d", op, it, r.devID, r.arg, r.fails)
		}
	}
	for fid := range seen {
		d.m.queues[q][fid].level = levelLater
	}
	return true
}

func (d *diff) expedite() bool {
	q := pick(d, allQueues)
	op := d.note("Expedite(%s)", q)
	n, err := d.s.Expedite(d.t.Context(), q)
	d.expect(op, err, "ok")
	later, due := len(d.m.rowsAt(q, levelLater)), len(d.m.rowsAt(q, levelDue))
	// Rows already due may or may not count as moved.
	if n < int64(later) || n > int64(later+due) {
		d.fail("%s = %d; want between %d and %d", op, n, later, later+due)
	}
	for _, r := range d.m.queues[q] {
		if r.level == levelLater {
			r.level = levelDue
		}
	}
	return true
}

func (d *diff) clearQueue() bool {
	q := pick(d, allQueues)
	op := d.note("ClearQueue(%s)", q)
	d.expect(op, d.s.ClearQueue(d.t.Context(), q), "ok")
	d.m.queues[q] = map[int64]*mrow{}
	return true
}

func (d *diff) setSetting() bool {
	key, value := pick(d, diffSettingKeys), pick(d, diffValues)
	if d.chance(0.4) {
		key, value = pick(d, diffCounterKeys), strconv.Itoa(d.rng.IntN(200)-100)
	}
	op := d.note("SetServerSetting(%q, %q)", key, value)
	d.expect(op, d.s.SetServerSetting(d.t.Context(), key, value), "ok")
	d.m.settings[key] = value
	return true
}

func (d *diff) getSetting() bool {
	key := pick(d, append(slices.Clone(diffSettingKeys), diffCounterKeys...))
	op := d.note("ServerSetting(%q)", key)
	got, err := d.s.ServerSetting(d.t.Context(), key)
	want, ok := d.m.settings[key]
	if !ok {
		d.expect(op, err, "NotFound")
		return true
	}
	d.expect(op, err, "ok")
	if got != want {
		d.fail("%s = %q; want %q", op, got, want)
	}
	return true
}

func (d *diff) deleteSetting() bool {
	key := pick(d, append(slices.Clone(diffSettingKeys), diffCounterKeys...))
	op := d.note("DeleteServerSetting(%q)", key)
	d.expect(op, d.s.DeleteServerSetting(d.t.Context(), key), "ok")
	delete(d.m.settings, key)
	return true
}

func (d *diff) incrSetting() bool {
	key, delta := pick(d, diffCounterKeys), int64(d.rng.IntN(11)-5)
	op := d.note("IncrServerSetting(%q, %d)", key, delta)
	got, err := d.s.IncrServerSetting(d.t.Context(), key, delta)
	d.expect(op, err, "ok")
	old, _ := strconv.ParseInt(d.m.settings[key], 10, 64)
	if got != old+delta {
		d.fail("%s = %d; want %d", op, got, old+delta)
	}
	d.m.settings[key] = strconv.FormatInt(got, 10)
	return true
}

func (d *diff) compareSettings() bool {
	op := d.note("ServerSettings()")
	all, err := d.s.ServerSettings(d.t.Context())
	d.expect(op, err, "ok")
	got := map[string]string{}
	for k, v := range all {
		if strings.HasPrefix(k, "diff.") {
			got[k] = v
		}
	}
	if !maps.Equal(got, d.m.settings) {
		d.fail("%s = %v; want %v (other keys aside)", op, got, d.m.settings)
	}
	return true
}

// compareAll reads the whole final state back and compares it with the
// model.
func (d *diff) compareAll() {
	d.step = diffOps
	d.note("final comparison")
	d.compareDomains()
	d.compareClasses()
	d.compareSettings()
	d.maxFid()
	ctx := d.t.Context()
	all, err := d.s.Files(ctx, 0, math.MaxInt64, 100000)
	d.expect("Files(all)", err, "ok")
	if want := d.m.filesRange(0, math.MaxInt64, 100000); !slices.Equal(all, want) {
		d.fail("Files(all) = %+v; want %+v", all, want)
	}
	for _, fid := range d.m.knownFids() {
		got, err := d.s.FileOn(ctx, fid)
		d.expect("FileOn", err, "ok")
		if want := d.m.fileOnList(fid); !slices.Equal(got, want) {
			d.fail("final FileOn(%d) = %v; want %v", fid, got, want)
		}
		_, err = d.s.TempFile(ctx, fid)
		want := "NotFound"
		if _, ok := d.m.temps[fid]; ok {
			want = "ok"
		}
		d.expect(fmt.Sprintf("final TempFile(%d)", fid), err, want)
	}
	for _, dmid := range d.m.domainIDs() {
		got, err := d.s.ListKeys(ctx, dmid, "", "", 1000)
		d.expect("ListKeys", err, "ok")
		if want := d.m.listKeys(dmid, "", "", 1000); !slices.Equal(got, want) {
			d.fail("final ListKeys(%d) = %q; want %q", dmid, got, want)
		}
	}
	now, err := d.s.Now(ctx)
	d.expect("Now()", err, "ok")
	for _, q := range allQueues {
		n, err := d.s.QueueLength(ctx, q)
		d.expect("QueueLength", err, "ok")
		if want := int64(len(d.m.queues[q])); n != want {
			d.fail("final QueueLength(%s) = %d; want %d", q, n, want)
		}
		for _, fid := range slices.Sorted(maps.Keys(d.m.queues[q])) {
			it, err := d.s.QueueItem(ctx, q, fid)
			op := fmt.Sprintf("final QueueItem(%s, %d)", q, fid)
			d.expect(op, err, "ok")
			d.checkRow(op, it, q, fid, d.m.queues[q][fid], now)
		}
	}
	d.t.Logf("%d operations agreed with the model: %d domains, %d classes, %d files, %d tempfiles",
		diffOps, len(d.m.domains), len(d.m.classes), len(d.m.files), len(d.m.temps))
}
