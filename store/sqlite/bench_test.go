package sqlite_test

import (
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/rawbench"
)

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
