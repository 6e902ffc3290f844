package jobs

import (
	"fmt"

	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// parsePolicy is cluster.ParseReplPolicy in the worker's terms; where the
// copies go is the cluster model's (cluster.ReplPolicy.ReplicateTo).
func parsePolicy(s string) (cluster.ReplPolicy, error) {
	p, err := cluster.ParseReplPolicy(s)
	if err != nil {
		return cluster.ReplPolicy{}, fmt.Errorf("jobs: unsupported replication policy: %w", err)
	}
	return p, nil
}
