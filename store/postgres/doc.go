// Package postgres is the PostgreSQL backend of gomogile's metadata store. It
// registers itself as "postgres" (aliases "postgresql", "pg"); a tracker
// selects it with a blank import and a db_dsn naming it. The metadata
// operations are the shared ones of package sqlstore; this package supplies
// the connection, the SQL dialect, MogileFS schema 17 in PostgreSQL types
// (the tables mogdbsetup creates, so its databases open as they are), and
// named locks that need no session state.
//
// # DSN
//
//	postgres://user:password@host:5432/mogilefs?sslmode=disable
//	postgresql://…                      (the same)
//	DBI:Pg:dbname=mogilefs;host=db1;port=5432   (MogileFS's form)
//
// The database name is required. Host defaults to 127.0.0.1; a host
// beginning with "/" is a Unix socket directory. Port defaults to 5432. A
// missing user or password is found as libpq finds it (PGUSER, ~/.pgpass).
// Parameters, all optional; any other is refused with store.ErrBadDSN:
//
//	sslmode, sslrootcert, sslcert, sslkey, connect_timeout, application_name
//	    as in libpq.
//	default_query_exec_mode, statement_cache_capacity, description_cache_capacity
//	    as in pgx; see # Poolers.
//	lock_lease=10s     the owner lease (minimum 300ms).
//	lock_reap=5s       how often each Store reaps dead owners (default lease/2).
//	lock_owner=host:port
//	                   the owner identity (default hostname:pid:n, n counting
//	                   the Stores of the process). Must be unique among live
//	                   trackers: a Store registering an identity evicts any
//	                   other owner of that identity with its locks. Set it
//	                   where hosts share a hostname and pids repeat
//	                   (containers with a fixed hostname).
//	lock_notify=true   LISTEN for releases; false makes waiters poll only.
//	op_timeout=10s     default deadline of every Store call (store.DefaultOpTimeout;
//	                   0 = none; a Lock call gets its wait timeout on top).
//
// # Locks
//
// Locks are rows of gomogile_lock, keyed by the name's bytes (BYTEA: case-
// and byte-exact whatever the collation), each naming its owner in
// gomogile_lock_owner. There are no advisory locks: they belong to a
// session, so they break behind transaction poolers and leak or double-grant
// when a pooled connection changes hands; and MogileFS keyed them by
// hostname, so trackers on different hosts never excluded each other.
//
// Each Store registers an owner row, its sentinel: the identity, a random
// incarnation id, and expires_at, a lease on the database's clock
// (clock_timestamp(); the tracker's clock is never compared with it). A
// goroutine renews it every lease/3 on a session of its own. Acquiring is
// one INSERT … ON CONFLICT DO NOTHING that also checks the sentinel is alive;
// releasing is one DELETE of the row with our owner and acquisition token,
// which also sends NOTIFY with the name. Locks are not reentrant (the
// second INSERT by the same Store conflicts like anyone's), and a Store may
// hold any number.
//
// A dead owner's locks are freed by a reaper that every Store runs every
// lock_reap, and that a waiter runs at once when it finds the holder's lease
// expired: it deletes owners whose expires_at has passed, with their locks.
// A Store that registers an identity first evicts that identity's older
// incarnations, so a tracker restarted with the same lock_owner frees its
// predecessor's locks at once rather than after the lease.
//
// Renewal only extends a lease; it never re-creates an owner or a lock. A
// Store closes Lost() of all its locks, stops using them and registers a
// new incarnation (deleting the old one's rows, so others get those locks
// at once) when
//   - its sentinel is gone (reaped, or evicted by its identity),
//   - the renewer's session dies (pg_terminate_backend, server restart), or
//   - no renewal has succeeded for lease - lease/5 measured from the
//     sending of the last successful one: since the server set expires_at
//     no earlier than that, Lost fires at least lease/5 before the lock can
//     be reaped. (A process frozen for longer than that margin learns of the
//     loss late, as with every lease; a forward step of the server's clock
//     shortens leases.)
//
// Waiters LISTEN on a session of their own and retry on a release's
// notification; they also poll with a backoff from 5ms doubling to 100ms,
// which alone suffices when notifications are off or the listener is down.
// Handoff takes about a millisecond with notifications and about 50ms
// without.
//
// Both tables are UNLOGGED. A server crash ends every session and thus
// every holder; PostgreSQL empties unlogged tables in crash recovery, which
// is exactly the state after such a crash, and in exchange no lock write
// waits for a WAL flush. Likewise a promoted standby starts with them empty,
// and every renewer's session ended with the old primary. After a clean
// restart the rows are still there; each tracker's renewer, its session
// gone, forfeits and re-registers, and dead trackers' rows expire.
//
// The cost of one Lock+Release, from BenchmarkLockCycle (five runs on a
// shared 2-core machine, PostgreSQL 15, fsync on; the spread is the
// neighbours' load): 0.30 to 0.63ms, against 0.11 to 0.42ms for a
// pg_advisory_lock/unlock pair, 0.60 to 4.5ms for a durable INSERT+DELETE
// and 0.24 to 0.42ms for a bare unlogged INSERT+DELETE. Within one run the
// cycle costs about twice the advisory pair and a half to a tenth of the
// durable rows. (MogileFS's issue measured 0.87ms durable against 0.115ms
// advisory.)
//
// # Capabilities
//
// LockMechanism "lease"; CrossProcess true; DeadOwnerBound = lock_lease +
// lock_reap (15s by default): a crashed owner's lease ends at most lock_lease
// after its last renewal, and the next reaper pass of any live Store, at
// most lock_reap later, frees its locks.
//
// # Poolers
//
// Nothing of the locks lives in a session, so trackers may reach PostgreSQL
// through a transaction-mode pooler such as PgBouncer. Set
//
//	default_query_exec_mode=simple_protocol   no named prepared statements
//	lock_notify=false                         LISTEN needs a session
//
// Releases still send NOTIFY, which works through a pooler and wakes the
// waiters of trackers that do listen. With a session-mode pooler, or none,
// the defaults apply. Each Store uses its pool plus one session for renewal
// and, with notifications, one for LISTEN.
package postgres
