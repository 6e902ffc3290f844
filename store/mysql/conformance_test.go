package mysql_test

import (
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/testkit/rawbench"
)

var _ conformance.Harness = (*harness)(nil)

func TestConformance(t *testing.T) {
	conformance.Run(t, newHarness(t))
}

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
