package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
)

// infraKinds lists the faults the run's infrastructure (fault proxy,
// private database server) can make.
func (r *run) infraKinds() []string { return nil }

func (r *run) infraFault(ctx context.Context, rng *rand.Rand, kind string) error {
	return fmt.Errorf("fault %q not available", kind)
}
