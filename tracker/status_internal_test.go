package tracker

import (
	"slices"
	"testing"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// The banner names a host whose every watched device is unreachable once,
// and the other unreachable devices together; what an operator marked
// down or dead, what the monitor has not looked at yet and what no
// monitor watches are not alarms.
func TestUnreachable(t *testing.T) {
	hosts := []store.Host{
		{ID: 1, Name: "a", IP: "10.0.0.1", HTTPPort: 7500, Status: store.HostAlive},
		{ID: 2, Name: "b", IP: "10.0.0.2", HTTPPort: 7500, Status: store.HostAlive},
		{ID: 3, Name: "c", IP: "10.0.0.3", HTTPPort: 7500, Status: store.HostDown},
		{ID: 4, Name: "d", IP: "10.0.0.4", HTTPPort: 7500, Status: store.HostAlive},
	}
	devs := []store.Device{
		{ID: 1, HostID: 1, Status: store.DeviceAlive}, {ID: 2, HostID: 1, Status: store.DeviceDrain},
		{ID: 3, HostID: 1, Status: store.DeviceDead}, // marked dead: not counted
		{ID: 4, HostID: 2, Status: store.DeviceAlive}, {ID: 5, HostID: 2, Status: store.DeviceReadOnly},
		{ID: 6, HostID: 3, Status: store.DeviceAlive}, // its host is marked down
		{ID: 7, HostID: 4, Status: store.DeviceAlive}, {ID: 8, HostID: 4, Status: store.DeviceAlive},
		{ID: 9, HostID: 4, Status: store.DeviceAlive},
	}
	obs := map[int]cluster.Observation{
		1: {Monitored: true, State: cluster.StateUnreachable}, 2: {Monitored: true, State: cluster.StateUnreachable},
		3: {Monitored: true, State: cluster.StateUnreachable},
		4: {Monitored: true, State: cluster.StateWriteable}, 5: {Monitored: true, State: cluster.StateUnreachable},
		6: {Monitored: true, State: cluster.StateUnreachable},
		7: {Monitored: true, State: cluster.StateUnreachable}, 8: {Monitored: true}, // 8 not looked at yet
		9: {Monitored: true, State: cluster.StateUnreachable},
	}
	got := unreachable(hosts, devs, func(id int) cluster.Observation { return obs[id] })
	want := []string{"Host a (10.0.0.1:7500) unreachable: dev1, dev2", "Host d (10.0.0.4:7500) unreachable: dev7, dev9", "Devices unreachable: dev5"}
	if !slices.Equal(got, want) {
		t.Errorf("unreachable = %q\nwant %q", got, want)
	}
	if got := unreachable(hosts, devs, func(int) cluster.Observation { return cluster.Observation{} }); got != nil {
		t.Errorf("with no monitor: %q; want nothing", got)
	}
}
