package mysql_test

import (
	"testing"

	"github.com/gomogile/gomogile/conformance"
)

var _ conformance.Harness = (*harness)(nil)

func TestConformance(t *testing.T) {
	conformance.Run(t, newHarness(t))
}
