package postgres_test

import (
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/rawbench"
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
// BenchmarkConformance times the Store's hot operations and, beside them
// in the same run, the raw statements they wrap.
func BenchmarkConformance(b *testing.B) {
	h := newHarness(b)
	conformance.RunBenchmarks(b, h)
	rawbench.Run(b, h.DSN(), func(b *testing.B) {
		if err := h.Reset(b.Context()); err != nil {
			b.Fatal(err)
		}
	})
}

// TestConformancePgBouncer runs the suite through a real PgBouncer in
// transaction-pooling mode, in front of a private server, with the pooler
// settings of the package doc (# Poolers).
func TestConformancePgBouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("third full run of the suite")
	}
	for _, kind := range []string{"postgres", "pgbouncer"} {
		if err := dbinstance.Available(kind); err != nil {
			t.Skipf("no private %s: %v", kind, err)
		}
	}
	pg := privatePostgres(t)
	bouncer, err := dbinstance.StartPgBouncer(t.Context(), pg.Addr(), dbinstance.BouncerOptions{PoolMode: "transaction", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bouncer.Cleanup() })
	conformance.Run(t, &harness{
		dsn:     withParams(bouncer.DSN("test"), "lock_lease=1s", "lock_notify=false", "default_query_exec_mode=simple_protocol"),
		admin:   pg.DSN("test"),
		pooled:  true,
		bouncer: bouncer,
		logf:    t.Logf,
		origin:  "private instance " + pg.Addr() + " behind PgBouncer " + bouncer.Addr(),
	})
}
