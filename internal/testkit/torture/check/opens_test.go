package check

import (
	"testing"
	"time"
)

func TestOpens(t *testing.T) {
	bound := 1000 * time.Millisecond
	opens := []StoreOpen{
		{Store: "p0.0s0", Start: at(0), End: at(200), Opened: true},
		// Open after 1.5s, but the pooler was down for 0.7s of it.
		{Store: "p1.1s0", Start: at(0), End: at(1500), Opened: true, Excused: []Span{{at(100), at(800)}}},
		// Cut off by the end of the run before the bound: not judged.
		{Store: "p2.1s0", Start: at(5000), End: at(5900), LastErr: "unavailable"},
		// Killed in its first attempt: no end known, not judged.
		{Store: "p2.2s0", Start: at(6000)},
	}
	t.Run("InTime", func(t *testing.T) {
		wantViolations(t, Opens(opens, bound), InvOpen, 0)
	})
	t.Run("Late", func(t *testing.T) {
		o := append([]StoreOpen(nil), opens...)
		o = append(o, StoreOpen{Store: "p1.2s0", Start: at(2000), End: at(3500), Opened: true})
		wantViolations(t, Opens(o, bound), InvOpen, 1, "p1.2s0", "1.5s counted (0s excused)")
	})
	t.Run("NeverOpened", func(t *testing.T) {
		o := append([]StoreOpen(nil), opens...)
		o = append(o, StoreOpen{Store: "p0.3s0", Start: at(2000), End: at(4000), LastErr: "store: unavailable: connection refused"})
		wantViolations(t, Opens(o, bound), InvOpen, 1, "p0.3s0", "still not open", "last error: store: unavailable: connection refused")
	})
	t.Run("OverlappingExcusesCountOnce", func(t *testing.T) {
		// The database and the pooler down at once: 0.4s excused, not 0.8s.
		o := []StoreOpen{{Store: "p0.1s0", Start: at(0), End: at(1500), Opened: true, Excused: []Span{{at(100), at(500)}, {at(100), at(500)}, {at(-900), at(-100)}}}}
		wantViolations(t, Opens(o, bound), InvOpen, 1, "1.1s counted (400ms excused)")
	})
}
