// Package sqlstore is the SQL implementation of store.Backend shared by
// the SQL backends (store/sqlite, store/mysql, store/postgres). The
// metadata operations, the schema bootstrap, fid allocation, transaction
// retries, error classification and the bookkeeping around named locks
// are written once here (what every backend shares, SQL or not, is in
// package store's Store); a backend supplies a [Dialect], an open *sql.DB and its lock
// mechanism (Config.Locks, a store.LockService),
// and calls [New].
//
// [New] is the one lifecycle of every backend: it migrates the schema, then
// starts the lock backend ([LockStarter]), then returns the ready Backend;
// Close stops the locks, runs Config.OnClose, and closes the DB. A backend
// in another module builds on the same pieces: postgres.NewConfig,
// mysql.NewConfig and sqlite.NewConfig return a ready Config (pool,
// exported Dialect, locks) that it may adjust before New;
// postgres.Schema17, mysql.Schema17 and
// [Schema17Tables] give the schema. A lock backend that implements
// [LockFaults] gives its Store the conformance suite's fault hooks
// (Store.KillLockSession, Store.CrashOwner). examples/outside-backend
// (on PostgreSQL) and examples/embedded-backend (on SQLite) in the
// repository are such backends.
//
// # Implementing a dialect
//
// A backend may rely on these guarantees from this package:
//
//   - Every statement it sees uses '?' placeholders and passes through
//     Dialect.Rebind exactly once.
//   - Write statements run inside a transaction started with DB.BeginTx and
//     default options, so a backend that needs a particular transaction
//     mode (SQLite's BEGIN IMMEDIATE) sets it on its connections. A
//     transaction is short: it never waits on anything but the database.
//     The exceptions are single statements in autocommit: the
//     Dialect.Counter and Fencing bumps, and the INSERT of an allocated
//     tempfile when no fence guards it.
//   - A transaction whose statement fails with ErrKindRetry is rolled back
//     and run again from the start, a few times with a small jittered
//     backoff; statements are never continued after a failure inside a
//     transaction (PostgreSQL aborts the transaction on any error).
//   - ErrKindConnLost at COMMIT, or on the autocommit INSERT of an
//     allocated tempfile, is reported as store.ErrUnknownOutcome and the
//     write is never run again; before COMMIT the transaction is retried
//     like ErrKindRetry, and when the retries run out (or outside a
//     transaction) the caller gets store.ErrUnavailable wrapping the cause.
//     ErrKindUnsent, a statement that never reached the server, is never an
//     unknown outcome, at COMMIT or anywhere: it is retried, then
//     store.ErrUnavailable. The shared layer itself takes every error
//     NotSent recognises (a failed dial, driver.ErrBadConn) as
//     ErrKindUnsent, whatever Classify says. A failure because Close ran
//     meanwhile is store.ErrClosed. ErrKindNoSpace is never retried (only
//     freeing space helps) and is store.ErrNoSpace, at COMMIT too: the
//     database refused the write. No error is classified by its text.
//   - The store.Store (store.New, which store.Open puts in front of
//     every backend) has already refused calls after Close, checked the
//     arguments and given the context its deadline, and adds the
//     "store: <op>:" prefix to the errors returned here, which carry only
//     the sentinel and the cause (see store.Backend); a *Store is a
//     store.Backend, not meant to be called directly.
//   - Every write checks the fences of its context (store.WithFence) first
//     in its transaction; see fence.go for the token table.
//   - Time values reach the database as integers computed from
//     Dialect.UnixNow, never from the Go clock.
//   - Comparisons and ordering of keys go through Dialect.ByteOrder;
//     a dialect that is Collated has lookups and list_keys prefixes
//     follow the key column's collation instead (ordering stays by bytes).
//   - UPDATE's RowsAffected is only trusted when the statement changes the
//     value it matches on, so a MySQL connection without CLIENT_FOUND_ROWS
//     gives the same results.
//   - Lock names and timeouts have been checked (store.CheckLock), calls
//     after Close are refused, every call is bounded by its deadline (all
//     by the store.Store): a lock mechanism (a store.LockService, the database's own as an
//     outside one) only grants, reports loss and releases through its own
//     handles. The handle Store.Lock returns wraps the grant.
//   - Close calls Config.Locks' Close, then Config.OnClose, then DB.Close,
//     once, whatever state the Store is in.
//
// And must provide:
//
//   - Dialect.Schema: idempotent DDL for every schema 17 table. The tables
//     this package adds ([OwnSchema]) are created by New in portable SQL.
//   - Dialect.Classify sorting unique violations, retryable conflicts,
//     connections lost after a statement may have reached the server
//     (ErrKindConnLost) and connections that never carried it
//     (ErrKindUnsent: NotSent, and the driver's own connect errors, such as
//     a handshake the server dropped); anything else is returned to the
//     caller wrapped.
//   - A connection in autocommit mode whose transactions see rows committed
//     by others once a lock on them was granted (READ COMMITTED or a
//     locking read), and whose UPDATE of a row locks it until COMMIT.
//
// # Fast paths
//
// With only the methods of Dialect, every operation runs on the portable
// path: one statement a round trip, in a transaction of the pool. A Dialect
// may also implement FidInserter, RowChainer (with Config.Batch) or Claimer,
// which let CreateTempFile, CommitFile, AddFileOn/RemoveFileOn and Lease
// take fewer round trips. An optional interface chooses a way of running
// the same operation, never a different meaning: New decides once, per
// operation, which way it runs (paths.go, one file per strategy), and the
// conformance suite runs the portable path on MySQL and PostgreSQL beside
// their fast paths. Collated is not a fast path but a meaning (how names
// compare).
package sqlstore
