package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
)

// galeraNodes is the size of the shared cluster: three, the smallest a
// Galera user runs (two lose quorum with either node).
const galeraNodes = 3

// sharedGalera is the private 3-node Galera cluster that the tests of this
// binary which leave the cluster as they found it share (each in a
// database of its own, galeraDatabase): started by the first of them,
// removed by TestMain. Starting one costs about ten seconds.
var sharedGalera struct {
	sync.Mutex
	g       *dbinstance.Galera
	err     error
	started bool
}

// galeraCluster returns the shared cluster, started on first use; where
// Galera cannot run here the test is skipped, or fails under CI.
func galeraCluster(t *testing.T) *dbinstance.Galera {
	t.Helper()
	if err := dbinstance.Available("galera"); err != nil {
		testdb.Unavailable(t, "galera", err.Error())
	}
	sharedGalera.Lock()
	defer sharedGalera.Unlock()
	if !sharedGalera.started {
		sharedGalera.started = true
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		t0 := time.Now()
		sharedGalera.g, sharedGalera.err = dbinstance.StartGalera(ctx, dbinstance.GaleraOptions{Nodes: galeraNodes})
		if sharedGalera.err == nil {
			t.Logf("shared Galera cluster of %d started in %v", galeraNodes, time.Since(t0).Round(time.Millisecond))
		}
	}
	if sharedGalera.err != nil {
		t.Fatalf("private Galera cluster: %v", sharedGalera.err)
	}
	return sharedGalera.g
}

// stopSharedGalera removes the shared cluster (TestMain).
func stopSharedGalera() error {
	sharedGalera.Lock()
	defer sharedGalera.Unlock()
	if sharedGalera.g == nil {
		return nil
	}
	err := sharedGalera.g.Cleanup()
	sharedGalera.g = nil
	return err
}

var galeraDatabases atomic.Int64

// galeraDatabase creates a database of t's own through the cluster's first
// node and returns its name once every node knows it, dropping it when t
// ends. The other nodes apply a CREATE DATABASE after the first has
// answered it: a Store opened on one of them before then would fail with
// 1049, "Unknown database".
func galeraDatabase(t *testing.T, g *dbinstance.Galera) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("galera_%d", galeraDatabases.Add(1))
	nodes := g.Nodes()
	admin := openNodeDB(t, nodes[0], "")
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	if err := g.WaitDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	return name
}

// openNodeDB is a pool on database (none when "") of node n, outside any
// Store, with the session variables given as name, value pairs; closed
// when t ends.
func openNodeDB(t testing.TB, n *dbinstance.GaleraNode, database string, vars ...string) *sql.DB {
	t.Helper()
	cfg, err := gomysql.ParseDSN(n.DriverDSN(database))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{}
	for i := 0; i+1 < len(vars); i += 2 {
		cfg.Params[vars[i]] = vars[i+1]
	}
	c, err := gomysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db
}
