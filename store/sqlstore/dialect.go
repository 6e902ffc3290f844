package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/gomogile/gomogile/store"
)

// Dialect is what an SQL backend supplies to the shared operations: how its
// SQL differs, and how its errors read. It is deliberately small; the ~90
// metadata operations are written once in this package against it.
//
// Statements given to Dialect methods and to the shared layer use '?'
// placeholders; Rebind turns them into the driver's form.
type Dialect interface {
	// Name is the registered backend name ("sqlite", "mysql", "postgres").
	Name() string
	// Rebind rewrites '?' placeholders (outside string literals) into the
	// driver's form, e.g. $1, $2 for PostgreSQL. Identity for MySQL, SQLite.
	Rebind(query string) string
	// UnixNow is an SQL expression for the database clock in whole Unix
	// seconds, as an integer (e.g. UNIX_TIMESTAMP()).
	UnixNow() string
	// ByteOrder wraps a text column so comparisons and ORDER BY on it are by
	// bytes, whatever the column's collation (e.g. BINARY col, col COLLATE "C").
	ByteOrder(col string) string
	// Upsert builds an INSERT of cols (one '?' each) into table which, on a
	// conflict over the key columns, applies the assignments in update
	// instead ("" = do nothing). In update, the existing row's value of a
	// column is written qualified, table.col (PostgreSQL finds a bare name
	// there ambiguous; every dialect takes the qualified one), the value
	// proposed by the INSERT Excluded(col), and only an assignment's target
	// bare. Update is SQL the shared layer wrote: a Dialect uses it as it
	// is. With
	// update "" the statement's RowsAffected must be 1 when it inserted and
	// 0 when the row existed (MySQL: without CLIENT_FOUND_ROWS, so that
	// assigning a column to itself counts as no change). The statement must
	// begin with Insert(table, cols): the shared layer swaps that VALUES
	// list for expressions or a SELECT of its own.
	Upsert(table string, cols, key []string, update string) string
	// Excluded names the proposed value of col inside Upsert's update.
	Excluded(col string) string
	// Least is the SQL for the smaller of two expressions.
	Least(a, b string) string
	// Schema lists idempotent DDL statements (CREATE TABLE/INDEX IF NOT
	// EXISTS, in dependency order) that give an empty or MogileFS-created
	// database every table of schema 17 in this dialect's types, plus the
	// backend's own tables (a lock table, say). Tables the shared layer itself
	// adds are created by the shared layer in portable SQL.
	Schema() []string
	// VersionQuery is a single-row, single-column query for the server
	// version string.
	VersionQuery() string
	// Classify sorts a driver error into the kinds the shared layer acts on,
	// by the error's type or code, never its text. It tells a statement
	// that never reached the server (ErrKindUnsent) from a connection lost
	// after it may have (ErrKindConnLost).
	Classify(err error) ErrorKind
	// Fencing is the SQL of the fencing-token table, the one piece of the
	// shared layer's own schema that cannot be written portably.
	Fencing() Fencing
	// Counter is the SQL that takes the next value of a gomogile_counter
	// row in one statement (fid allocation).
	Counter() Counter
	// ClaimLock is appended to Lease's SELECT of due queue rows (… ORDER
	// BY nexttry, fid LIMIT n) in the transaction that then moves them: a
	// locking read that skips rows another transaction holds
	// (" FOR UPDATE SKIP LOCKED") or waits for them and reads them again
	// (" FOR UPDATE"), or "" when the transaction already excludes every
	// other writer (SQLite's BEGIN IMMEDIATE).
	ClaimLock() string
}

// Counter is a dialect's one-statement advance of a gomogile_counter row,
// run in autocommit, so the row is locked for one statement and its commit
// only: every tracker's create_open passes through it.
type Counter struct {
	// Next is one statement, with the row's name as its only '?', that adds
	// one to the row's value and yields the new value: as its
	// single-column result row (UPDATE … RETURNING value), or when
	// NextByInsertID is set as the statement's LastInsertId (MySQL's
	// UPDATE … SET value = LAST_INSERT_ID(value + 1)). A missing row yields
	// no row, or RowsAffected 0.
	Next           string
	NextByInsertID bool
}

