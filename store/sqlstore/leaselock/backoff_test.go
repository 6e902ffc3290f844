package leaselock

import (
	"testing"
	"time"
)

// A waiter that no release elsewhere can wake polls quickly while its wait
// is young, so that a short holding passes to it within a few
// milliseconds, and backs off to maxBackoff once it has waited longer.
func TestLocks_NextBackoff(t *testing.T) {
	const ms = time.Millisecond
	old := pollShortFor
	for _, tc := range []struct {
		name    string
		elapsed []time.Duration
		want    []time.Duration
	}{
		{"Young", []time.Duration{0, 1 * ms, 3 * ms, 7 * ms, 11 * ms, 15 * ms},
			[]time.Duration{1 * ms, 2 * ms, 4 * ms, 4 * ms, 4 * ms, 4 * ms}},
		{"Old", []time.Duration{0, old, old, old, old, old, old, old, old},
			[]time.Duration{1 * ms, 2 * ms, 4 * ms, 8 * ms, 16 * ms, 32 * ms, 64 * ms, 100 * ms, 100 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Locks{cfg: Config{NoListen: true}}
			var got time.Duration
			for i, el := range tc.elapsed {
				got = b.nextBackoff(got, el)
				if got != tc.want[i] {
					t.Fatalf("poll %d (waited %v): backoff %v; want %v", i, el, got, tc.want[i])
				}
			}
		})
	}
}
