package tracker_test

import (
	"path/filepath"
	"testing"

	"github.com/gomogile/gomogile/tracker"
)

// The sample config shipped in examples/ must load: a key renamed or a
// value the parser refuses would otherwise reach operators first.
func TestExampleConfigLoads(t *testing.T) {
	path := filepath.Join("..", "examples", "mogilefsd.conf")
	m := &tracker.Main{Environ: []string{}}
	cfg, err := m.LoadConfig([]string{"--config", path})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	def := tracker.DefaultConfig()
	if cfg.MogstoredStreamPort != def.MogstoredStreamPort || cfg.NodeTimeout != def.NodeTimeout || cfg.QueryJobs != def.QueryJobs {
		t.Errorf("%s: stream port %d, node timeout %v, query jobs %d; the sample claims the defaults %d, %v, %d",
			path, cfg.MogstoredStreamPort, cfg.NodeTimeout, cfg.QueryJobs, def.MogstoredStreamPort, def.NodeTimeout, def.QueryJobs)
	}
}
