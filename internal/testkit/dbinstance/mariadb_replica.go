package dbinstance

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// ReplicationPrimary are the mariadbd options StartMariaDBPrimary adds: a
// binary log (in the data directory) with GTIDs, which replicas read, and
// server-id 1 (replicas take 2, 3, …). Row-based so the replica applies
// exactly the rows the primary changed, whatever the statement.
var ReplicationPrimary = map[string]string{
	"log-bin":       "mariadb-bin",
	"server-id":     "1",
	"binlog-format": "ROW",
}

// replicaIDs hands out replicas' server-ids: distinct from the primary's
// 1 and from each other, as replication requires (a server ignores events
// carrying its own id).
var replicaIDs atomic.Int32

func init() { replicaIDs.Store(1) }

// StartMariaDBPrimary is StartMariaDB with ReplicationPrimary added to
// o.Settings (o.Settings win), so StartReplica can follow it.
func StartMariaDBPrimary(ctx context.Context, o MyOptions) (*MariaDB, error) {
	set := maps.Clone(ReplicationPrimary)
	maps.Copy(set, o.Settings)
	o.Settings = set
	return StartMariaDB(ctx, o)
}

// StartReplica starts a new private instance (m's options, a server-id of
// its own, read_only) that replicates from m asynchronously by GTID, and
// returns once both its replication threads run. m must write a binary
// log: start it with StartMariaDBPrimary. The replica restarts replicating
// by itself after Kill and Start: its position (mysql.gtid_slave_pos) is
// in InnoDB, so it survives a crash, and with GTIDs a starting replica
// asks the primary for what follows it, whatever its relay log holds.
// read_only keeps clients other than root (which has READ ONLY ADMIN) from
// writing to it. Cleanup it like any instance.
func (m *MariaDB) StartReplica(ctx context.Context) (*MariaDB, error) {
	t0 := time.Now()
	pdb, err := m.sockDB()
	if err != nil {
		return nil, err
	}
	defer pdb.Close()
	var logBin bool
	var pos string
	if err := pdb.QueryRowContext(ctx, "SELECT @@log_bin, @@gtid_binlog_pos").Scan(&logBin, &pos); err != nil {
		return nil, fmt.Errorf("dbinstance: replica of %s: %w", m.Addr(), err)
	}
	if !logBin {
		return nil, fmt.Errorf("dbinstance: replica of %s: it has no binary log (start it with StartMariaDBPrimary)", m.Addr())
	}
	o := m.o
	o.Settings = maps.Clone(m.o.Settings)
	if o.Settings == nil {
		o.Settings = map[string]string{}
	}
	maps.Copy(o.Settings, map[string]string{
		"server-id": fmt.Sprint(replicaIDs.Add(1)),
		"read-only": "1",
		// Named, not the default hostname-relay-bin, so a renamed host
		// still finds it after Start.
		"relay-log": "relay-bin",
		// Its own binary log of what it applies, under the primary's
		// GTIDs, so it could become a primary others follow.
		"log-bin":           "mariadb-bin",
		"log-slave-updates": "",
	})
	r, err := newMariaDB(o, nil)
	if err != nil {
		return nil, err
	}
	if err := r.Start(ctx); err != nil {
		r.Cleanup()
		return nil, err
	}
	if err := r.follow(ctx, m, pos); err != nil {
		r.Cleanup()
		return nil, err
	}
	r.logf("mariadb replica of %s on %s ready in %v", m.Addr(), r.Addr(), time.Since(t0).Round(time.Millisecond))
	return r, nil
}

