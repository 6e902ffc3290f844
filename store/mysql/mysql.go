package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

func init() {
	store.Register("mysql", Driver{}, "mariadb")
}

// Driver opens MySQL and MariaDB Stores; it is registered as "mysql" and
// "mariadb". Most programs use store.Open with a DSN instead.
type Driver struct{}

var _ store.Driver = Driver{}

// Open connects, pings, creates or checks the schema and returns a Store.
// The database must exist. See the package documentation for the DSN.
func (Driver) Open(ctx context.Context, d *store.DSN) (store.Backend, error) {
	cfg, err := NewConfig(ctx, d)
	if err != nil {
		return nil, err
	}
	s, err := sqlstore.New(ctx, cfg)
	if err != nil {
		return nil, err // New has closed what cfg held
	}
	return s, nil
}

// NewConfig connects to the database d names and returns what
// sqlstore.New needs for a MySQL Store: the pool, the Dialect for that
// database (NewDialect), the GET_LOCK lock backend on sessions of its own,
// the capabilities, and, except on a Galera node, the Batch pool. A
// backend for a MySQL-like database builds on it: it may replace the
// Dialect or the Locks before calling sqlstore.New, which owns cfg from
// then on; a caller that gives up before closes cfg.DB, cfg.Batch and
// cfg.Locks.
func NewConfig(ctx context.Context, d *store.DSN) (sqlstore.Config, error) {
	main, utf8, err := configure(d)
	if err != nil {
		return sqlstore.Config{}, err
	}
	// Lock sessions keep utf8mb4 whatever the pool's collation becomes.
	locks := lockConfig(main)
	dialect, err := probe(ctx, main)
	if err != nil {
		return sqlstore.Config{}, err
	}
	if c := dialect.rawBytesCollation(); c != "" && !utf8 {
		// The sessions' character set is fixed in the handshake: one
		// that passes the keys through as bytes.
		main.Collation = c
	}
	sess := sessionSetup{causal: dialect.galera}
	db, err := openPool(ctx, main, sess)
	if err != nil {
		return sqlstore.Config{}, err
	}
	c := sqlstore.Config{
		DB:           db,
		Dialect:      dialect,
		Capabilities: store.Capabilities{LockMechanism: "session", CrossProcess: true, DeadOwnerBound: deadOwnerBound},
		Existing:     d.Existing,
		MaxIdleConns: d.MaxIdleConns,
		MaxOpenConns: d.MaxOpenConns,
	}
	if dialect.galera {
		c.ConflictAttempts = galeraConflictAttempts
	} else {
		// Not on Galera: there a transaction aborted by a conflict with
		// another node's commit while a query of several statements runs
		// has the query's remaining statements run on, each committed on
		// its own, and the client may be told the query succeeded
		// (TestGalera_BatchAbortedMidQuery). One statement per query
		// leaves no statement to run after the abort. Galera's nodes are
		// all primaries; an asynchronous replica of one is not offered.
		c.Batch, err = batchPool(main, sess)
		c.Replicas = replicas(d, main.Collation)
	}
	// With an outside lock service (LockDSN) no GET_LOCK session is ever
	// opened, so a Galera cluster is no reason to refuse (galera.go).
	c.LockDSN = d.Locks
	if err == nil && d.Locks == nil {
		c.Locks, err = newLockBackend(locks, db, dialect.database)
	}
	if err != nil {
		db.Close()
		if c.Batch != nil {
			c.Batch.Close()
		}
		return sqlstore.Config{}, err
	}
	return c, nil
}

// probe connects once to learn what the Store's pool is opened for: the
// database's canonical name, whether the server is a Galera node, its
// schema's version and column types (NewDialect). On a Galera node it adds
// the fence checks' column (addFenceChecks).
func probe(ctx context.Context, cfg *gomysql.Config) (Dialect, error) {
	db, err := openPool(ctx, cfg, sessionSetup{})
	if err != nil {
		return Dialect{}, err
	}
	defer db.Close()
	database, err := canonicalDatabase(ctx, db)
	if err != nil {
		return Dialect{}, fmt.Errorf("mysql: %w", err)
	}
	w, err := readWsrep(ctx, db)
	if err != nil {
		return Dialect{}, fmt.Errorf("mysql: read the wsrep (Galera) status: %w", err)
	}
	// NewDialect inspects tables that a MogileFS database below schema 17
	// lacks columns of.
	v, err := sqlstore.ReadSchemaVersion(ctx, db, Dialect{})
	if err == nil {
		err = sqlstore.CheckSchemaVersion(v, false)
	}
	if err != nil {
		return Dialect{}, fmt.Errorf("mysql: %w", err)
	}
	dialect, err := NewDialect(ctx, db)
	if err != nil {
		return Dialect{}, fmt.Errorf("mysql: inspect schema: %w", err)
	}
	dialect.database, dialect.galera = database, w.galera()
	if w.galera() {
		err = addFenceChecks(ctx, db)
	}
	return dialect, err
}

