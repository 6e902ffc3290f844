package jobs

import (
	"reflect"
	"slices"
	"testing"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

func TestParsePolicy(t *testing.T) {
	mh := func(n int) cluster.ReplPolicy { return cluster.ReplPolicy{Kind: "MultipleHosts", Min: n} }
	md := func(n int) cluster.ReplPolicy { return cluster.ReplPolicy{Kind: "MultipleDevices", Min: n} }
	for _, tc := range []struct {
		in      string
		want    cluster.ReplPolicy
		wantErr bool
	}{
		{"", mh(0), false},
		{"MultipleHosts()", mh(0), false},
		{"MultipleHosts(3)", mh(3), false},
		{" MultipleDevices( 2 ) ", md(2), false},
		{"Union(MultipleHosts(), MultipleDevices())", cluster.ReplPolicy{Kind: "Union", Members: []cluster.ReplPolicy{mh(0), md(0)}}, false},
		{"Union(MultipleNetworks(2))", cluster.ReplPolicy{}, true},
		{"MultipleHosts", cluster.ReplPolicy{}, true},
	} {
		got, err := parsePolicy(tc.in)
		if (err != nil) != tc.wantErr || (err == nil && !reflect.DeepEqual(got.ReplPolicy, tc.want)) {
			t.Errorf("parsePolicy(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// dev builds a device as the monitor would leave it: observed writeable,
// half full.
func dev(id, host int) *device {
	return &device{
		Device: store.Device{ID: id, HostID: host, Status: store.DeviceAlive, Weight: 100, MBTotal: 1000, MBUsed: 500},
		Host:   store.Host{ID: host, Status: store.HostAlive},
		Obs:    cluster.Observation{Monitored: true, State: cluster.StateWriteable},
	}
}

// set are the original's default settings: min_free_space 100 MB.
var set = cluster.DefaultSettings()

func ids(devs []*device) []int {
	var out []int
	for _, d := range devs {
		out = append(out, d.ID)
	}
	slices.Sort(out)
	return out
}

func TestMultipleHosts_ReplicateTo(t *testing.T) {
	// h1: d1 d2, h2: d3, h3: d4
	all := map[int]*device{1: dev(1, 1), 2: dev(2, 1), 3: dev(3, 2), 4: dev(4, 3)}
	mh := policy{cluster.ReplPolicy{Kind: "MultipleHosts"}}
	on := func(idl ...int) []*device {
		var out []*device
		for _, id := range idl {
			out = append(out, all[id])
		}
		return out
	}

	rr := mh.replicateTo(on(1), all, nil, 2, set)
	if rr.happy || !slices.Equal(ids(rr.ideal), []int{3, 4}) || !slices.Equal(ids(rr.desp), []int{2}) {
		t.Errorf("one copy on h1: %+v; want ideal [3 4], desperate [2]", rr)
	}
	if rr := mh.replicateTo(on(1, 3), all, nil, 2, set); !rr.happy || rr.tooHappy {
		t.Errorf("copies on two hosts, min 2: %+v; want happy", rr)
	}
	if rr := mh.replicateTo(on(1, 3, 4), all, nil, 2, set); !rr.tooHappy {
		t.Errorf("three hosts, min 2: %+v; want too happy", rr)
	}
	if rr := mh.replicateTo(on(1), all, map[int]bool{3: true, 4: true}, 2, set); !slices.Equal(ids(rr.ideal), nil) || !slices.Equal(ids(rr.desp), []int{2}) {
		t.Errorf("other hosts failed: %+v; want only the desperate d2", rr)
	}
	// A device without room takes nothing.
	full := dev(5, 4)
	full.MBUsed = full.MBTotal - 50
	all[5] = full
	if rr := mh.replicateTo(on(1), all, nil, 2, set); slices.Contains(ids(rr.ideal), 5) {
		t.Errorf("full device offered: %+v", rr)
	}
	delete(all, 5)
	// Readonly and unobserved devices take no copies.
	all[3].Status = store.DeviceReadOnly
	all[4].Obs.State = ""
	if rr := mh.replicateTo(on(1), all, nil, 2, set); len(rr.ideal) != 0 || !slices.Equal(ids(rr.desp), []int{2}) {
		t.Errorf("only d2 writeable: %+v; want desperate [2]", rr)
	}
}

func TestMultipleDevices_ReplicateTo(t *testing.T) {
	all := map[int]*device{1: dev(1, 1), 2: dev(2, 1), 3: dev(3, 1)}
	md := policy{cluster.ReplPolicy{Kind: "MultipleDevices", Min: 3}}
	rr := md.replicateTo([]*device{all[1]}, all, nil, 2, set)
	if rr.happy || !slices.Equal(ids(rr.ideal), []int{2, 3}) {
		t.Errorf("MultipleDevices(3) on one device: %+v; want ideal [2 3]", rr)
	}
	if rr := md.replicateTo([]*device{all[1], all[2], all[3]}, all, nil, 2, set); !rr.happy || rr.tooHappy {
		t.Errorf("on three: %+v; want happy", rr)
	}
}

// A Union is met when every member is; it asks for what the first unmet
// member wants, and is too happy only when every member is.
func TestUnion_ReplicateTo(t *testing.T) {
	// h1: d1 d2, h2: d3
	all := map[int]*device{1: dev(1, 1), 2: dev(2, 1), 3: dev(3, 2)}
	u, err := parsePolicy("Union(MultipleHosts(2), MultipleDevices(3))")
	if err != nil {
		t.Fatal(err)
	}
	if rr := u.replicateTo([]*device{all[1]}, all, nil, 1, set); rr.happy || !slices.Equal(ids(rr.ideal), []int{3}) {
		t.Errorf("one copy: %+v; want MultipleHosts' ideal [3]", rr)
	}
	if rr := u.replicateTo([]*device{all[1], all[3]}, all, nil, 1, set); rr.happy || !slices.Equal(ids(rr.ideal), []int{2}) {
		t.Errorf("two hosts, two devices: %+v; want MultipleDevices' ideal [2]", rr)
	}
	if rr := u.replicateTo([]*device{all[1], all[2], all[3]}, all, nil, 1, set); !rr.happy || rr.tooHappy {
		t.Errorf("three devices on two hosts: %+v; want happy, not too happy", rr)
	}
	if n := u.Copies(1); n != 3 {
		t.Errorf("copies = %d; want 3", n)
	}
}
