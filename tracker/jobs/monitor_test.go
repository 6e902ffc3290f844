package jobs_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/jobs"
)

func TestMonitor_UsageAndObservedState(t *testing.T) {
	c := newCluster(t)
	c.addNode(1, 2)
	n2 := c.addNode(3)
	if err := c.st.SetDeviceState(t.Context(), 2, store.DeviceReadOnly); err != nil {
		t.Fatal(err)
	}
	m := start(t, c.st, fastOptions(t))

	observed := func(dev int, want string) func() bool {
		return func() bool { got, ok := m.Observed(dev); return ok && got == want }
	}
	waitFor(t, 10*time.Second, "dev1 writeable", observed(1, "writeable"))
	waitFor(t, 10*time.Second, "dev3 writeable", observed(3, "writeable"))
	// readonly devices are not test-written: readable.
	waitFor(t, 10*time.Second, "dev2 readable", observed(2, "readable"))

	devs, err := c.st.Devices(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.MBTotal <= 0 || d.MBUsed < 0 || d.MBUsed > d.MBTotal || d.MBAsOf.IsZero() {
			t.Errorf("dev%d usage total=%d used=%d asof=%v; want recorded", d.ID, d.MBTotal, d.MBUsed, d.MBAsOf)
		}
	}
	if _, ok := m.Observed(99); ok {
		t.Errorf("Observed(99) ok; want false for an unknown device")
	}

	n2.srv.Close()
	waitFor(t, 10*time.Second, "dev3 unreachable", observed(3, "unreachable"))
	if got, _ := m.Observed(1); got != "writeable" {
		t.Errorf("dev1 = %q after another node stopped; want writeable", got)
	}
}

func TestManager_SetWantAndStats(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	m := start(t, c.st, fastOptions(t))
	running := func(name string) int {
		for _, s := range m.Stats() {
			if s.Name == name {
				return s.Running
			}
		}
		t.Fatalf("no stats for %s", name)
		return 0
	}
	if err := m.SetWant(jobs.JobReplicate, 4); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "4 replicate workers", func() bool { return running(jobs.JobReplicate) == 4 })
	if err := m.SetWant(jobs.JobDelete, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "no delete worker", func() bool { return running(jobs.JobDelete) == 0 })
	if err := m.SetWant(jobs.JobMonitor, 2); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("SetWant(monitor) = %v; want ErrInvalid", err)
	}
	if err := m.SetWant(jobs.JobFsck, -1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("SetWant(fsck, -1) = %v; want ErrInvalid", err)
	}
	var names []string
	for _, s := range m.Stats() {
		names = append(names, s.Name)
	}
	want := []string{"delete", "fsck", "job_master", "monitor", "reaper", "replicate"}
	if len(names) != len(want) {
		t.Fatalf("stats for %v; want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("stats[%d] = %s; want %s", i, names[i], want[i])
		}
	}
}
