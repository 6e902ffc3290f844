package conformance

import (
	"maps"
	"slices"
	"strings"

	"github.com/gomogile/gomogile/store"
)

// model is the oracle of the Differential case: the contract of package
// store as plain maps, for the operations the case generates. Ids and fids
// are allocated by the backend and adopted by the model, which checks only
// that they are fresh; everything else it predicts.
type model struct {
	domains  map[int]string
	classes  map[[2]int]store.Class // (dmid, classid); never class 0
	temps    map[int64]store.TempFile
	files    map[int64]store.File
	commits  map[int64]*mcommit
	fileOn   map[int64]map[int]bool
	queues   map[store.Queue]map[int64]*mrow
	settings map[string]string
	topFid   int64 // largest fid handed out
}

// mcommit remembers an applied commit, to predict its retries.
type mcommit struct {
	c   store.Commit
	res store.CommitResult
	// pristine: nothing touched the file since, so a retry must return
	// exactly res.
	pristine bool
}

// Queue row due levels: the model does not know the clock, only where a
// row's nexttry stands.
const (
	levelDue    = iota // due now
	levelLater         // an hour or more away
	levelParked        // store.Never
)

type mrow struct {
	devID int
	arg   string
	level int
	fails int
}

func newModel() *model {
	m := &model{
		domains:  map[int]string{},
		classes:  map[[2]int]store.Class{},
		temps:    map[int64]store.TempFile{},
		files:    map[int64]store.File{},
		commits:  map[int64]*mcommit{},
		fileOn:   map[int64]map[int]bool{},
		queues:   map[store.Queue]map[int64]*mrow{},
		settings: map[string]string{},
	}
	for _, q := range allQueues {
		m.queues[q] = map[int64]*mrow{}
	}
	return m
}

func (m *model) domainIDs() []int { return slices.Sorted(maps.Keys(m.domains)) }

func (m *model) domainByName(name string) bool {
	for _, n := range m.domains {
		if n == name {
			return true
		}
	}
	return false
}

// classIDs lists the non-default classes of dmid.
func (m *model) classIDs(dmid int) []int {
	var ids []int
	for k := range m.classes {
		if k[0] == dmid {
			ids = append(ids, k[1])
		}
	}
	slices.Sort(ids)
	return ids
}

func (m *model) classByName(dmid int, name string) bool {
	for k, c := range m.classes {
		if k[0] == dmid && c.Name == name {
			return true
		}
	}
	return false
}

func (m *model) domainHasFiles(dmid int) bool {
	for _, f := range m.files {
		if f.DomainID == dmid {
			return true
		}
	}
	return false
}

func (m *model) domainHasTemps(dmid int) bool {
	for _, tf := range m.temps {
		if tf.DomainID == dmid {
			return true
		}
	}
	return false
}

func (m *model) classHasFiles(dmid, classid int) bool {
	for _, f := range m.files {
		if f.DomainID == dmid && f.ClassID == classid {
			return true
		}
	}
	return false
}

// byKey returns the fid owning (dmid, key), or 0.
func (m *model) byKey(dmid int, key string) int64 {
	for fid, f := range m.files {
		if f.DomainID == dmid && f.Key == key {
			return fid
		}
	}
	return 0
}

func (m *model) fileOnList(fid int64) []int {
	return slices.Sorted(maps.Keys(m.fileOn[fid]))
}

// touch records that something other than its commit changed fid's file.
func (m *model) touch(fid int64) {
	if c := m.commits[fid]; c != nil {
		c.pristine = false
	}
}

func (m *model) setDevCount(fid int64) {
	if f, ok := m.files[fid]; ok {
		f.DevCount = len(m.fileOn[fid])
		m.files[fid] = f
	}
}

// knownFids is every fid the model has seen, ascending.
func (m *model) knownFids() []int64 {
	set := map[int64]bool{}
	for fid := range m.temps {
		set[fid] = true
	}
	for fid := range m.files {
		set[fid] = true
	}
	for fid := range m.commits {
		set[fid] = true
	}
	for fid := range m.fileOn {
		set[fid] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func (m *model) listKeys(dmid int, prefix, after string, limit int) []string {
	var out []string
	for _, f := range m.files {
		if f.DomainID == dmid && strings.HasPrefix(f.Key, prefix) && f.Key > after {
			out = append(out, f.Key)
		}
	}
	slices.Sort(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func (m *model) filesRange(from, to int64, limit int) []store.File {
	var out []store.File
	for _, fid := range slices.Sorted(maps.Keys(m.files)) {
		if fid >= from && fid <= to && len(out) < limit {
			out = append(out, m.files[fid])
		}
	}
	return out
}

func (m *model) maxFid() int64 {
	var n int64
	for fid := range m.files {
		n = max(n, fid)
	}
	return n
}

// rowsAt lists the fids of q at level, ascending.
func (m *model) rowsAt(q store.Queue, level int) []int64 {
	var out []int64
	for fid, r := range m.queues[q] {
		if r.level == level {
			out = append(out, fid)
		}
	}
	slices.Sort(out)
	return out
}

func levelOf(after store.QueueEntry) int {
	switch {
	case after.After == store.Never:
		return levelParked
	case after.After > 0:
		return levelLater
	}
	return levelDue
}

// enqueue applies Enqueue's idempotence: existing rows keep everything but
// may move earlier.
func (m *model) enqueue(q store.Queue, e store.QueueEntry) {
	lv := levelOf(e)
	if r := m.queues[q][e.Fid]; r != nil {
		r.level = min(r.level, lv)
		return
	}
	m.queues[q][e.Fid] = &mrow{devID: e.DevID, arg: e.Arg, level: lv}
}
