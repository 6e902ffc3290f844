package sqlite_test

import (
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/testkit/rawbench"
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

// BenchmarkCompare prints, for make bench, each hot Store operation beside
// the raw SQL doing its work, alternating over several passes (medians):
// "bench: backend=… op=… ours_us=… raw_us=… ratio=…" lines and a table.
func BenchmarkCompare(b *testing.B) {
	h := newHarness(b)
	rawbench.CompareOnce(b, h.DSN(), func(b *testing.B) {
		if err := h.Reset(b.Context()); err != nil {
			b.Fatal(err)
		}
	})
}
