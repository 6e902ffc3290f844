package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
)

// galeraHarness runs the suite on one database of a Galera cluster, each
// Store on the next node in turn, with the locks in etcd (lock_dsn), as
// trackers spread over a cluster's nodes must run (galera.go).
type galeraHarness struct {
	*harness // Name, and Reset through the first node
	dsns     []string
	// synced are pools on every node whose sessions read causally
	// (wsrep_sync_wait), so that Reset can wait until each node has
	// applied its deletes.
	synced []*sql.DB
	next   atomic.Uint64
}

var _ conformance.Harness = (*galeraHarness)(nil)

// DSN hands out the nodes in turn: the suite's independent Stores (its
// trackers) land on different nodes.
func (h *galeraHarness) DSN() string {
	return h.dsns[(h.next.Add(1)-1)%uint64(len(h.dsns))]
}

// Reset empties the tables through the first node and returns once every
// node has applied that: a causal read on a node waits until the node has
// applied every transaction the cluster committed before it.
func (h *galeraHarness) Reset(ctx context.Context) error {
	if err := h.harness.Reset(ctx); err != nil {
		return err
	}
	for i, db := range h.synced {
		var one int
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			return fmt.Errorf("reset: wait for node %d: %w", i+1, err)
		}
	}
	return nil
}

// TestConformanceGalera runs the suite on a private 3-node MariaDB Galera
// cluster with its independent Stores on different nodes and their locks
// in etcd: trackers on a database cluster (design §7). The harness's Name
// stays "mysql", the Info case's Driver; the subtest's name, which the
// summary line prints as test=, names the topology.
func TestConformanceGalera(t *testing.T) {
	g := galeraCluster(t)
	database := galeraDatabase(t, g)
	locks := testdb.Etcd(t)
	nodes := g.Nodes()
	h := &galeraHarness{}
	for _, n := range nodes {
		h.dsns = append(h.dsns, testdb.WithLockDSN(n.DSN(database), locks))
		h.synced = append(h.synced, openNodeDB(t, n, database, "wsrep_sync_wait", "1"))
	}
	d, err := store.ParseDSN(nodes[0].DSN(database))
	if err != nil {
		t.Fatal(err)
	}
	h.harness = &harness{dsn: h.dsns[0], database: database, admin: openRaw(t, d)}
	t.Run(fmt.Sprintf("nodes=%d,stores=round-robin", len(nodes)), func(t *testing.T) {
		conformance.Run(t, h)
	})
}

// Origin: the suite ran on the private cluster, not the shared server.
func (h *galeraHarness) Origin() string { return "private Galera cluster" }
