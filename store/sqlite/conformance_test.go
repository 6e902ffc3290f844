package sqlite_test

import (
	"testing"

	"github.com/gomogile/gomogile/conformance"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, newHarness(t))
}
