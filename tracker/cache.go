package tracker

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

// namespace is one consistent snapshot of domains, classes, hosts and
// devices.
type namespace struct {
	domains      []store.Domain // by dmid
	domainByName map[string]store.Domain
	domainByID   map[int]store.Domain
	classes      map[int][]store.Class // by dmid, sorted by classid
	hosts        []store.Host          // by hostid
	hostByID     map[int]store.Host
	hostByName   map[string]store.Host
	devices      []store.Device // by devid
	devByID      map[int]store.Device
}

func (n *namespace) class(dmid, classid int) (store.Class, bool) {
	for _, c := range n.classes[dmid] {
		if c.ID == classid {
			return c, true
		}
	}
	if classid == 0 {
		// Class 0 exists implicitly in every domain ("default").
		return store.Class{DomainID: dmid, ID: 0, Name: "default"}, true
	}
	return store.Class{}, false
}

func (n *namespace) classByName(dmid int, name string) (store.Class, bool) {
	for _, c := range n.classes[dmid] {
		if c.Name == name {
			return c, true
		}
	}
	if name == "default" {
		return n.class(dmid, 0)
	}
	return store.Class{}, false
}

// nsCache refreshes the snapshot when it is older than ttl or invalidated.
type nsCache struct {
	st  store.Store
	ttl time.Duration

	mu      sync.Mutex
	cur     *namespace
	loaded  time.Time
	version uint64 // bumped by invalidate; a load started before is discarded
}

func (c *nsCache) invalidate() {
	c.mu.Lock()
	c.cur = nil
	c.version++
	c.mu.Unlock()
}

func (c *nsCache) get(ctx context.Context) (*namespace, error) {
	c.mu.Lock()
	if c.cur != nil && time.Since(c.loaded) < c.ttl {
		n := c.cur
		c.mu.Unlock()
		return n, nil
	}
	v := c.version
	c.mu.Unlock()

	n, err := loadNamespace(ctx, c.st)
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

func loadNamespace(ctx context.Context, st store.Store) (*namespace, error) {
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
	n := &namespace{
		domains:      doms,
		domainByName: map[string]store.Domain{},
		domainByID:   map[int]store.Domain{},
		classes:      map[int][]store.Class{},
		hosts:        hosts,
		hostByID:     map[int]store.Host{},
		hostByName:   map[string]store.Host{},
		devices:      devs,
		devByID:      map[int]store.Device{},
	}
	sort.Slice(n.domains, func(i, j int) bool { return n.domains[i].ID < n.domains[j].ID })
	for _, d := range doms {
		n.domainByName[d.Name] = d
		n.domainByID[d.ID] = d
	}
	for _, c := range cls {
		n.classes[c.DomainID] = append(n.classes[c.DomainID], c)
	}
	for _, l := range n.classes {
		sort.Slice(l, func(i, j int) bool { return l[i].ID < l[j].ID })
	}
	sort.Slice(n.hosts, func(i, j int) bool { return n.hosts[i].ID < n.hosts[j].ID })
	for _, h := range hosts {
		n.hostByID[h.ID] = h
		n.hostByName[h.Name] = h
	}
	sort.Slice(n.devices, func(i, j int) bool { return n.devices[i].ID < n.devices[j].ID })
	for _, d := range devs {
		n.devByID[d.ID] = d
	}
	return n, nil
}

// mkcolCache remembers directories made on storage nodes (for an hour, as
// Device::create_directory did) and devices that answered MKCOL with 400 or
// 501 (servers that need no MKCOL).
type mkcolCache struct {
	mu      sync.Mutex
	made    map[string]time.Time
	noMkcol map[int]bool
	cleaned time.Time
}

func (m *mkcolCache) done(url string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.made[url]
	return ok && time.Since(t) < time.Hour
}

func (m *mkcolCache) mark(url string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.made == nil {
		m.made = map[string]time.Time{}
	}
	now := time.Now()
	m.made[url] = now
	if now.Sub(m.cleaned) > 5*time.Minute {
		m.cleaned = now
		for k, v := range m.made {
			if now.Sub(v) > time.Hour {
				delete(m.made, k)
			}
		}
	}
}

func (m *mkcolCache) skipDevice(devid int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.noMkcol[devid]
}

func (m *mkcolCache) setSkipDevice(devid int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.noMkcol == nil {
		m.noMkcol = map[int]bool{}
	}
	m.noMkcol[devid] = true
}
