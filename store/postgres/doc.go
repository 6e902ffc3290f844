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
//	postgres://u@db1:5432,db2:5432/mogilefs?target_session_attrs=read-write
//	DBI:Pg:dbname=mogilefs;host=db1,db2;port=5432,5432;target_session_attrs=read-write
//
// The database name is required. Host defaults to 127.0.0.1; a host
// beginning with "/" is a Unix socket directory (%2F-escaped in a URL). Port
// defaults to 5432. A list of hosts is libpq's failover: every connection
// (the pool's and the lock sessions') tries them in order and, with
// target_session_attrs=read-write, keeps the first that accepts writes, so
// after a standby is promoted the Store reaches it. A missing user or
// password is found as libpq finds it (PGUSER, ~/.pgpass).
// Parameters, all optional; any other is refused with store.ErrBadDSN:
//
//	sslmode, sslrootcert, sslcert, sslkey, sslpassword, sslsni,
//	sslnegotiation, sslcertmode, channel_binding, require_auth, krbsrvname,
//	krbspn, passfile, connect_timeout, target_session_attrs,
//	application_name, options
//	    as in libpq (how to reach and authenticate to the server; nothing
//	    that changes what the SQL means, such as search_path).
//	default_query_exec_mode, statement_cache_capacity, description_cache_capacity
//	    as in pgx; see # Poolers.
//	lock_lease=10s     the owner lease (minimum 300ms).
//	lock_reap=5s       how often each Store reaps dead owners (default lease/2).
//	lock_owner=host:port
//	                   the owner identity (default hostname:pid:n, n counting
//	                   the Stores of the process). Must be unique among live
//	                   trackers: Open refuses an identity a live Store has
//	                   (store.ErrDuplicate); see # Locks. Set it where hosts
//	                   share a hostname and pids repeat (containers with a
//	                   fixed hostname).
//	lock_notify=true   LISTEN for releases; false makes waiters poll only.
//	op_timeout=10s     default deadline of every Store call (store.DefaultOpTimeout;
//	                   0 = none; a Lock call gets its wait timeout on top).
//	max_idle_conns=8   idle connections the pool keeps (store.DefaultMaxIdleConns;
//	                   the tracker sets query_jobs + its workers + 2): with
//	                   fewer than the callers running at once, nearly every
//	                   call opens (and TLS-handshakes) a new session.
//	max_open_conns=N   limit on the pool's open connections (default none).
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
// hold any number. The machinery (renewal, reaping, the Lost timer, the
// restart and epoch rules, LISTEN wake-ups) is package
// store/sqlstore/leaselock; this package supplies its SQL (locksql.go) and
// sessions (locks.go).
//
// A dead owner's locks are freed by a reaper that every Store runs every
// lock_reap, and that a waiter runs at once when it finds the holder's lease
// expired: it deletes owners whose expires_at has passed, with their locks.
//
// An identity belongs to one live Store. Open with an identity that another
// incarnation still has (its lease has not run out) watches that one's
// sentinel: if it is renewed, a live Store has the identity, and Open fails
// with store.ErrDuplicate, naming the identity and lock_owner, after at most
// one renewal period (lease/3, about 0.33s with a 1s lease). If it is not,
// its Store is dead (crashed, killed, or paused), and Open takes over when
// its lease runs out, at most lock_lease after its last renewal (under a
// lease after the crash, since renewals come every lease/3), freeing its
// locks at once rather than at the next reaper pass. Evicting a live-
// looking incarnation sooner would hand its locks out while it may still
// believe it holds them; evicting it at all, as this backend once did, made
// two Stores with one identity evict each other for ever. A paused Store
// that resumes after being taken over fires Lost at once (its deadline has
// passed) and is itself refused when it tries to register again: its
// Locks fail with store.ErrDuplicate from then on.
//
// Renewal only extends a lease; it never re-creates an owner or a lock. A
// Store closes Lost() of all its locks, stops using them and registers a
// new incarnation (deleting the old one's rows, so others get those locks
// at once) when
//   - its sentinel is gone (reaped, or emptied by a crash or promotion),
//   - the renewer's session dies (pg_terminate_backend, server restart), or
//   - its local deadline passes: lease - lease/5 after the sending of the
//     last renewal that succeeded, on the tracker's monotonic clock. A timer
//     fires it whatever the renewer is doing meanwhile (waiting on a
//     blackholed connection, reconnecting, registering), and every
//     statement the renewer or an Acquire sends under the incarnation has
//     that deadline as its context deadline. Since the server set
//     expires_at no earlier than that sending, Lost fires at least lease/5
//     before the lock can be reaped, through any outage or partition; the
//     margin absorbs a difference of the two clocks' rates and the timer's
//     lateness. (A process frozen for longer than that margin learns of the
//     loss late, as with every lease, and fencing tokens are what keep its
//     writes out; a forward step of the server's clock shortens leases.)
//
// Renewals are scheduled lease/3 after the sending of the previous one, so
// slow round trips leave two attempts before the deadline. Measured
// (TestLocks_PartitionLosesBeforeRegrant: lease 1s, every connection of the
// holder blackholed at a random point of its cycle, three rounds of six runs,
// loaded shared machine): Lost 0.38 to 0.77s into the partition, and
// another Store's grant 0.21 to 0.37s after Lost (the margin, plus the
// reaper's round trip); the old renewer let the other Store in first.
//
// Errors of the lock paths carry the store's sentinels: ErrLockTimeout when
// the name stayed held for the timeout; ErrUnavailable when the server
// could not be reached or a session broke (also from a Lock that waited
// with no owner registered because of that); ErrLockLost from Release of a
// lost lock; ErrDuplicate for a live identity; the context's error when it
// ended the call. The shared layer adds the operation and the lock's name.
//
// Waiters LISTEN on a session of their own and retry on a release's
// notification; they also poll with a backoff from 5ms doubling to 100ms,
// which alone suffices while the listener is down. With notifications off
// (behind a pooler) a waiter polls from 1ms doubling to 4ms for the first
// 200ms of its wait, then on to 100ms, and a release in the waiter's own
// Store wakes it at once. Handoff takes about a millisecond with
// notifications and a few without (make bench's postgres-pooler lines).
//
// # Restarts and failover
//
// The lock tables are UNLOGGED: PostgreSQL empties them in crash recovery,
// and a promoted standby has them empty (unlogged tables are not
// replicated). Emptied tables alone would be wrong: a holder whose session
// does not end with the server (behind a pooler, or partitioned away) still
// believes it holds until its deadline, while the next acquirer would find
// the name free at once. So a third UNLOGGED table, gomogile_lock_epoch,
// holds one row: when the lock tables last started out empty. It vanishes
// with them; the first registration after a crash or promotion writes the
// server's current time, and Acquire grants nothing until that epoch is a
// lease old (clock_timestamp() >= started_at + lock_lease, in the acquire
// statement itself). Every holder from before the crash renewed last
// before it, so its local deadline (lease - lease/5 after that renewal) has
// passed by then: no lock is granted after a restart until every
// pre-restart holder must have seen its loss, and each sees it by its
// deadline, or sooner when its renewal finds its sentinel gone or its
// session ended. The rule holds behind a transaction pooler (it is in the
// data, not in a session) and on a promoted standby, whose start time says
// nothing of when it was promoted, which is why the epoch is a row rather
// than pg_postmaster_start_time(). A database created by Open starts at
// -infinity: nobody has held a lock there. The gate uses the acquirer's
// lock_lease, so every Store on one database must use the same lock_lease
// (a shorter one could be granted before a longer-leased holder's
// deadline). So right after a crash or a promotion, Lock with timeout 0
// fails with store.ErrLockTimeout for a lease, and waiting Locks are granted
// once it is over. After a clean shutdown the rows survive; each holder's renewer,
// its session gone, forfeits and re-registers, and dead trackers' rows
// expire.
//
// Fencing tokens live in an UNLOGGED table too, gomogile_fence, so a grant
// costs no WAL flush: the acquire statement inserts the lock row and bumps
// the name's token in one round trip. Tokens still grow across a crash or
// a promotion, which empty that table, through epochs
// (sqlstore.Fencing.NewEpoch): a logged counter, gomogile_fence_epoch, that
// moves only when the first grant after the loss finds the table's floor
// row (the empty name) gone, committed durably before the new floor,
// epoch << 40, is written; every token after it lies above the floor, and
// every token before it below. A write under a token from before the loss
// finds its name's row gone and is refused (store.ErrFenced). On a promoted
// standby the counter is as the primary last replicated it; a failover
// that loses an epoch the primary started after its own crash, with
// asynchronous replication, could repeat that epoch's tokens, as durable
// per-grant tokens could repeat the grants replication lost
// (TestFence_TokensGrowAcrossCrashAndPromotion covers a crash, and a
// promotion of a standby that had streamed everything).
//
// Measured (TestLocks_ServerCrashRestart, SIGKILL of a private server whose
// restart took 0.2 to 5s here): with lease 2s another Store's grant came 2.1
// to 6.7s after the holder's Lost, directly and with lock_notify=false; with
// lease 10s and the holder cut off or behind PgBouncer, 2.8 to 9.5s after.
// On a promoted standby (TestLocks_FailoverPromotedStandby, lease 10s,
// holder cut off): Lost 5.2 to 5.9s after the primary died, the grant 4.6
// to 5.0s after that. The old backend, with no epoch, granted before Lost in
// the lock_notify=false, cut-off and failover cases (a race: not in every
// run); in the default mode its listener noticed the crash first, and
// behind PgBouncer, here, its renewal did.
//
// The alternative, durable (LOGGED) lock tables, keeps the rows through a
// crash, so pre-crash holders would simply expire; but it does not survive
// failover (asynchronous replication can lose the last grants, and a
// standby would then grant a lock the old primary's holder still has), and
// every lock write then waits for a WAL flush. The cost of one
// Lock+Release, from BenchmarkLockCycle (three runs of 2000 cycles on a
// shared 2-core machine, PostgreSQL 15, fsync on; the spread is the
// neighbours' load): 0.55 to 1.05ms as shipped (UNLOGGED, epoch check
// included), 3.3 to 7.2ms with the same tables SET LOGGED; for reference
// 0.32 to 0.39ms for a pg_advisory_lock/unlock pair, 1.4 to 5.1ms for a
// bare durable INSERT+DELETE and 0.30 to 0.60ms for a bare unlogged one.
// (MogileFS's issue measured 0.87ms durable against 0.115ms advisory.)
//
// # Capabilities
//
// LockMechanism "lease"; CrossProcess true; DeadOwnerBound = lock_lease +
// lock_reap (15s by default): a crashed owner's lease ends at most lock_lease
// after its last renewal, and the next reaper pass of any live Store, at
// most lock_reap later, frees its locks. Embedded false: a server (or a
// pooler in front of one), whose port may close under a Store.
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
// waiters of trackers that do listen. Lost keeps its promise behind a
// pooler: the deadline timer does not depend on the session, a server
// restart behind the pooler shows as a vanished sentinel at the next
// renewal, and the epoch rule above keeps a restarted server from granting
// anything until every earlier holder's deadline has passed. The whole
// conformance suite passes through a real PgBouncer (1.18, pool_mode =
// transaction) with these settings (TestConformancePgBouncer). With a
// session-mode pooler, or none, the defaults apply. Each Store uses its pool
// plus one session for renewal and, with notifications, one for LISTEN.
//
// PgBouncer answers every failed server login with SQLSTATE 08P01 ("server
// login has been failing" while the server is down or recovering, but also
// a database the server does not have), so through it Open reports them
// all as store.ErrUnavailable, where a direct connection tells a refused
// login or a missing database (no sentinel) from an unreachable server.
package postgres