// follow sets up and starts replication from primary, starting after pos.
func (r *MariaDB) follow(ctx context.Context, primary *MariaDB, pos string) error {
	if err := r.grantTCP(ctx); err != nil {
		return err
	}
	db, err := r.sockDB()
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range []string{
		// Drop the replica's own grantTCP from its binary log: what it
		// logs from now on is only what it applies from the primary.
		"RESET MASTER",
		// Both came from the same template and each ran grantTCP, so the
		// replica already has everything the primary binlogged so far
		// (its user, grants and database "test"); replaying them would
		// stop replication on "database exists". Start after them.
		"SET GLOBAL gtid_slave_pos = '" + pos + "'",
		// MASTER_CONNECT_RETRY=1: after a primary's Kill and Start the
		// replica reconnects within a second, not the default minute.
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1", primary.port),
		"START SLAVE",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("dbinstance: replica on %s: %s: %w", r.Addr(), q, err)
		}
	}
	for {
		st, err := slaveStatus(ctx, db)
		if err == nil && st["Slave_IO_Running"] == "Yes" && st["Slave_SQL_Running"] == "Yes" {
			return nil
		}
		// A stopped SQL thread with an error does not retry: no point
		// waiting. (The IO thread retries its connection by itself.)
		if err == nil && st["Slave_SQL_Running"] == "No" && st["Last_SQL_Error"] != "" {
			return fmt.Errorf("dbinstance: replica on %s of %s: %s", r.Addr(), primary.Addr(), describeSlave(st))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dbinstance: replica on %s of %s not replicating (%s, %v): %w", r.Addr(), primary.Addr(), describeSlave(st), err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// GTIDBinlogPos is @@gtid_binlog_pos: the GTID of the last transaction
// in m's binary log per replication domain ("0-1-42"), "" before any.
// On a replica, MASTER_GTID_WAIT(pos, 0) = 0 once it has applied
// everything up to the primary's pos (see WaitCaughtUp).
func (m *MariaDB) GTIDBinlogPos(ctx context.Context) (string, error) {
	db, err := m.sockDB()
	if err != nil {
		return "", err
	}
	defer db.Close()
	var pos string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		return "", fmt.Errorf("dbinstance: mariadb on %s: %w", m.Addr(), err)
	}
	return pos, nil
}

// PauseReplication, on a replica, stops applying (STOP SLAVE SQL_THREAD)
// while it keeps receiving the primary's binary log into its relay log:
// it lags behind the primary until ResumeReplication. A Kill and Start
// resumes it too (the replica starts both threads when it boots).
func (m *MariaDB) PauseReplication(ctx context.Context) error {
	return m.exec(ctx, "STOP SLAVE SQL_THREAD")
}

// ResumeReplication, on a replica, applies again what it received
// (START SLAVE SQL_THREAD).
func (m *MariaDB) ResumeReplication(ctx context.Context) error {
	return m.exec(ctx, "START SLAVE SQL_THREAD")
}

// WaitCaughtUp, on a replica, returns once it has applied everything
// primary has binlogged so far, or fails when ctx ends (30 s without a
// deadline) with the replica's replication state.
//
// It waits with MASTER_GTID_WAIT(pos, timeout), which compares pos with
// the replica's applied @@gtid_slave_pos, per domain, by sequence number
// (the server-id in pos does not matter). Checked by hand on MariaDB
// 10.11, MASTER_GTID_WAIT(pos, 0) answers at once: 0 on a replica that
// has applied pos (or later), -1 on one behind it (say paused by STOP
// SLAVE SQL_THREAD: received, not applied), and 0 for an empty pos (a
// primary that binlogged nothing). It is -1 on a server replicating
// nothing (empty gtid_slave_pos), the primary itself included, -1 for a
// domain the replica never applied, NULL for pos NULL and error 1941 for
// a malformed pos. Without a timeout, or a negative one, it waits for
// ever. Do not wrap it in IS NULL: the server answers that without
// evaluating it.
func (m *MariaDB) WaitCaughtUp(ctx context.Context, primary *MariaDB) error {
	pos, err := primary.GTIDBinlogPos(ctx)
	if err != nil {
		return err
	}
	secs := 30.0
	if dl, ok := ctx.Deadline(); ok {
		// A little short of the deadline, so the server's -1, not the
		// driver's cancellation, ends the wait and we can say why.
		secs = max(time.Until(dl).Seconds()-0.2, 0)
	}
	db, err := m.sockDB()
	if err != nil {
		return err
	}
	defer db.Close()
	var res sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, ?)", pos, secs).Scan(&res); err != nil {
		return fmt.Errorf("dbinstance: replica on %s waiting for %q: %w", m.Addr(), pos, err)
	}
	if res.Valid && res.Int64 == 0 {
		return nil
	}
	st, err := slaveStatus(ctx, db)
	var applied string
	db.QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&applied)
	return fmt.Errorf("dbinstance: replica on %s did not reach %s of %s in %.1fs: applied %q (%s, %v)",
		m.Addr(), pos, primary.Addr(), secs, applied, describeSlave(st), err)
}

// exec runs one statement on m's socket as root.
func (m *MariaDB) exec(ctx context.Context, q string) error {
	db, err := m.sockDB()
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("dbinstance: mariadb on %s: %s: %w", m.Addr(), q, err)
	}
	return nil
}

// sockDB is a pool on m's socket as root.
func (m *MariaDB) sockDB() (*sql.DB, error) {
	cfg := gomysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", m.sock
	cfg.Timeout = 2 * time.Second
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("dbinstance: mariadb: %w", err)
	}
	return sql.OpenDB(conn), nil
}

// slaveStatus is SHOW SLAVE STATUS as column → value; empty when the
// server replicates from nothing.
func slaveStatus(ctx context.Context, db *sql.DB) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	st := map[string]string{}
	if rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, c := range cols {
			st[c] = string(vals[i])
		}
	}
	return st, rows.Err()
}

// describeSlave sums up a slaveStatus for an error message.
func describeSlave(st map[string]string) string {
	if len(st) == 0 {
		return "no replication configured"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "IO %s, SQL %s", st["Slave_IO_Running"], st["Slave_SQL_Running"])
	for _, k := range []string{"Last_IO_Error", "Last_SQL_Error"} {
		if st[k] != "" {
			fmt.Fprintf(&b, ", %s: %s", k, st[k])
		}
	}
	return b.String()
}