// Claimer is an optional Dialect interface for a database that can move
// rows and return them in one statement (PostgreSQL's data-modifying WITH).
// Lease then claims due rows in one autocommit statement, one round trip,
// instead of a transaction of four; without the interface, or when the
// caller's context carries fences, Lease runs that transaction.
type Claimer interface {
	// Claim builds the statement. due is the locking read of the due rows'
	// fid and nexttry, in lease order, with its LIMIT and ClaimLock; the
	// statement sets nexttry to until (an expression with one '?', after
	// due's) on the rows of table that due returned and also match where
	// ("" or " AND type = N"), and yields for each moved row the expressions
	// of cols over its new values, ordered as due returned them.
	Claim(table, where, due, until, cols string) string
}

// FidInserter is an optional Dialect interface for a database that can take
// the next fid from the fid counter and insert a tempfile row under it in
// one round trip: a data-modifying WITH (PostgreSQL), or the counter's
// UPDATE, the INSERT and a SELECT of the outcome as one query on a
// Config.Batch connection (MySQL). CreateTempFile then costs one round trip
// instead of two. The counter moves only with the row (PostgreSQL's one
// statement, MySQL's one transaction): a failed INSERT leaves it where it
// was, so the fid no row took may be handed out later, still above every
// fid in use.
type FidInserter interface {
	// InsertWithNextFid builds that query from the INSERT's table, its
	// columns after fid and their values (SQL expressions with '?'s). Its
	// '?'s are the counter row's name, then those of values. It yields one
	// row — the fid and 1 — when the row went in, and no row, or a row
	// whose second column is 0, when the counter row is missing. batch says
	// the query holds several statements: it runs only on Config.Batch,
	// on a connection closed after any error, so it may be a whole
	// transaction (its one result row before the COMMIT).
	InsertWithNextFid(table string, cols, values []string) (query string, batch bool)
}

// RowChainer is an optional Dialect interface for a database whose
// Config.Batch connections can run a statement only when the statement
// before it in the same query changed exactly one row (MySQL: the first's
// ROW_COUNT() kept in a session variable). CommitFile then sends START
// TRANSACTION, the DELETE of the tempfile and the INSERT of the file in one
// query, and the rest of its statements with the COMMIT in a second: two
// round trips where one statement per query takes five or more. AddFileOn
// and RemoveFileOn likewise take two instead of five. Under store.WithFence
// each takes one more, START TRANSACTION with the fences' read.
type RowChainer interface {
	// IfOneRow returns first and then second as one query, second built
	// by the caller around cond, an SQL condition true only when first
	// changed exactly one row. The query yields one row: the rows first
	// changed, then the rows second changed. Its '?'s are first's, then
	// second's.
	IfOneRow(first string, second func(cond string) string) string
	// Counted returns stmt and then, in the same query, a read of the
	// rows it changed: the query's one result row. Its '?'s are stmt's.
	Counted(stmt string) string
}

// Collated is an optional Dialect interface for a database whose name
// columns may compare by a collation of their own rather than by bytes (on
// MySQL, a database made by MogileFS's mogdbsetup: case-insensitive, PAD
// SPACE). For a column it reports, the shared layer finds a key by that
// collation, as the column's unique key does — a lookup, a replacing
// commit, list_keys' prefix — and still orders and pages by ByteOrder.
// Without the interface every name compares by bytes.
type Collated interface {
	Collated(col string) bool
}

// collated reports whether d compares col by its own collation (Collated).
func collated(d Dialect, col string) bool {
	c, ok := d.(Collated)
	return ok && c.Collated(col)
}

