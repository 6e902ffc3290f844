package tracker

import (
	"context"
	"testing"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// utilJobs reports fixed monitor figures; it stands in for the jobs
// manager's monitor, not for any database.
type utilJobs map[int]string

func (utilJobs) Open(context.Context) error         { return nil }
func (utilJobs) Close() error                       { return nil }
func (utilJobs) SetWant(string, int) error          { return nil }
func (utilJobs) JobStatus() []JobStatus             { return nil }
func (utilJobs) Classes() []string                  { return nil }
func (utilJobs) Message(string, string) int         { return 0 }
func (utilJobs) MonitorRound(context.Context) error { return nil }
func (u utilJobs) Observe(id int) cluster.Observation {
	v, ok := u[id]
	return cluster.Observation{Monitored: true, State: cluster.StateWriteable,
		Utilization: v, UtilizationOK: ok, RejectBadMD5: true, RejectBadMD5OK: true}
}

// get_paths reads from less busy devices first, as the original's
// sort_devs_by_utilization: weight 102-util for a whole-number figure,
// the device weight otherwise, never 0.
func TestReadWeight(t *testing.T) {
	tr := &Tracker{jobs: utilJobs{1: "10", 2: "12.50", 3: "-", 5: "102"}, jobsOpen: true}
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
		if got := tr.readWeight(tc.dev); got != tc.want {
			t.Errorf("readWeight(dev%d, util %q) = %v; want %v", tc.dev.ID, tr.jobs.(utilJobs)[tc.dev.ID], got, tc.want)
		}
	}
	tr.jobsOpen = false
	if got := tr.readWeight(store.Device{ID: 1, Weight: 30}); got != 30 {
		t.Errorf("readWeight without a running monitor = %v; want the device weight 30", got)
	}
}