// openPool opens and pings the Store's pool, its sessions set up as sess
// says.
func openPool(ctx context.Context, cfg *gomysql.Config, sess sessionSetup) (*sql.DB, error) {
	db, err := newPool(cfg, sess)
	if err == nil {
		err = sqlstore.Connect(ctx, db, Dialect{})
	}
	if err != nil {
		return nil, err
	}
	return db, nil
}

// newPool is a pool of cfg's sessions set up as sess says. It connects on
// first use.
func newPool(cfg *gomysql.Config, sess sessionSetup) (*sql.DB, error) {
	mc, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrBadDSN, err)
	}
	db := sql.OpenDB(sess.connector(mc))
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil
}

// batchPool is sqlstore.Config.Batch: the pool's settings (collation,
// READ COMMITTED, TLS, timeouts) with several statements per query
// allowed, so that Lease's transaction takes two round trips instead of
// four. The Store's own pool keeps one statement per query: nothing but
// the shared layer's own SQL goes through this one.
func batchPool(main *gomysql.Config, sess sessionSetup) (*sql.DB, error) {
	cfg := main.Clone()
	cfg.MultiStatements = true
	return newPool(cfg, sess)
}

// sessionSetup is how every session of the Store's pools is set up when it
// connects.
//
// Each runs at READ COMMITTED, the isolation the shared SQL is written for
// on every backend (PostgreSQL's default): each statement sees what is
// committed, and rows are locked only where a statement locks them.
// InnoDB's default, REPEATABLE READ, would add gap locks that make
// trackers inserting queue and file rows deadlock far more often. The
// statement form works on MySQL 8 and MariaDB alike, unlike the system
// variable, which is tx_isolation on MariaDB 10.11 and
// transaction_isolation on MySQL 8.
//
// causal, set on a Galera node, makes each session's reads causal
// (causalReads).
type sessionSetup struct {
	causal bool
	// readOnly makes every transaction of the session read-only: a
	// replica's pool (replica.go), where a write would be a bug.
	readOnly bool
}

// causalReads is the statement that makes a session on a Galera node read
// causally: before a transaction's START TRANSACTION, or an autocommit
// SELECT, UPDATE, DELETE, INSERT or REPLACE (wsrep_sync_wait bits 1, 2 and
// 4), the node first applies every transaction the cluster had committed
// when the statement arrived. Without it a node answers from whatever it
// has applied so far, so a tracker may not see, or may fail to update, a
// row another tracker committed through another node a moment before: a
// tempfile that "does not exist" at commit, a queue row rescheduled back
// to its old time. Any bit the server's own setting adds (8, SHOW) is
// kept. Each such statement costs the node a round trip through the
// cluster first.
const causalReads = "SET SESSION wsrep_sync_wait = @@session.wsrep_sync_wait | 7"

func (s sessionSetup) connector(c driver.Connector) driver.Connector {
	return sessionConnector{c, s}
}

// sessionConnector makes connections set up as s says.
type sessionConnector struct {
	driver.Connector
	s sessionSetup
}

func (c sessionConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, connectFailed(err)
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("mysql: driver connection %T cannot execute statements", conn)
	}
	setup := []string{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"}
	if c.s.causal {
		setup = append(setup, causalReads)
	}
	if c.s.readOnly {
		setup = append(setup, "SET SESSION TRANSACTION READ ONLY")
	}
	for _, q := range setup {
		if _, err := ex.ExecContext(ctx, q, nil); err != nil {
			conn.Close()
			return nil, connectFailed(err)
		}
	}
	return conn, nil
}

