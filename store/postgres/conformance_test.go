package postgres_test

import (
	"testing"

	"github.com/gomogile/gomogile/conformance"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, newHarness(t))
}

// TestConformancePooler reruns the suite as a tracker behind a
// transaction-mode pooler is configured: no LISTEN, no prepared statements.
func TestConformancePooler(t *testing.T) {
	if testing.Short() {
		t.Skip("second full run of the suite")
	}
	conformance.Run(t, newHarness(t, "lock_notify=false", "default_query_exec_mode=simple_protocol"))
}

// BenchmarkConformance runs the suite's benchmarks; BenchmarkLockCycle
// holds the raw-SQL baselines for the lock cycle.
func BenchmarkConformance(b *testing.B) {
	conformance.RunBenchmarks(b, newHarness(b))
}