// Fencing is a dialect's SQL for the fencing-token table gomogile_fence,
// one row per lock name ever granted, holding the token of its newest
// grant. A token must never go backwards, or a pre-crash holder's fenced
// write would get through: either the table is durable (logged, every bump
// a durable commit), or its rows are volatile and NewEpoch keeps tokens
// growing across whatever empties them.
//
// Whatever issues a grant's token (the shared layer's Bump, the lock
// backend's own grant statement, an outside lock service), a fenced write
// checks it one way, in its own transaction (Store.checkFences): Order,
// if set, then "SELECT token FROM gomogile_fence (or Table) WHERE name =
// ?" + ShareLock; for an outside lock service's grants "SELECT token FROM
// gomogile_lock_fence WHERE name = ?" + ServiceShareLock, or Check where
// the dialect sets it.
type Fencing struct {
	// Schema creates gomogile_fence (name, token) idempotently: name a
	// binary primary key of up to 255 bytes (the shared layer passes it as
	// []byte; "A" and "a" are two rows, a NUL is a byte like any other),
	// token BIGINT NOT NULL.
	Schema string
	// Bump is one statement, with the name as its only '?', that inserts
	// the name with token 1 or adds one to its token, and yields the new
	// token: as its single-column result row, or when BumpByInsertID is set
	// as the statement's LastInsertId (MySQL's LAST_INSERT_ID(expr)). It
	// is "" where the lock backend's grants always bump the token
	// themselves (a grant's Token above 0), in a statement that orders them
	// as Order says: a grant without a token is then refused.
	Bump           string
	BumpByInsertID bool
	// Table, when set, is the table the backend's own grants keep their
	// tokens in, in place of gomogile_fence (Schema is then ""): a table
	// of the lock backend's with name and token columns and the floor row
	// under the empty name, read as gomogile_fence is. Key, when set, maps
	// a lock name to that table's key (the backend's own naming of locks);
	// by default the name goes as bytes.
	Table string
	Key   func(name string) any
	// Order, when set, is one statement without a result set, the key as
	// its only '?', that a fenced write runs first in its transaction: a
	// lock that a grant of the name cannot pass until the write commits,
	// where the fence table itself cannot hold one (a MEMORY table's locks
	// last a statement). The lock backend's grant takes the same lock for
	// writing before it bumps.
	Order string
	// ShareLock is appended to "SELECT token FROM gomogile_fence WHERE name
	// = ?" inside a write's transaction: a locking read that keeps the row's
	// token from changing until COMMIT (" FOR SHARE"), "" when the
	// transaction already excludes every other writer (SQLite's BEGIN
	// IMMEDIATE), or with Order a condition that makes the read find no
	// row where Order found none to lock.
	ShareLock string
	// NewEpoch, when set, says the table's rows are volatile: not made
	// durable by each bump (an UNLOGGED or MEMORY table, which crash
	// recovery, a restart or a standby's promotion empty), so a bump costs
	// no log flush. Tokens then grow across the loss of the rows through
	// epochs: a durable counter that only NewEpoch moves, and a floor row
	// of the table itself, under the empty name (no lock has it;
	// store.CheckLock refuses it), holding epoch << FenceEpochShift. A bump
	// must then yield the larger of the name's token + 1 and the floor +
	// 1, or a number above the floor from a counter kept in the floor row,
	// and nothing at all while the floor row is missing; NewFenceEpoch
	// then runs NewEpoch, statements without placeholders run in order on
	// one session, that add one to the epoch, durably (a logged table, a
	// synchronous commit), and write the floor row with the new epoch <<
	// FenceEpochShift (keeping a larger one), the last of them returning
	// the floor; and the bump is tried again. A floor row that is there
	// was written after a durable epoch that every earlier token lies
	// below, and rows lost with it take the floor row with them, so the
	// next token after any loss is above every token handed out before it.
	NewEpoch []string
	// ServiceSchema creates gomogile_lock_fence idempotently, shaped as
	// gomogile_fence but always durable (a logged, replicated table: an
	// InnoDB or ordinary table, never MEMORY or UNLOGGED): the fence of
	// the grants of an outside lock service (lock_dsn), whose tokens that
	// service issues. Raise is one statement, the name and the token as its
	// two '?', that inserts the name with the token or raises its row to
	// the token when the token is larger, and never lowers it.
	ServiceSchema string
	Raise         string
	// ServiceShareLock is ShareLock for gomogile_lock_fence (which needs
	// no Order: it is a table with row locks).
	ServiceShareLock string
	// Check, when set, is how a write's transaction checks a fence of
	// gomogile_lock_fence instead of a read under ShareLock: one statement,
	// the name and the fence's token as its two '?', that writes the
	// name's row when it holds the token (one row affected) and touches
	// nothing otherwise. A dialect sets it where a locking read does not
	// order the write against a later raise: a Galera node's read locks
	// are its own, and Galera certifies a transaction against the rows it
	// writes only, so a raise committed through another node and not yet
	// applied here would leave a write checked before it to commit after
	// it. A check that writes the row conflicts with that raise, and
	// certification refuses whichever of the two comes later.
	Check string
}

