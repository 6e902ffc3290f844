package cluster

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Snapshot is one consistent read of domains, classes, hosts and devices.
// It is shared by every reader and never modified after it is built.
type Snapshot struct {
	Domains      []store.Domain // by dmid
	DomainByName map[string]store.Domain
	DomainByID   map[int]store.Domain
	Classes      map[int][]store.Class // by dmid, sorted by classid
	Hosts        []store.Host          // by hostid
	HostByID     map[int]store.Host
	HostByName   map[string]store.Host
	Devices      []store.Device // by devid
	DevByID      map[int]store.Device
}

// Class returns a domain's class by id. Class 0 exists implicitly in every
// domain ("default"); a class without a replica count of its own (the
// implicit one, or a row with mindevcount 0) gets s.DefaultMinDevCount, as
// Factory::Domain gives it default_mindevcount.
func (n *Snapshot) Class(dmid, classid int, s Settings) (store.Class, bool) {
	var c store.Class
	found := false
	for _, x := range n.Classes[dmid] {
		if x.ID == classid {
			c, found = x, true
			break
		}
	}
	if !found {
		if classid != 0 {
			return store.Class{}, false
		}
		c = store.Class{DomainID: dmid, ID: 0, Name: "default"}
	}
	if c.MinDevCount == 0 {
		c.MinDevCount = s.DefaultMinDevCount
	}
	return c, true
}

// ClassByName finds a domain's class by name ("default" is class 0).
func (n *Snapshot) ClassByName(dmid int, name string, s Settings) (store.Class, bool) {
	for _, c := range n.Classes[dmid] {
		if c.Name == name {
			return n.Class(dmid, c.ID, s)
		}
	}
	if name == "default" {
		return n.Class(dmid, 0, s)
	}
	return store.Class{}, false
}

// Device joins device devid with its host and obs; ok is false when the
// device or its host is unknown (a device without a host cannot be reached).
func (n *Snapshot) Device(devid int, obs Observation) (Device, bool) {
	d, ok := n.DevByID[devid]
	if !ok {
		return Device{}, false
	}
	return n.Join(d, obs)
}

// Join joins a device row with its host row and obs.
func (n *Snapshot) Join(d store.Device, obs Observation) (Device, bool) {
	h, ok := n.HostByID[d.HostID]
	if !ok {
		return Device{}, false
	}
	return Device{Device: d, Host: h, Obs: obs}, true
}

// JoinAll joins every device that has a host, by devid, observe giving
// each one's observation.
func (n *Snapshot) JoinAll(observe func(devid int) Observation) []Device {
	out := make([]Device, 0, len(n.Devices))
	for _, d := range n.Devices {
		if dv, ok := n.Join(d, observe(d.ID)); ok {
			out = append(out, dv)
		}
	}
	return out
}

// Has reports whether every devid is in the snapshot.
func (n *Snapshot) Has(devids ...int) bool {
	for _, id := range devids {
		if _, ok := n.DevByID[id]; !ok {
			return false
		}
	}
	return true
}

// Load reads a snapshot from st.
func Load(ctx context.Context, st *store.Store) (*Snapshot, error) {
	doms, err := st.Domains(ctx)
	if err != nil {
		return nil, fmt.Errorf("load domains: %w", err)
	}
	cls, err := st.Classes(ctx)
	if err != nil {
		return nil, fmt.Errorf("load classes: %w", err)
	}
	hosts, err := st.Hosts(ctx)
	if err != nil {
		return nil, fmt.Errorf("load hosts: %w", err)
	}
	devs, err := st.Devices(ctx)
	if err != nil {
		return nil, fmt.Errorf("load devices: %w", err)
	}
	n := &Snapshot{
		Domains:      doms,
		DomainByName: map[string]store.Domain{},
		DomainByID:   map[int]store.Domain{},
		Classes:      map[int][]store.Class{},
		Hosts:        hosts,
		HostByID:     map[int]store.Host{},
		HostByName:   map[string]store.Host{},
		Devices:      devs,
		DevByID:      map[int]store.Device{},
	}
	sort.Slice(n.Domains, func(i, j int) bool { return n.Domains[i].ID < n.Domains[j].ID })
	for _, d := range doms {
		n.DomainByName[d.Name] = d
		n.DomainByID[d.ID] = d
	}
	for _, c := range cls {
		n.Classes[c.DomainID] = append(n.Classes[c.DomainID], c)
	}
	for _, l := range n.Classes {
		sort.Slice(l, func(i, j int) bool { return l[i].ID < l[j].ID })
	}
	sort.Slice(n.Hosts, func(i, j int) bool { return n.Hosts[i].ID < n.Hosts[j].ID })
	for _, h := range hosts {
		n.HostByID[h.ID] = h
		n.HostByName[h.Name] = h
	}
	sort.Slice(n.Devices, func(i, j int) bool { return n.Devices[i].ID < n.Devices[j].ID })
	for _, d := range devs {
		n.DevByID[d.ID] = d
	}
	return n, nil
}