// connectFailed marks a connection lost while it was being made (the
// server closed it in the handshake or the session's setup: shutting down,
// a load balancer with no server behind it) as driver.ErrBadConn: no
// caller's statement went on it, so database/sql may try a new connection
// and the shared layer knows the call applied nothing (sqlstore.NotSent).
// go-sql-driver reports such a loss as it reports one after a statement
// (ErrInvalidConn), so only here can the two be told apart. A dial that
// failed (NotSent already), the caller's context ending, and the server's
// refusal of the login (a bad password, no such database) stay as they are.
func connectFailed(err error) error {
	if sqlstore.NotSent(err) || !sessionGone(err) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: mysql: connect: %w", driver.ErrBadConn, err)
}

// configure turns a parsed DSN into the driver settings of the Store's
// pool, and whether the DSN asks for utf8mb4 sessions (DBD::mysql's
// mysql_enable_utf8). It is pure: no connection is made. The parameters' mysql_* spellings are Perl
// DBD::mysql's, so a MogileFS db_dsn keeps working.
func configure(d *store.DSN) (*gomysql.Config, bool, error) {
	if d.Database == "" {
		return nil, false, fmt.Errorf("%w: mysql: no database name", store.ErrBadDSN)
	}
	if hs := d.AllHosts(); len(hs) > 1 {
		// GET_LOCK sessions are per server: failing over between servers
		// would hand a held lock to a second holder.
		return nil, false, fmt.Errorf("%w: mysql: %d hosts given; one server only", store.ErrBadDSN, len(hs))
	}
	cfg := gomysql.NewConfig()
	cfg.Logger = driverLogger{}
	cfg.User, cfg.Passwd = d.User, d.Password
	cfg.DBName = d.Database
	// One round trip per statement: placeholders are filled in by the
	// client instead of a prepare/execute/close cycle.
	cfg.InterpolateParams = true
	// Chosen in the handshake (no SET NAMES round trip); known by MySQL 8
	// and MariaDB, and safe for client-side interpolation.
	cfg.Collation = "utf8mb4_general_ci"
	var socket string
	var utf8, utf8mb4 bool
	err := d.ApplyParams("mysql",
		store.Param{Names: []string{"tls", "mysql_ssl"}, Set: store.ChoiceParam(&cfg.TLSConfig, tlsModes)},
		store.Param{Names: []string{"timeout", "connect_timeout", "mysql_connect_timeout"}, Set: store.SecondsParam(&cfg.Timeout, true)},
		store.Param{Names: []string{"readTimeout", "read_timeout", "mysql_read_timeout"}, Set: store.SecondsParam(&cfg.ReadTimeout, true)},
		store.Param{Names: []string{"writeTimeout", "write_timeout", "mysql_write_timeout"}, Set: store.SecondsParam(&cfg.WriteTimeout, true)},
		store.Param{Names: []string{"socket", "mysql_socket"}, Set: func(v string) error {
			if socket = v; !strings.HasPrefix(v, "/") {
				return errors.New("not an absolute path")
			}
			return nil
		}},
		// What the Perl tracker's keys were on a latin1 database (rawBytesCollation).
		store.Param{Names: []string{"mysql_enable_utf8"}, Set: store.BoolParam(&utf8)},
		store.Param{Names: []string{"mysql_enable_utf8mb4"}, Set: store.BoolParam(&utf8mb4)},
	)
	if err != nil {
		return nil, false, err
	}
	host, port := cmp.Or(socket, d.Host), d.Port
	switch {
	case strings.HasPrefix(host, "/") && port != 0:
		return nil, false, fmt.Errorf("%w: mysql: port %d with socket %q", store.ErrBadDSN, port, host)
	case strings.HasPrefix(host, "/"):
		cfg.Net, cfg.Addr = "unix", host
	default:
		cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(cmp.Or(host, "127.0.0.1"), strconv.Itoa(cmp.Or(port, 3306)))
	}
	return cfg, utf8 || utf8mb4, nil
}

// tlsModes are the driver's TLS modes by the tls values taken: the
// driver's own, and DBD::mysql's mysql_ssl=0|1.
var tlsModes = map[string]string{
	"true": "true", "false": "false", "skip-verify": "skip-verify", "preferred": "preferred",
	"1": "true", "0": "false",
}
