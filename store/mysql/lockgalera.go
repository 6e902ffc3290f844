package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"
)

// The locks' side of Galera (galera.go): GET_LOCK is node-local, so a
// Store on a node of a cluster of more than one refuses its own locks and
// watches a cluster of one, and the fences of an outside lock service are
// made to conflict across nodes.

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

// lockDSNHint names the fix in every refusal and warning.
const lockDSNHint = "set lock_dsn to a lock service outside the database (lock_dsn = etcd://host1:2379,host2:2379,host3:2379/prefix; see package store/etcd)"

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