// DefaultCacheTTL is how long a snapshot is reused by default
// (namespace_cache_ttl): operators and other trackers change the namespace
// rarely, and a few seconds bound how long a change made elsewhere goes
// unseen.
const DefaultCacheTTL = 3 * time.Second

// Cache hands out a snapshot at most TTL old. One Cache serves a tracker's
// query commands and its workers alike; Invalidate drops the snapshot at
// once (clear_cache, the tracker's own changes).
type Cache struct {
	st  *store.Store
	ttl time.Duration

	mu      sync.Mutex
	cur     *Snapshot
	loaded  time.Time
	version uint64 // bumped by Invalidate; a load started before is discarded
	// onInvalidate are told of every Invalidate: the caches of worker
	// processes, which must drop theirs too.
	onInvalidate map[*func()]struct{}
}

// NewCache caches st's namespace for ttl (<= 0: DefaultCacheTTL).
func NewCache(st *store.Store, ttl time.Duration) *Cache {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	return &Cache{st: st, ttl: ttl}
}

// TTL is how long a snapshot is reused.
func (c *Cache) TTL() time.Duration { return c.ttl }

// Invalidate drops the cached snapshot.
func (c *Cache) Invalidate() {
	c.mu.Lock()
	c.cur = nil
	c.version++
	fs := make([]func(), 0, len(c.onInvalidate))
	for f := range c.onInvalidate {
		fs = append(fs, *f)
	}
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// OnInvalidate calls f after every Invalidate (which a Fresh read also
// does) until the returned function is called. f must not block: it runs
// in the invalidating caller.
func (c *Cache) OnInvalidate(f func()) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.onInvalidate == nil {
		c.onInvalidate = map[*func()]struct{}{}
	}
	c.onInvalidate[&f] = struct{}{}
	return func() {
		c.mu.Lock()
		delete(c.onInvalidate, &f)
		c.mu.Unlock()
	}
}

// Get returns the cached snapshot, or a new one when it is older than the
// TTL or was invalidated.
func (c *Cache) Get(ctx context.Context) (*Snapshot, error) {
	c.mu.Lock()
	if c.cur != nil && time.Since(c.loaded) < c.ttl {
		n := c.cur
		c.mu.Unlock()
		return n, nil
	}
	v := c.version
	c.mu.Unlock()

	n, err := Load(ctx, c.st)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.version == v {
		c.cur, c.loaded = n, time.Now()
	}
	c.mu.Unlock()
	return n, nil
}

// Fresh reads a new snapshot now (and caches it): for admin commands that
// act on the database as it is.
func (c *Cache) Fresh(ctx context.Context) (*Snapshot, error) {
	c.Invalidate()
	return c.Get(ctx)
}

// Need returns a snapshot holding every devid when the database has them:
// a cached snapshot missing one is reloaded, because callers take a device
// missing from the snapshot for a deleted one.
func (c *Cache) Need(ctx context.Context, devids ...int) (*Snapshot, error) {
	n, err := c.Get(ctx)
	if err != nil || n.Has(devids...) {
		return n, err
	}
	return c.Fresh(ctx)
}
