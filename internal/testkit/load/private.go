package load

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/freshdb"
)

// Private servers of a run: the etcd cluster that keeps the trackers'
// locks (Config.Locks = "etcd") and the Galera cluster of the "galera"
// backend, started once per run from the installed binaries on private
// loopback ports and removed at its end.

// Galera is the backend of a private 3-node MariaDB Galera cluster: each
// cell gets a fresh database, and tracker i opens it through node i%3 + 1.
// Its trackers need Locks = "etcd" (a Galera node's GET_LOCK is its own).
const Galera = "galera"

// privates are the run's private servers.
type privates struct {
	etcd   *dbinstance.Etcd
	galera *dbinstance.Galera
	cells  int // cells so far, for each cell's lock prefix
}

// start starts what cfg needs.
func (p *privates) start(ctx context.Context, cfg Config) error {
	switch cfg.Locks {
	case "":
	case "etcd":
		e, err := dbinstance.StartEtcd(ctx, dbinstance.EtcdOptions{Logf: cfg.Logf})
		if err != nil {
			return fmt.Errorf("load: private etcd: %w", err)
		}
		p.etcd = e
	default:
		return fmt.Errorf("load: locks %q: want etcd or none", cfg.Locks)
	}
	for _, b := range cfg.Backends {
		if b != Galera {
			continue
		}
		if p.etcd == nil {
			return fmt.Errorf("load: backend %s needs etcd locks (-locks etcd): a Galera node's GET_LOCK is its own", Galera)
		}
		g, err := dbinstance.StartGalera(ctx, dbinstance.GaleraOptions{Logf: cfg.Logf})
		if err != nil {
			return fmt.Errorf("load: private galera: %w", err)
		}
		p.galera = g
	}
	return nil
}

func (p *privates) cleanup() error {
	var first error
	if p.galera != nil {
		first = p.galera.Cleanup()
	}
	if p.etcd != nil {
		if err := p.etcd.Cleanup(); first == nil {
			first = err
		}
	}
	return first
}

// withLocks adds the cell's lock_dsn to a tracker's DSN, when the run keeps
// its locks in etcd: every member, and a prefix of the cell's own, so that
// no cell meets an earlier one's keys.
func (p *privates) withLocks(dsn string, cell int) string {
	if p.etcd == nil {
		return dsn
	}
	lock := p.etcd.DSN(fmt.Sprintf("/gomogile-load/cell%d", cell))
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "lock_dsn=" + url.QueryEscape(lock)
}

// galeraDatabase creates a fresh database through node 1 and returns each
// node's DSN of it, once every node has it (a node applies another's
// CREATE DATABASE a moment after that one answered).
func (p *privates) galeraDatabase(ctx context.Context) (dsns []string, drop freshdb.Drop, err error) {
	nodes := p.galera.Nodes()
	first, drop, err := freshdb.Create(ctx, nodes[0].DSN(""))
	if err != nil {
		return nil, nil, err
	}
	u, err := url.Parse(first)
	if err != nil {
		return nil, nil, err
	}
	name := strings.TrimPrefix(u.Path, "/")
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := p.galera.WaitDatabase(wctx, name); err != nil {
		return nil, drop, err
	}
	for _, n := range nodes {
		dsns = append(dsns, n.DSN(name))
	}
	return dsns, drop, nil
}

// galeraCellDatabase is a Galera cell's fresh database: tracker i opens it
// through node i%3 + 1, directly for the timed run and through a counting
// proxy of its own to that node for the counting pass.
func galeraCellDatabase(ctx context.Context, priv *privates, trackers int) (cellDB, error) {
	nodes, drop, err := priv.galeraDatabase(ctx)
	if err != nil {
		if drop != nil {
			_ = drop(context.WithoutCancel(ctx))
		}
		return cellDB{}, fmt.Errorf("load: galera: %w", err)
	}
	db := cellDB{cleanup: func() error {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return drop(dctx)
	}}
	for i := range trackers {
		db.dsns = append(db.dsns, nodes[i%len(nodes)])
	}
	db.proxied = proxiedDSNs(db.dsns)
	return db, nil
}
