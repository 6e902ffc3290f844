package query

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gomogile/gomogile/store"
)

// Open uploads: create_open whose create_close has not come.
//
// An upload is open from create_open until its tempfile row goes:
// create_close commits or discards it, or the reaper removes it
// tempfile_ttl after create_open. Each open upload holds a slot of this
// tracker, charged to the client's address; max_open_uploads_per_ip and
// max_open_uploads bound the slots, and a create_open past either is
// refused with ERR too_many_uploads before it writes anything. So however
// fast clients ask, the tempfile rows they make through this tracker stay
// bounded.
//
// The slots are this tracker's, in memory, not the cluster's: the tempfile
// table (schema 17) records no client address, and counting rows in the
// database on every create_open would cost each upload a query on the table
// every tracker writes. With N trackers on one database, open uploads hold
// at most N × max_open_uploads tempfile rows (plus, for a tracker restarted
// within tempfile_ttl, its previous run's until the reaper takes them).
//
// A slot comes back only when its upload has ended, never on a request's
// say-so: when a create_close on this tracker commits or discards the
// upload or finds its tempfile gone; when the create_open that took it
// fails (also when the database lost the acknowledgement of the row's
// INSERT: a row nobody was told of is the reaper's after tempfile_ttl);
// otherwise once tempfile_ttl has passed and the database shows the
// row gone (reaped, or closed through another tracker). A create_close that
// fails before deciding the upload, or names a fid this tracker did not
// open, frees nothing: no client can free a slot, its own or another's,
// without ending that upload.

const (
	// sweepEvery is how often at most a create_open that finds a limit
	// reached asks the database about expired slots, and how long a slot
	// whose row is still there waits to be asked about again.
	sweepEvery = time.Second
	// sweepMax bounds the rows one sweep asks about.
	sweepMax = 100
)

// Uploads counts the open uploads of this tracker. With neither limit
// configured it counts nothing and refuses nothing (take gives a nil slot).
type Uploads struct {
	perAddr, total int           // max_open_uploads_per_ip, max_open_uploads; 0 = no bound
	ttl            time.Duration // tempfile_ttl: when the reaper may have taken a row
	// gone reports whether fid's tempfile row no longer exists.
	gone func(ctx context.Context, fid int64) (bool, error)

	mu        sync.Mutex
	held      int
	byAddr    map[netip.Addr]int
	byFid     map[int64]*upload
	due       uploadHeap // slots with a fid, by when to ask about them
	nextSweep time.Time
	sweeping  bool

	// The logs of refused create_opens, each at most once a second.
	limitLog, fullLog everySecond
	// Refused create_opens by reason (gomogile_uploads_refused_total).
	refusedPerIP, refusedTotal, refusedNoSpace atomic.Int64
}

// upload is one slot.
type upload struct {
	addr  netip.Addr
	fid   int64     // 0 until the tempfile row exists
	check time.Time // when to ask whether the row is gone
	index int       // in due; -1 when not
	freed bool
}

// NewUploads returns the slot table for cfg's limits on st.
func NewUploads(cfg Config, st *store.Store) *Uploads {
	return newUploads(cfg, tempfileGone(st))
}

// newUploads is NewUploads asking gone whether a row is gone.
func newUploads(cfg Config, gone func(ctx context.Context, fid int64) (bool, error)) *Uploads {
	return &Uploads{
		perAddr: cfg.MaxOpenUploadsPerIP, total: cfg.MaxOpenUploads, ttl: cfg.TempFileTTL, gone: gone,
		byAddr: map[netip.Addr]int{}, byFid: map[int64]*upload{},
	}
}

