package jobs

import (
	"reflect"
	"testing"

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
		if (err != nil) != tc.wantErr || (err == nil && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("parsePolicy(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
