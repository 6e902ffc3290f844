package query

import (
	"testing"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// get_paths reads from less busy devices first, as the original's
// sort_devs_by_utilization: weight 102-util for a whole-number figure,
// the device weight otherwise, never 0.
func TestReadWeight(t *testing.T) {
	util := map[int]string{1: "10", 2: "12.50", 3: "-", 5: "102"}
	observe := func(id int) cluster.Observation {
		v, ok := util[id]
		return cluster.Observation{Monitored: true, State: cluster.StateWriteable, Utilization: v, UtilizationOK: ok}
	}
	for _, tc := range []struct {
		dev  store.Device
		want float64
	}{
		{store.Device{ID: 1, Weight: 100}, 92},
		{store.Device{ID: 2, Weight: 40}, 40},
		{store.Device{ID: 3, Weight: 0}, 100},
		{store.Device{ID: 4, Weight: 7}, 7},
		{store.Device{ID: 5, Weight: 50}, 100},
	} {
		if got := readWeight(tc.dev, observe(tc.dev.ID)); got != tc.want {
			t.Errorf("readWeight(dev%d, util %q) = %v; want %v", tc.dev.ID, util[tc.dev.ID], got, tc.want)
		}
	}
	if got := readWeight(store.Device{ID: 1, Weight: 30}, cluster.Observation{}); got != 30 {
		t.Errorf("readWeight without a running monitor = %v; want the device weight 30", got)
	}
}
