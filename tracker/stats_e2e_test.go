package tracker_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Point 12 of issue 9: "!stats" has ProcManager's work_queue_for_<job> and
// work_sent_to_<job> lines, "<name> <value>" among the others in sorted
// order, once a queue has had work.
func TestStats_WorkCounters(t *testing.T) {
	e := startE2E(t, "sqlite:///"+t.TempDir()+"/db", 1, 2, nil)
	c := e.trackers[0].dial()
	stats := func() []string { return c.admin("!stats") }
	for _, l := range stats() {
		if strings.HasPrefix(l, "work_") {
			t.Errorf("!stats before any work: %q; want no work_ counters", l)
		}
	}
	fid := e.store(t, "counted", []byte("replicate me"))
	waitFor(t, 20*time.Second, "replication", func() bool { return len(e.blobs(fid)) == 2 })
	got := stats()
	if !slices.Contains(got, "work_queue_for_replicate 0") {
		t.Errorf("!stats: %q; want work_queue_for_replicate 0", got)
	}
	sent := -1
	for _, l := range got {
		if v, ok := strings.CutPrefix(l, "work_sent_to_replicate "); ok {
			sent, _ = strconv.Atoi(v)
		}
	}
	if sent < 1 {
		t.Errorf("!stats: %q; want work_sent_to_replicate >= 1", got)
	}
	// The lines after the four fixed ones are sorted by name.
	names := make([]string, 0, len(got))
	for _, l := range got[4:] {
		names = append(names, strings.Fields(l)[0])
	}
	if !slices.IsSorted(names) {
		t.Errorf("!stats counters not sorted: %q", got)
	}
}