// take gives addr a slot, or refuses with ERR too_many_uploads. At a
// limit it first frees the slots whose rows are gone (see sweep).
func (u *Uploads) take(ctx context.Context, addr netip.Addr) (*upload, error) {
	if u.perAddr <= 0 && u.total <= 0 {
		return nil, nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.atLimit(addr) {
		u.sweepLocked(ctx, time.Now())
	}
	if err := u.refusal(addr); err != nil {
		return nil, err
	}
	u.held++
	u.byAddr[addr]++
	return &upload{addr: addr, index: -1}, nil
}

// atLimit reports whether a create_open from addr would be refused now.
func (u *Uploads) atLimit(addr netip.Addr) bool {
	return (u.perAddr > 0 && u.byAddr[addr] >= u.perAddr) || (u.total > 0 && u.held >= u.total)
}

// refusal is the error for a create_open from addr now, or nil; it counts
// the refusal by its reason.
func (u *Uploads) refusal(addr netip.Addr) error {
	switch {
	case u.perAddr > 0 && u.byAddr[addr] >= u.perAddr:
		u.refusedPerIP.Add(1)
		return perr("too_many_uploads", fmt.Sprintf("Too many open uploads from %s: %d (max_open_uploads_per_ip); finish some with create_close, or wait for tempfile_ttl", addr, u.perAddr))
	case u.total > 0 && u.held >= u.total:
		u.refusedTotal.Add(1)
		return perr("too_many_uploads", fmt.Sprintf("Too many open uploads on this tracker: %d (max_open_uploads); try again later", u.total))
	}
	return nil
}

// sweepLocked frees expired slots whose rows are gone, asking about at most
// sweepMax, at most once per sweepEvery. It unlocks u.mu while it asks.
func (u *Uploads) sweepLocked(ctx context.Context, now time.Time) {
	if u.sweeping || now.Before(u.nextSweep) || len(u.due) == 0 || u.due[0].check.After(now) {
		return
	}
	u.sweeping, u.nextSweep = true, now.Add(sweepEvery)
	var batch []*upload
	for len(u.due) > 0 && len(batch) < sweepMax && !u.due[0].check.After(now) {
		batch = append(batch, heap.Pop(&u.due).(*upload))
	}
	u.mu.Unlock()
	gone := make([]bool, len(batch))
	for i, s := range batch {
		g, err := u.gone(ctx, s.fid)
		if err != nil {
			break // the rest are asked about again next time
		}
		gone[i] = g
	}
	u.mu.Lock()
	u.sweeping = false
	for i, s := range batch {
		switch {
		case s.freed:
			// ended while we asked
		case gone[i]:
			u.freeLocked(s)
		default:
			s.check = now.Add(sweepEvery)
			heap.Push(&u.due, s)
		}
	}
}

// opened records that s's create_open made the tempfile row fid.
func (u *Uploads) opened(s *upload, fid int64) {
	if s == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if old := u.byFid[fid]; old != nil {
		// A named fid whose earlier row has gone (a new row under it
		// could not have been made otherwise): that upload ended.
		u.freeLocked(old)
	}
	s.fid, s.check = fid, time.Now().Add(u.ttl)
	u.byFid[fid] = s
	heap.Push(&u.due, s)
}

// cancel gives back the slot of a create_open that made no tempfile row.
func (u *Uploads) cancel(s *upload) {
	if s == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if s.fid == 0 {
		u.freeLocked(s)
	}
}

// ended gives back fid's slot, if this tracker holds one: its tempfile
// row is gone.
func (u *Uploads) ended(fid int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if s := u.byFid[fid]; s != nil {
		u.freeLocked(s)
	}
}

// open is how many slots are held.
func (u *Uploads) open() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.held
}

func (u *Uploads) freeLocked(s *upload) {
	if s.freed {
		return
	}
	s.freed = true
	if s.fid != 0 && u.byFid[s.fid] == s {
		delete(u.byFid, s.fid)
	}
	if s.index >= 0 {
		heap.Remove(&u.due, s.index)
	}
	u.held--
	if u.byAddr[s.addr]--; u.byAddr[s.addr] <= 0 {
		delete(u.byAddr, s.addr)
	}
}

// uploadHeap orders slots by check time (container/heap).
type uploadHeap []*upload

func (h uploadHeap) Len() int           { return len(h) }
func (h uploadHeap) Less(i, j int) bool { return h[i].check.Before(h[j].check) }
func (h uploadHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *uploadHeap) Push(x any) {
	s := x.(*upload)
	s.index = len(*h)
	*h = append(*h, s)
}
func (h *uploadHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	s.index = -1
	*h = old[:len(old)-1]
	return s
}

// tempfileGone reports whether fid's tempfile row in st no longer exists.
func tempfileGone(st *store.Store) func(ctx context.Context, fid int64) (bool, error) {
	return func(ctx context.Context, fid int64) (bool, error) {
		_, err := st.TempFile(ctx, fid)
		if errors.Is(err, store.ErrNotFound) {
			return true, nil
		}
		return false, err
	}
}

// Collectors are the upload metrics: slots held, and refused create_opens
// by reason (the limit's key, or no_space for a full database).
func (u *Uploads) Collectors() []prometheus.Collector {
	refused := func(reason string, n *atomic.Int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "gomogile_uploads_refused_total", Help: "create_open requests refused, by reason.",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(n.Load()) })
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gomogile_uploads_open", Help: "Uploads this tracker opened whose tempfile is not known gone (create_open without create_close).",
		}, func() float64 { return float64(u.open()) }),
		refused("max_open_uploads_per_ip", &u.refusedPerIP),
		refused("max_open_uploads", &u.refusedTotal),
		refused("no_space", &u.refusedNoSpace),
	}
}

// clientAddr is the address a request's slots are charged to.
func clientAddr(r *Request) netip.Addr {
	a, _ := netip.ParseAddr(r.ClientIP) // no IP peer: the zero Addr, one bucket
	return a.Unmap()
}

// everySecond lets a log line through at most once a second and counts
// the ones it held back: a flood of refused requests must not flood the
// log, which may well be on the disk that is full.
type everySecond struct {
	mu   sync.Mutex
	last time.Time
	held int
}

// allow reports whether to log now, and how many lines were held back
// since the last one logged.
func (e *everySecond) allow() (held int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now := time.Now(); now.Sub(e.last) >= time.Second {
		held, e.held, e.last = e.held, 0, now
		return held, true
	}
	e.held++
	return 0, false
}
