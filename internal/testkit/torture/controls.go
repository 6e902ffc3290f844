package torture

import (
	"fmt"
	"strings"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/torture/broken"
	"github.com/gomogile/gomogile/store"
)

// Control is a negative control: a Store wrapper of package broken, applied
// by every worker process, that breaks one promise on purpose; a run with
// it must report a violation of the invariant named.
type Control struct {
	Name      string // the broken wrapper
	Invariant string // prefix of the Check that must fail
	// FaultEvery is the fault schedule the control needs to show: a late
	// Lost or an unchecked fence matters only once a lock is lost.
	FaultEvery time.Duration
	Faults     []string // the kinds made (all that apply when empty)
	// Duration is how long a run needs to show it (0: a few seconds).
	// Every control shows on every backend: where locks are never lost
	// while their process lives (SQLite), late-lost and unfenced make
	// them expire after a short lease (see package broken).
	Duration time.Duration
	// Locks is the Config.Locks the control runs with ("": the
	// database's own locks).
	Locks string
}

// Controls lists the negative controls.
func Controls() []Control {
	return []Control{
		{Name: "no-exclusion", Invariant: "locks: no two holders at once"},
		{Name: "late-lost", Invariant: "locks: no two holders at once", FaultEvery: 300 * time.Millisecond, Faults: []string{faultSessions}, Duration: 30 * time.Second},
		{Name: "unfenced", Invariant: "counters: guarded counters exact", FaultEvery: 300 * time.Millisecond, Faults: []string{faultSigstop, faultSessions}, Duration: 12 * time.Second},
		// etcd's grants with the metadata database's fence unchecked: a
		// holder paused past its lease writes after its successor's
		// grant, which only the fence row would refuse. (A holder cut off
		// from etcd sees Lost on its own clock before the lease can end,
		// so an etcd partition seldom shows it.)
		{Name: "unfenced", Locks: LocksEtcd, Invariant: "counters: guarded counters exact", FaultEvery: 300 * time.Millisecond, Faults: []string{faultSigstop}, Duration: 20 * time.Second},
		{Name: "double-lease", Invariant: "queue: no row leased twice at once"},
		{Name: "reused-fid", Invariant: "files: fids unique and increasing"},
		{Name: "lost-commit", Invariant: "files: every acknowledged commit present exactly once"},
	}
}

// wrapBroken applies the comma-separated wrappers of package broken named
// by names, in order.
func wrapBroken(names string, st *store.Store) (*store.Store, error) {
	for _, n := range strings.Split(names, ",") {
		var err error
		if st, err = broken.Wrap(strings.TrimSpace(n), st); err != nil {
			return nil, fmt.Errorf("negative control: %w", err)
		}
	}
	return st, nil
}
