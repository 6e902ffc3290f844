package mysql

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// Galera nodes (MariaDB Galera, Percona XtraDB Cluster): what a server
// says of its replication, and the budget for transactions that other
// nodes' commits abort. Sessions on a node read causally (mysql.go); the
// locks' side is lockgalera.go.

// galeraConflictAttempts is sqlstore.Config.ConflictAttempts on a Galera
// node: a transaction that other nodes' commits keep aborting is run up to
// 32 times, about 3.5 seconds of growing pauses, where a single server's
// deadlocks get 8 (about 300ms). Nine workers over three nodes each
// incrementing one setting twelve times (IncrServerSettingConcurrent's
// load), twenty rounds: 23 increments ran out of 8 attempts, none out of 16
// or 32; and an increment goes through a second of another node's updates
// to its row (TestGalera_ConflictBudget).
const galeraConflictAttempts = 32

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
