package jobs

import (
	"context"
	"fmt"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// device is the cluster model's device: row, host and observation.
type device = cluster.Device

// world is one consistent read of hosts, devices and classes joined with
// this tracker's current observations, and the settings to judge them by.
type world struct {
	snap *cluster.Snapshot
	set  cluster.Settings
	devs map[int]*device
}

// loadWorld joins the cached namespace with this tracker's current
// observations. Rows may be up to the namespace cache's TTL old;
// observations are always current. Devices in need (those a fid is on)
// must be in the result if they exist: a device missing from a cached read
// is re-read, because workers take a missing device for a deleted one.
func (m *Manager) loadWorld(ctx context.Context, need ...int) (*world, error) {
	snap, err := m.ns.Need(ctx, need...)
	if err != nil {
		return nil, fmt.Errorf("jobs: read namespace: %w", err)
	}
	return m.join(snap), nil
}

// freshWorld reads the rows anew.
func (m *Manager) freshWorld(ctx context.Context) (*world, error) {
	snap, err := m.ns.Fresh(ctx)
	if err != nil {
		return nil, fmt.Errorf("jobs: read namespace: %w", err)
	}
	return m.join(snap), nil
}

func (m *Manager) join(snap *cluster.Snapshot) *world {
	w := &world{snap: snap, set: m.opts.Settings, devs: make(map[int]*device, len(snap.Devices))}
	for _, d := range snap.JoinAll(m.obs.observe) {
		w.devs[d.ID] = &d
	}
	return w
}

// sorted is the world's devices by devid.
func (w *world) sorted() []device {
	out := make([]device, 0, len(w.devs))
	for _, id := range sortedIDs(w.devs) {
		out = append(out, *w.devs[id])
	}
	return out
}

// class returns the file's class; a class without a replica count, and a
// missing class row, get default_mindevcount as the original's implicit
// default class does.
func (w *world) class(f store.File) store.Class {
	if c, ok := w.snap.Class(f.DomainID, f.ClassID, w.set); ok {
		return c
	}
	return store.Class{DomainID: f.DomainID, ID: f.ClassID, Name: "default", MinDevCount: w.set.DefaultMinDevCount}
}
