package jobs

import (
	"errors"
	"slices"
	"testing"

	"github.com/gomogile/gomogile/store"
)

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    policy
		wantErr bool
	}{
		{"", policy{kind: "MultipleHosts"}, false},
		{"MultipleHosts()", policy{kind: "MultipleHosts"}, false},
		{"MultipleHosts(3)", policy{kind: "MultipleHosts", min: 3}, false},
		{" MultipleDevices( 2 ) ", policy{kind: "MultipleDevices", min: 2}, false},
		{"Union(MultipleHosts(), MultipleDevices())", policy{}, true},
		{"MultipleHosts", policy{}, true},
	} {
		got, err := parsePolicy(tc.in)
		if (err != nil) != tc.wantErr || (err == nil && got != tc.want) {
			t.Errorf("parsePolicy(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// dev builds a device as the monitor would leave it: observed writeable,
// half full.
func dev(id, host int) *device {
	return &device{
		Device: store.Device{ID: id, HostID: host, Status: store.DeviceAlive, Weight: 100, MBTotal: 1000, MBUsed: 500},
		host:   store.Host{ID: host, Status: store.HostAlive}, hostOK: true, observed: "writeable",
	}
}

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
	mh := policy{kind: "MultipleHosts"}
	on := func(idl ...int) []*device {
		var out []*device
		for _, id := range idl {
			out = append(out, all[id])
		}
		return out
	}

	rr := mh.replicateTo(on(1), all, nil, 2)
	if rr.happy || !slices.Equal(ids(rr.ideal), []int{3, 4}) || !slices.Equal(ids(rr.desp), []int{2}) {
		t.Errorf("one copy on h1: %+v; want ideal [3 4], desperate [2]", rr)
	}
	if rr := mh.replicateTo(on(1, 3), all, nil, 2); !rr.happy || rr.tooHappy {
		t.Errorf("copies on two hosts, min 2: %+v; want happy", rr)
	}
	if rr := mh.replicateTo(on(1, 3, 4), all, nil, 2); !rr.tooHappy {
		t.Errorf("three hosts, min 2: %+v; want too happy", rr)
	}
	if rr := mh.replicateTo(on(1), all, map[int]bool{3: true, 4: true}, 2); !slices.Equal(ids(rr.ideal), nil) || !slices.Equal(ids(rr.desp), []int{2}) {
		t.Errorf("other hosts failed: %+v; want only the desperate d2", rr)
	}
	// A device without room takes nothing.
	full := dev(5, 4)
	full.MBUsed = full.MBTotal - 50
	all[5] = full
	if rr := mh.replicateTo(on(1), all, nil, 2); slices.Contains(ids(rr.ideal), 5) {
		t.Errorf("full device offered: %+v", rr)
	}
	delete(all, 5)
	// Readonly and unobserved devices take no copies.
	all[3].Status = store.DeviceReadOnly
	all[4].observed = ""
	if rr := mh.replicateTo(on(1), all, nil, 2); len(rr.ideal) != 0 || !slices.Equal(ids(rr.desp), []int{2}) {
		t.Errorf("only d2 writeable: %+v; want desperate [2]", rr)
	}
}

func TestMultipleDevices_ReplicateTo(t *testing.T) {
	all := map[int]*device{1: dev(1, 1), 2: dev(2, 1), 3: dev(3, 1)}
	md := policy{kind: "MultipleDevices", min: 3}
	rr := md.replicateTo([]*device{all[1]}, all, nil, 2)
	if rr.happy || !slices.Equal(ids(rr.ideal), []int{2, 3}) {
		t.Errorf("MultipleDevices(3) on one device: %+v; want ideal [2 3]", rr)
	}
	if rr := md.replicateTo([]*device{all[1], all[2], all[3]}, all, nil, 2); !rr.happy || rr.tooHappy {
		t.Errorf("on three: %+v; want happy", rr)
	}
}

func TestRebalancePolicyAndState(t *testing.T) {
	p, err := parseRebalPolicy("from_devices=1,2 to_hosts=3 limit_type=global limit_by=size limit=2m leave_in_drain_mode=1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.fromDevices, []int{1, 2}) || !slices.Equal(p.toHosts, []int{3}) || !p.leaveInDrainMode {
		t.Errorf("parsed %+v", p)
	}
	if n, err := p.limitValue(); err != nil || n != 2<<20 {
		t.Errorf("limit 2m = %d, %v; want %d", n, err, 2<<20)
	}
	for _, bad := range []string{"frm_devices=1", "fid_age=new", "limit_by=percent"} {
		if _, err := parseRebalPolicy(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("parseRebalPolicy(%q) = %v; want ErrInvalid", bad, err)
		}
	}
	for in, want := range map[string]int64{"100": 100, "1k": 1024, "3G": 3 << 30, "5b": 5} {
		if got, err := humanToBytes(in); err != nil || got != want {
			t.Errorf("humanToBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	s := rebalState{sourceDevs: []int{4, 5}, completedDevs: []int{1}, sdevCurrent: 2, sdevLastFid: 99, fidsQueued: 7}
	if got := parseRebalState(s.String()); !slices.Equal(got.sourceDevs, s.sourceDevs) ||
		!slices.Equal(got.completedDevs, s.completedDevs) || got.sdevCurrent != 2 || got.sdevLastFid != 99 || got.fidsQueued != 7 {
		t.Errorf("state round trip: %q -> %+v", s.String(), got)
	}
}

func TestWeightedOrder(t *testing.T) {
	weights := map[string]float64{"heavy": 9, "light": 1, "zero": 0, "negative": -3}
	items := []string{"zero", "light", "negative", "heavy"}
	heavyFirst := 0
	const draws = 2000
	for range draws {
		got := WeightedOrder(items, func(s string) float64 { return weights[s] })
		if len(got) != 2 || !slices.Contains(got, "heavy") || !slices.Contains(got, "light") {
			t.Fatalf("WeightedOrder = %v; want heavy and light once each, nothing else", got)
		}
		if got[0] == "heavy" {
			heavyFirst++
		}
	}
	// Expected 90%; 80% is more than ten standard deviations away.
	if heavyFirst < draws*8/10 || heavyFirst == draws {
		t.Errorf("heavy came first %d times in %d; want about 90%%", heavyFirst, draws)
	}
}
