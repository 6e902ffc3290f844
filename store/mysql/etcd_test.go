package mysql_test

import (
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	_ "github.com/gomogile/gomogile/store/etcd"
)

// etcdHarness runs the suite with the Stores' locks in etcd (lock_dsn)
// instead of GET_LOCK.
type etcdHarness struct {
	*harness
	locks string
}

func (h *etcdHarness) DSN() string { return testdb.WithLockDSN(h.harness.DSN(), h.locks) }

// TestConformanceEtcd runs the suite again with the locks in etcd.
func TestConformanceEtcd(t *testing.T) {
	conformance.Run(t, &etcdHarness{harness: newHarness(t), locks: testdb.Etcd(t)})
}
