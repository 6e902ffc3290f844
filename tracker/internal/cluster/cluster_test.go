package cluster

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/store"
)

func TestRebalancePolicyAndState(t *testing.T) {
	p, err := ParseRebalPolicy("from_devices=1,2 to_hosts=3 limit_type=global limit_by=size limit=2m leave_in_drain_mode=1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.FromDevices, []int{1, 2}) || !slices.Equal(p.ToHosts, []int{3}) || !p.LeaveInDrainMode {
		t.Errorf("parsed %+v", p)
	}
	if n, err := p.LimitValue(); err != nil || n != 2<<20 {
		t.Errorf("limit 2m = %d, %v; want %d", n, err, 2<<20)
	}
	for _, bad := range []string{"frm_devices=1", "fid_age=new", "limit_by=percent", "limit_by=count limit=many"} {
		if _, err := ParseRebalPolicy(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ParseRebalPolicy(%q) = %v; want ErrInvalid", bad, err)
		}
	}
	if _, err := ParseRebalPolicy("bogus_key=1"); err == nil || err.Error() != "Invalid setting bogus_key" {
		t.Errorf("unknown key: %v; want the original's text", err)
	}
	for in, want := range map[string]int64{"100": 100, "1k": 1024, "3G": 3 << 30, "5b": 5} {
		if got, err := HumanToBytes(in); err != nil || got != want {
			t.Errorf("HumanToBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	s := RebalState{SourceDevs: []int{4, 5}, CompletedDevs: []int{1}, SdevCurrent: 2, SdevLastFid: 99, FidsQueued: 7}
	if got := ParseRebalState(s.String()); !slices.Equal(got.SourceDevs, s.SourceDevs) ||
		!slices.Equal(got.CompletedDevs, s.CompletedDevs) || got.SdevCurrent != 2 || got.SdevLastFid != 99 || got.FidsQueued != 7 {
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

func TestFidPath(t *testing.T) {
	if got := FidPath(7, 1234567); got != "/dev7/0/001/234/0001234567.fid" {
		t.Errorf("FidPath = %q", got)
	}
	if got := FidDirs(7, 1234567); !slices.Equal(got, []string{"/dev7/0", "/dev7/0/001", "/dev7/0/001/234"}) {
		t.Errorf("FidDirs = %q", got)
	}
}

// The predicates take the settings and the observation as values: the same
// device is judged the same way whoever asks.
func TestDevicePredicates(t *testing.T) {
	d := Device{
		Device: store.Device{ID: 1, HostID: 1, Status: store.DeviceAlive, MBTotal: 1000, MBUsed: 900},
		Host:   store.Host{ID: 1, Status: store.HostAlive},
		Obs:    Observation{Monitored: true, State: StateWriteable},
	}
	if !d.ShouldGetNewFiles(Settings{MinFreeMB: 100}) {
		t.Error("100 MB free, min_free_space 100: want new files")
	}
	if d.ShouldGetNewFiles(Settings{MinFreeMB: 101}) {
		t.Error("100 MB free, min_free_space 101: want none")
	}
	unknown := d
	unknown.MBTotal, unknown.MBUsed = 0, 0
	if !unknown.ShouldGetNewFiles(Settings{MinFreeMB: 1 << 40}) {
		t.Error("usage unknown: min_free_space cannot refuse")
	}
	unknown.Obs.TotalKB, unknown.Obs.UsedKB = 1000*1024, 950*1024
	if unknown.ShouldGetNewFiles(Settings{MinFreeMB: 100}) {
		t.Error("monitor saw 50 MB free: want no new files below min_free_space 100")
	}
	seen := d
	seen.Obs.State = ""
	if seen.ShouldGetNewFiles(Settings{}) || seen.ShouldReadFrom() || !seen.Unobserved() {
		t.Error("unobserved device used")
	}
	seen.Obs = Observation{} // no monitor: the rows decide
	if !seen.ShouldGetNewFiles(Settings{}) || !seen.ShouldReadFrom() || seen.Unobserved() {
		t.Error("without a monitor the database state must decide")
	}
	ro := d
	ro.Obs.State = StateReadable
	if ro.ShouldGetNewFiles(Settings{}) || !ro.ShouldReadFrom() {
		t.Error("readable device: want reads, no new files")
	}
	down := d
	down.Host.Status = store.HostDown
	if down.ShouldReadFrom() || down.CanDeleteFrom() || down.ShouldGetNewFiles(Settings{}) {
		t.Error("device of a down host used")
	}
}

func TestSnapshotClassDefaultMinDevCount(t *testing.T) {
	n := &Snapshot{Classes: map[int][]store.Class{1: {{DomainID: 1, ID: 2, Name: "two", MinDevCount: 2}}}}
	s := Settings{DefaultMinDevCount: 3}
	if c, ok := n.Class(1, 0, s); !ok || c.MinDevCount != 3 || c.Name != "default" {
		t.Errorf("implicit default class = %+v, %v; want mindevcount 3", c, ok)
	}
	if c, ok := n.ClassByName(1, "two", s); !ok || c.MinDevCount != 2 {
		t.Errorf("class two = %+v, %v", c, ok)
	}
	if _, ok := n.Class(1, 9, s); ok {
		t.Error("unknown class found")
	}
}

// The class policies create_class accepts are exactly those the replicate
// worker runs, parsed as ReplicationPolicy::new_from_policy_string parses
// them, with its error texts.
func TestParseReplPolicy(t *testing.T) {
	mh := ReplPolicy{Kind: "MultipleHosts"}
	md := ReplPolicy{Kind: "MultipleDevices"}
	for _, tc := range []struct {
		in      string
		want    ReplPolicy
		wantErr string
	}{
		{"", mh, ""},
		{"MultipleHosts()", mh, ""},
		{"MultipleHosts(3)", ReplPolicy{Kind: "MultipleHosts", Min: 3}, ""},
		{" MultipleDevices( 2 ) ", ReplPolicy{Kind: "MultipleDevices", Min: 2}, ""},
		{"MogileFS::ReplicationPolicy::MultipleDevices(2)", ReplPolicy{Kind: "MultipleDevices", Min: 2}, ""},
		{"Union(MultipleHosts(), MultipleDevices())", ReplPolicy{Kind: "Union", Members: []ReplPolicy{mh, md}}, ""},
		{"Union( MultipleHosts() MultipleDevices() )", ReplPolicy{Kind: "Union", Members: []ReplPolicy{mh, md}}, ""},
		{"Union(Union(MultipleHosts()))", ReplPolicy{Kind: "Union", Members: []ReplPolicy{{Kind: "Union", Members: []ReplPolicy{mh}}}}, ""},
		{"MultipleHosts", ReplPolicy{}, "MogileFS::ReplicationPolicy::MultipleHosts failed to parse args: "},
		{"MultipleHosts(x)", ReplPolicy{}, "MogileFS::ReplicationPolicy::MultipleHosts failed to parse args: (x)"},
		{"MultipleHosts(2) junk", ReplPolicy{}, "Failed to parse policy string: junk"},
		{"(2)", ReplPolicy{}, "Failed to parse policy string: (2)"},
		{"Union()", ReplPolicy{}, "Failed to parse policy string: )"},
		{"Union(MultipleHosts()", ReplPolicy{}, "Failed to parse policy string: "},
		{"Union(MultipleNetworks(2))", ReplPolicy{}, "Failed to load replication policy class MogileFS::ReplicationPolicy::MultipleNetworks: gomogile runs only"},
		{"MultipleNetworks(2)", ReplPolicy{}, "network zones are not implemented"},
		{"HostsPerNetwork(2)", ReplPolicy{}, "network zones are not implemented"},
		{"Bogus(1)", ReplPolicy{}, "Failed to load replication policy class MogileFS::ReplicationPolicy::Bogus"},
		{"My::Policy(1)", ReplPolicy{}, "Failed to load replication policy class My::Policy"},
		{strings.Repeat("Union(", 40) + "MultipleHosts()" + strings.Repeat(")", 40), ReplPolicy{}, "nested more than"},
	} {
		got, err := ParseReplPolicy(tc.in)
		if tc.wantErr == "" && (err != nil || !reflect.DeepEqual(got, tc.want)) || tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("ParseReplPolicy(%q) = %+v, %v; want %+v, error %q", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
