package tracker

import (
	"path/filepath"
	"testing"

	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// The standard jobs manager and the tracker read the namespace through one
// cache, so that clear_cache and the tracker's own changes reach the
// workers at once rather than after namespace_cache_ttl.
func TestNamespaceCacheShared(t *testing.T) {
	st, err := store.Open(t.Context(), "sqlite:///"+filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := DefaultConfig()
	m := jobs.New(st, JobsOptions(cfg))
	tr, err := New(cfg, st, &Options{Jobs: m})
	if err != nil {
		t.Fatal(err)
	}
	if tr.q.NS != m.Namespace() {
		t.Error("the tracker and its workers cache the namespace separately")
	}
	if tr.q.NS.TTL() != cfg.NamespaceCacheTTL {
		t.Errorf("TTL %v; want namespace_cache_ttl %v", tr.q.NS.TTL(), cfg.NamespaceCacheTTL)
	}
}