// FenceEpochShift is where an epoch starts in a volatile fencing table's
// tokens (Fencing.NewEpoch): epoch e hands out e<<40 + 1 and up. The shared
// layer starts a new epoch once a token reaches half of its epoch's range,
// so the range never runs out.
const FenceEpochShift = 40

// ErrorKind is how the shared layer treats a driver error.
type ErrorKind int

const (
	// ErrOther: returned to the caller, wrapped.
	ErrOther ErrorKind = iota
	// ErrKindDuplicate: a unique or primary key was violated (store.ErrDuplicate).
	ErrKindDuplicate
	// ErrKindRetry: deadlock, serialization failure or busy database; the
	// whole transaction is rolled back and run again.
	ErrKindRetry
	// ErrKindConnLost: the connection broke, perhaps after the statement
	// reached the server. During COMMIT, or for a statement in autocommit,
	// this makes the outcome unknown (store.ErrUnknownOutcome).
	ErrKindConnLost
	// ErrKindNoSpace: the database has no room for the write (disk, table
	// or tablespace full, or a size cap): store.ErrNoSpace, not retried,
	// since only freeing space helps.
	ErrKindNoSpace
	// ErrKindUnsent: the statement never reached the server: no connection
	// could be made (refused, unreachable, a server starting up or shutting
	// down at login), or the driver found its connection unusable before
	// writing to it. Nothing applied, a COMMIT included: the shared layer
	// runs the transaction again, and a call that keeps failing so is
	// store.ErrUnavailable, never store.ErrUnknownOutcome. A dialect
	// returns it where NotSent holds and for its driver's own
	// connect-phase errors; the shared layer applies NotSent itself too.
	ErrKindUnsent
)

// Connect pings a backend's new pool db before New: a server that is
// down, unreachable or dropping connections (d classifies the error as a
// lost or unsent connection) fails with store.ErrUnavailable, worth
// retrying, unlike a refused login or a missing database. It closes db
// when it fails.
func Connect(ctx context.Context, db *sql.DB, d Dialect) error {
	err := db.PingContext(ctx)
	if err == nil {
		return nil
	}
	db.Close()
	if k := classify(d, err); k == ErrKindConnLost || k == ErrKindUnsent {
		return fmt.Errorf("%w: %s: connect: %w", store.ErrUnavailable, d.Name(), err)
	}
	return fmt.Errorf("%s: connect: %w", d.Name(), err)
}

