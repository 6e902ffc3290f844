package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// ErrNodeLocalLocks is wrapped by the error of Open, and of Lock once the
// Store has seen it, when the server is a node of a Galera cluster
// (MariaDB Galera, Percona XtraDB Cluster) of more than one node: GET_LOCK
// and the MEMORY table of lock holders are the node's own, so trackers on
// different nodes would be granted the same lock at once. The fix is a lock
// service outside the database (lock_dsn).
var ErrNodeLocalLocks = errors.New("mysql: GET_LOCK locks are node-local on a Galera cluster")

// clusterCheckEvery is how often a Store on a single-node Galera cluster
// asks whether another node joined.
const clusterCheckEvery = time.Second

// galeraConflictAttempts is sqlstore.Config.ConflictAttempts on a Galera
// node: a transaction that other nodes' commits keep aborting is run up to
// 32 times, about 3.5 seconds of growing pauses, where a single server's
// deadlocks get 8 (about 300ms). Nine workers over three nodes each
// incrementing one setting twelve times (IncrServerSettingConcurrent's
// load), twenty rounds: 23 increments ran out of 8 attempts, none out of 16
// or 32; and an increment goes through a second of another node's updates
// to its row (TestGalera_ConflictBudget).
const galeraConflictAttempts = 32

// lockDSNHint names the fix in every refusal and warning.
const lockDSNHint = "set lock_dsn to a lock service outside the database (lock_dsn = etcd://host1:2379,host2:2379,host3:2379/prefix; see package store/etcd)"

// wsrep is what a server says of Galera replication.
type wsrep struct {
	on       bool   // @@global.wsrep_on
	provider string // @@global.wsrep_provider: "none" (or "") when none is loaded
	size     int    // wsrep_cluster_size: the nodes of the node's component, 0 without a provider
}

// galera reports a server with Galera replication loaded or switched on.
func (w wsrep) galera() bool {
	return w.on || (w.provider != "" && !strings.EqualFold(w.provider, "none")) || w.size > 0
}

// queryer is a *sql.DB or *sql.Conn.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readWsrep reads the server's wsrep settings and cluster size. A server
// without Galera (MySQL 8 has no wsrep variables at all) reads as zero.
func readWsrep(ctx context.Context, q queryer) (wsrep, error) {
	var w wsrep
	err := showGlobal(ctx, q, "VARIABLES", []string{"wsrep_on", "wsrep_provider"}, func(name, value string) {
		switch name {
		case "wsrep_on":
			w.on = strings.EqualFold(value, "ON") || value == "1"
		case "wsrep_provider":
			w.provider = value
		}
	})
	if err == nil {
		err = showGlobal(ctx, q, "STATUS", []string{"wsrep_cluster_size"}, func(_, value string) {
			w.size, _ = strconv.Atoi(value)
		})
	}
	return w, err
}

// showGlobal runs SHOW GLOBAL what for the named variables and hands each
// row to f, its name lower-cased.
func showGlobal(ctx context.Context, q queryer, what string, names []string, f func(name, value string)) error {
	rows, err := q.QueryContext(ctx, "SHOW GLOBAL "+what+" WHERE Variable_name IN ('"+strings.Join(names, "', '")+"')")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var value sql.NullString
		if err := rows.Scan(&name, &value); err != nil {
			return err
		}
		f(strings.ToLower(name), value.String)
	}
	return rows.Err()
}

// nodeLocalErr is the refusal for a server in a cluster of size nodes.
func nodeLocalErr(size int) error {
	return fmt.Errorf("%w: the server is one of %d nodes (wsrep_cluster_size), and trackers on different nodes would hold one lock at once; %s",
		ErrNodeLocalLocks, size, lockDSNHint)
}

// checkCluster is the start-time check: a server in a Galera cluster of
// more than one node is refused; one in a cluster of one is accepted with
// a warning, and watched (watchCluster) so that a node joining later
// makes the locks fail safe rather than double.
func (b *lockBackend) checkCluster(ctx context.Context) error {
	if b.ignoreCluster {
		return nil
	}
	w, err := readWsrep(ctx, b.admin)
	if err != nil {
		return fmt.Errorf("mysql: read the wsrep (Galera) status: %w", err)
	}
	if w.size > 1 {
		return nodeLocalErr(w.size)
	}
	if w.galera() {
		slog.Default().Warn("mysql: the server is a Galera node in a cluster of one: GET_LOCK locks are node-local, so once another node joins, this Store reports its locks lost and refuses new ones, and Open refuses; "+lockDSNHint,
			"component", "mysql", "wsrep_on", w.on, "wsrep_cluster_size", w.size)
		b.startClusterWatch()
	}
	return nil
}

// startClusterWatch starts watchCluster once.
func (b *lockBackend) startClusterWatch() {
	b.clusterWatch.Do(func() {
		b.wg.Add(1)
		go b.watchCluster()
	})
}

// watchCluster asks every clusterCheckEvery whether the cluster grew, until
// it did (refuseLocks) or the backend closes. A failed check is left to
// the next: a server that cannot answer is the lock watchers' business.
func (b *lockBackend) watchCluster() {
	defer b.wg.Done()
	t := time.NewTicker(clusterCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-b.closing.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(b.closing, killTimeout)
		var size int
		err := showGlobal(ctx, b.admin, "STATUS", []string{"wsrep_cluster_size"}, func(_, v string) { size, _ = strconv.Atoi(v) })
		cancel()
		if err == nil && size > 1 {
			b.refuseLocks(size)
			return
		}
	}
}

// refuseLocks makes the locks fail safe once the server is seen in a
// cluster of size nodes: from then on Lock fails with ErrNodeLocalLocks,
// and each held lock's watcher reports it lost and ends its session.
func (b *lockBackend) refuseLocks(size int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refused == nil {
		b.refused = nodeLocalErr(size)
		close(b.refusedCh)
		slog.Default().Error("mysql: the Galera cluster grew to more than one node: held locks are reported lost and new ones refused",
			"component", "mysql", "wsrep_cluster_size", size, "err", b.refused)
	}
	return b.refused
}

// addFenceChecks adds gomogile_lock_fence's checks column (Dialect.Fencing)
// to a table made before it existed; a new table is created with it.
func addFenceChecks(ctx context.Context, db *sql.DB) error {
	var tables, cols int
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'gomogile_lock_fence'),
		(SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'gomogile_lock_fence' AND COLUMN_NAME = 'checks')`).Scan(&tables, &cols)
	if err != nil || tables == 0 || cols > 0 {
		return err
	}
	_, err = db.ExecContext(ctx, "ALTER TABLE gomogile_lock_fence ADD COLUMN checks BIGINT NOT NULL DEFAULT 0")
	if err != nil && mysqlErrno(err) != erDupFieldName {
		return fmt.Errorf("mysql: add gomogile_lock_fence.checks: %w", err)
	}
	return nil
}
