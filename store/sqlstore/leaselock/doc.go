// Package leaselock is a named-lock backend for store/sqlstore built on a
// lock table and owner leases on the database's clock, for databases
// without session locks or where sessions cannot be relied on (behind a
// transaction pooler, across a failover). store/postgres is its first user;
// a backend for a PostgreSQL-like database (CockroachDB, YugabyteDB) or any
// other SQL database with transactions can use it by supplying the SQL.
//
// # The machinery
//
// Each Store registers an owner: a sentinel row carrying its identity
// (lock_owner, or host:pid:n), a random incarnation id and an expiry on the
// database clock, renewed every lease/3 by a background goroutine on a
// session of its own. A lock is a row (name, owner, token) inserted only
// while the owner is alive and the lock epoch is a lease old. What it
// guarantees, on top of sqlstore's contract:
//
//   - Holder death frees the lock: every Store, and any waiter that finds
//     the holder's lease expired, deletes expired owners with their locks
//     (the reaper); a dead owner's locks stay taken at most
//     [Config.DeadOwnerBound].
//   - Loss comes before a regrant: a timer fires Lost at the local deadline,
//     lease - lease/5 after the last renewal that was sent, whatever the
//     renewer's session is doing; a renewal that finds the sentinel gone, or
//     a renewer session that died, fires it at once. The Store then
//     registers a new incarnation, deleting the old one's rows. Renewal
//     never re-creates an owner or a lock.
//   - Restarts: a new incarnation of the same identity frees the expired
//     incarnations at once; while another one of the identity renews, Start
//     fails with store.ErrDuplicate (two live Stores cannot share one).
//   - The epoch gate: the statements grant nothing until the epoch row is a
//     lease old, so lock tables emptied by crash recovery or a promotion
//     (UNLOGGED, or simply lost) cannot hand out a lock someone from before
//     still believes held.
//   - Wake-ups: a waiter retries as soon as its own Store releases the
//     name, and with a [Notifier] as soon as a release anywhere is heard,
//     instead of at its next poll (5ms doubling to 100ms; with no wake-ups
//     from other Stores, 1ms doubling to 4ms for the first 200ms of the
//     wait, then on to 100ms).
//
// # Using it from a backend
//
//  1. Create the tables (owners, locks, the epoch row) in the backend's
//     schema; store/postgres's locksql.go is a worked example of the DDL
//     and of every statement below.
//  2. Implement [DB]: the statements on the Store's pool and the renewer's
//     dedicated [Session]. Each statement must use the database's clock for
//     expiries, and each one that frees locks should notify the freed names
//     if the backend has a [Notifier] (a release only those a waiter marked,
//     if it is a [WaitMarker]). Map errors onto store's sentinels:
//     store.ErrUnavailable wrapping a lost connection (the machinery
//     retries an acquire or release whose outcome is unknown, recognising
//     its own row by the token), store.ErrDuplicate for a unique violation,
//     the context's error when it ended the call.
//  3. Optionally implement [Notifier] (LISTEN/NOTIFY or the like) and
//     [SessionKiller] (for conformance's KillLockSession).
//  4. Build a [Config] (its Params read the lock_* DSN parameters)
//     and hand New's result to sqlstore.Config.Locks; sqlstore.New starts it
//     once the schema exists and closes it before the pool.
package leaselock