// NotSent reports whether err shows, by the types database/sql and package
// net give it for every driver, that no statement reached the server: a
// connection that could not be made (a *net.OpError whose Op is "dial":
// refused, unreachable, a name that does not resolve, a dial timeout), or
// driver.ErrBadConn, which database/sql's contract lets a driver return only
// when the server cannot have performed the operation. Never by text.
func NotSent(err error) bool {
	if errors.Is(err, driver.ErrBadConn) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// Config is what a backend hands to New, which owns what it holds from
// then on (New closes it when it fails).
type Config struct {
	DB      *sql.DB
	Dialect Dialect
	// Locks is the database's own lock mechanism, a store.LockService as
	// an outside lock service is: the store.Store (store.New) checks
	// names and timeouts, bounds every call with its deadline and refuses
	// calls after Close, this Store fences and closes it, so it only
	// grants, reports loss and releases.
	// A grant's Token is the token the grant's own statement bumped (with
	// the SQL of the Dialect's Fencing), or 0 for the Store to bump the
	// name's token after the grant (Fencing.Bump). Optional: LockStarter,
	// LockFaults, and a LockStats() store.LockStats method.
	Locks store.LockService
	// LockDSN, when set, names an outside lock service (store.DSN.Locks):
	// New opens it and keeps the Store's locks there, and Locks must be
	// nil (the backend starts no lock mechanism of its own).
	LockDSN *store.DSN
	// Capabilities are reported as they are.
	Capabilities store.Capabilities
	// OnClose, if set, runs after the locks and before the DB are closed
	// (e.g. the SQLite file guard).
	OnClose func() error
	// ConflictAttempts is how many times in all a call runs a transaction
	// or a read that keeps failing with a conflict (ErrKindRetry: a
	// deadlock, a serialization or certification failure) before it
	// returns the error; other retried failures (a connection lost or
	// never made) get 8 attempts, as conflicts do when it is below that.
	// A backend on a cluster whose nodes certify each transaction against
	// the others' commits (Galera), where a row that many trackers update
	// fails far more attempts than a single server's deadlocks do, raises
	// it.
	ConflictAttempts int
	// MaxIdleConns and MaxOpenConns size DB's pool, which New sets:
	// store.DefaultMaxIdleConns idle when 0, no open limit when 0.
	// Backends pass store.DSN's fields of the same names.
	MaxIdleConns, MaxOpenConns int
	// UpgradedOldSchema says the backend has brought a database of an
	// older MogileFS schema up to store.SchemaVersion before New (as
	// store/sqlite adds the columns MogileFS's own upgrades added); New
	// then records the version. Otherwise New refuses such a database
	// (CheckSchemaVersion): CREATE TABLE IF NOT EXISTS adds no column.
	UpgradedOldSchema bool
	// Existing is store.DSN.Existing: New refuses a database without the
	// MogileFS schema before it creates anything there.
	Existing bool
	// Batch, if set, is a second pool on DB's database whose connections
	// take several statements in one query (MySQL's multiStatements), with
	// DB's session settings. Lease then runs its transaction in two round
	// trips instead of four where the Dialect is no Claimer (see Lease),
	// CreateTempFile in one with a FidInserter that asks for it, and
	// CommitFile's common case in two with a RowChainer. Only statements
	// of this package's own text go through it; DB's connections stay one
	// statement per query. New takes ownership of it with DB and sizes it
	// as DB (MaxIdleConns, MaxOpenConns each apply to both).
	Batch *sql.DB
	// Replicas, if set, lets the Store answer reads from read replicas
	// (store.AllowReplica): those the DSN names and those of 2.73's slave
	// settings. nil: the backend has none, Capabilities.ReadReplicas is
	// false.
	Replicas *Replicas
}

// Insert is the INSERT statement that every Dialect's Upsert starts from:
// cols of table, one '?' placeholder each.
func Insert(table string, cols []string) string {
	return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
}

// upsertFrom is d.Upsert with its VALUES list replaced by source: a VALUES
// list of SQL expressions (the clock, say) or an "SELECT … WHERE …" of the
// values, in cols' order. Every Dialect's Upsert starts with Insert(table,
// cols), which is what makes the swap possible.
func (s *Store) upsertFrom(table string, cols, key []string, update, source string) string {
	up := s.d.Upsert(table, cols, key, update)
	ins := Insert(table, cols)
	if !strings.HasPrefix(up, ins) {
		panic("sqlstore: " + s.d.Name() + " Dialect.Upsert does not start with Insert(table, cols)")
	}
	return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") " + source + up[len(ins):]
}
