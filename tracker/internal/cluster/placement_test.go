package cluster

import (
	"slices"
	"testing"

	"github.com/gomogile/gomogile/store"
)

// dev builds a device as the monitor would leave it: observed writeable,
// half full.
func dev(id, host int) *Device {
	return &Device{
		Device: store.Device{ID: id, HostID: host, Status: store.DeviceAlive, Weight: 100, MBTotal: 1000, MBUsed: 500},
		Host:   store.Host{ID: host, Status: store.HostAlive},
		Obs:    Observation{Monitored: true, State: StateWriteable},
	}
}

// set are the original's default settings: min_free_space 100 MB.
var set = DefaultSettings()

func ids(devs []*Device) []int {
	var out []int
	for _, d := range devs {
		out = append(out, d.ID)
	}
	slices.Sort(out)
	return out
}

func TestMultipleHosts_ReplicateTo(t *testing.T) {
	// h1: d1 d2, h2: d3, h3: d4
	all := map[int]*Device{1: dev(1, 1), 2: dev(2, 1), 3: dev(3, 2), 4: dev(4, 3)}
	mh := ReplPolicy{Kind: "MultipleHosts"}
	on := func(idl ...int) []*Device {
		var out []*Device
		for _, id := range idl {
			out = append(out, all[id])
		}
		return out
	}

	rr := mh.ReplicateTo(on(1), all, nil, 2, set)
	if rr.Happy || !slices.Equal(ids(rr.Ideal), []int{3, 4}) || !slices.Equal(ids(rr.Desperate), []int{2}) {
		t.Errorf("one copy on h1: %+v; want ideal [3 4], desperate [2]", rr)
	}
	if rr := mh.ReplicateTo(on(1, 3), all, nil, 2, set); !rr.Happy || rr.TooHappy {
		t.Errorf("copies on two hosts, min 2: %+v; want happy", rr)
	}
	if rr := mh.ReplicateTo(on(1, 3, 4), all, nil, 2, set); !rr.TooHappy {
		t.Errorf("three hosts, min 2: %+v; want too happy", rr)
	}
	if rr := mh.ReplicateTo(on(1), all, map[int]bool{3: true, 4: true}, 2, set); !slices.Equal(ids(rr.Ideal), nil) || !slices.Equal(ids(rr.Desperate), []int{2}) {
		t.Errorf("other hosts failed: %+v; want only the desperate d2", rr)
	}
	// A device without room takes nothing.
	full := dev(5, 4)
	full.MBUsed = full.MBTotal - 50
	all[5] = full
	if rr := mh.ReplicateTo(on(1), all, nil, 2, set); slices.Contains(ids(rr.Ideal), 5) {
		t.Errorf("full device offered: %+v", rr)
	}
	delete(all, 5)
	// Readonly and unobserved devices take no copies.
	all[3].Status = store.DeviceReadOnly
	all[4].Obs.State = ""
	if rr := mh.ReplicateTo(on(1), all, nil, 2, set); len(rr.Ideal) != 0 || !slices.Equal(ids(rr.Desperate), []int{2}) {
		t.Errorf("only d2 writeable: %+v; want desperate [2]", rr)
	}
}

func TestMultipleDevices_ReplicateTo(t *testing.T) {
	all := map[int]*Device{1: dev(1, 1), 2: dev(2, 1), 3: dev(3, 1)}
	md := ReplPolicy{Kind: "MultipleDevices", Min: 3}
	rr := md.ReplicateTo([]*Device{all[1]}, all, nil, 2, set)
	if rr.Happy || !slices.Equal(ids(rr.Ideal), []int{2, 3}) {
		t.Errorf("MultipleDevices(3) on one device: %+v; want ideal [2 3]", rr)
	}
	if rr := md.ReplicateTo([]*Device{all[1], all[2], all[3]}, all, nil, 2, set); !rr.Happy || rr.TooHappy {
		t.Errorf("on three: %+v; want happy", rr)
	}
}

// A Union is met when every member is; it asks for what the first unmet
// member wants, and is too happy only when every member is.
func TestUnion_ReplicateTo(t *testing.T) {
	// h1: d1 d2, h2: d3
	all := map[int]*Device{1: dev(1, 1), 2: dev(2, 1), 3: dev(3, 2)}
	u, err := ParseReplPolicy("Union(MultipleHosts(2), MultipleDevices(3))")
	if err != nil {
		t.Fatal(err)
	}
	if rr := u.ReplicateTo([]*Device{all[1]}, all, nil, 1, set); rr.Happy || !slices.Equal(ids(rr.Ideal), []int{3}) {
		t.Errorf("one copy: %+v; want MultipleHosts' ideal [3]", rr)
	}
	if rr := u.ReplicateTo([]*Device{all[1], all[3]}, all, nil, 1, set); rr.Happy || !slices.Equal(ids(rr.Ideal), []int{2}) {
		t.Errorf("two hosts, two devices: %+v; want MultipleDevices' ideal [2]", rr)
	}
	if rr := u.ReplicateTo([]*Device{all[1], all[2], all[3]}, all, nil, 1, set); !rr.Happy || rr.TooHappy {
		t.Errorf("three devices on two hosts: %+v; want happy, not too happy", rr)
	}
	if n := u.Copies(1); n != 3 {
		t.Errorf("copies = %d; want 3", n)
	}
}

// Uploads: only devices that should get new files (not readonly, drain,
// down or unobserved, min_free_space left), one per host before a second
// on any host, those with room for the size before those of unknown usage.
func TestUploadDests(t *testing.T) {
	// h1: d1 d2, h2: d3, h3: d4 (drain), h4: d5 (readonly), h5: d6 (full),
	// h6: d7 (not observed yet)
	all := []*Device{dev(1, 1), dev(2, 1), dev(3, 2), dev(4, 3), dev(5, 4), dev(6, 5), dev(7, 6)}
	all[3].Status = store.DeviceDrain
	all[4].Status = store.DeviceReadOnly
	all[5].MBUsed = all[5].MBTotal - 50 // under min_free_space (100 MB)
	all[6].Obs.State = ""
	devs := func() []Device {
		var out []Device
		for _, d := range all {
			out = append(out, *d)
		}
		return out
	}
	idsOf := func(ds []Device) []int {
		var out []int
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	for range 20 { // the order is random, weighted by free space
		got := idsOf(UploadDests(devs(), 0, 3, set))
		if len(got) != 3 || !slices.Contains(got[:2], 3) || got[2] == 3 || slices.ContainsFunc(got, func(id int) bool { return id > 3 }) {
			t.Fatalf("UploadDests(want 3) = %v; want d3 and one of h1's first, the other of h1's third, nothing else", got)
		}
	}
	if got := idsOf(UploadDests(devs(), 0, 1, set)); len(got) != 1 || got[0] > 3 {
		t.Errorf("UploadDests(want 1) = %v", got)
	}
	// 450 MB: only the devices known to have room; with usage unknown
	// everywhere, those.
	all[0].MBUsed = 900
	if got := idsOf(UploadDests(devs(), 450<<20, 3, set)); !slices.Equal(got, []int{3, 2}) && !slices.Equal(got, []int{2, 3}) {
		t.Errorf("UploadDests(450 MB) = %v; want d2 and d3, which have room", got)
	}
	for _, d := range all {
		d.MBTotal, d.MBUsed = 0, 0
	}
	if got := idsOf(UploadDests(devs(), 450<<20, 3, set)); len(got) != 3 {
		t.Errorf("UploadDests with usage unknown = %v; want 3 devices of unknown room", got)
	}
}
