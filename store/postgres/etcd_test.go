package postgres_test

import (
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	_ "github.com/gomogile/gomogile/store/etcd"
)

// TestConformanceEtcd runs the suite again with the Stores' locks in etcd
// (lock_dsn) instead of the lease table.
func TestConformanceEtcd(t *testing.T) {
	h := newHarness(t)
	h.dsn = testdb.WithLockDSN(h.dsn, testdb.Etcd(t))
	conformance.Run(t, h)
}
