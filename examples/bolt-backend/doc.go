// Package boltstore is an example gomogile metadata backend in a module of
// its own that keeps MogileFS's metadata in a bbolt (go.etcd.io/bbolt)
// database file, one file per installation:
//
//	bolt:///var/lib/mogilefs/meta.db
//	bolt:///var/lib/mogilefs/meta.db?nosync=true
//
// Importing it registers the scheme "bolt" with package store.
//
// # What it shows a backend author
//
// It implements [store.Backend] directly: no SQL, no database/sql, none of
// gomogile's SQL layer (store/sqlstore) nor its internal packages. What a
// backend in another module needs is the driver interface, the sentinel
// errors and the conformance suite; this package is the proof.
//
// store.Open puts a store.Store in front of the Backend, and that layer
// does a lot that this package therefore does not: it refuses calls after
// Close with store.ErrClosed, gives every call's context a deadline, checks
// every argument against MogileFS's column sizes (names, keys, ids, limits,
// queues, lock names and timeouts) and fills in the defaults of hosts and
// devices, prefixes every error with "store: <operation>:", keeps the table
// of held locks and tells the Observer. A Backend refuses only what needs
// the data to know (store.ErrNotFound, store.ErrDuplicate, …) and returns
// its errors unprefixed, each wrapping the sentinel its method's doc names.
//
// What stays here: atomicity (every method is one bbolt transaction), the
// fences of store.WithFence contexts (checked inside each write's own
// transaction, see fence below), the named locks and what their Lost
// channels promise, and honest Capabilities.
//
// # The file, and one process per file
//
// bbolt takes an exclusive flock(2) on its file, so only one process can
// have it open. Every Store of a file in this process shares one *bbolt.DB
// (found by os.SameFile, whatever path each DSN spelt), and with it the
// named-lock table; the DB is closed when the last of them closes. A second
// process opening the same file waits a short while for the flock
// (file_lock_timeout, default 200ms) and then fails with [ErrInUse] instead
// of hanging. Capabilities.CrossProcess is therefore false.
//
// Writes are serialized: bbolt has one writer at a time. This package waits
// for that turn on a channel of its own, so the wait honours the caller's
// context; bbolt itself takes no context, so every call checks its context
// before starting and again inside the transaction, and a write whose
// context ended while it waited changes nothing.
//
// An embedded database has no server and no connection to lose: a write
// either committed or returned an error before committing, so there are no
// unknown outcomes (store.ErrUnknownOutcome) and no store.ErrUnavailable. A
// full disk is store.ErrNoSpace; the transaction was rolled back.
//
// # Named locks
//
// Locks live in this process: a table of one-slot semaphores per database
// file (store/proclock, as SQLite's backend has), shared by its Stores,
// which keeps only the names held or waited for. Waiting honours the timeout and the context;
// locks are not reentrant. Each grant's fencing token is the name's counter
// in the bucket lock_token plus one, written durably in the grant's own
// transaction before Lock returns, so tokens increase across Stores and
// across reopening the file. Closing a Store marks its locks lost (Lost is
// closed) before freeing them, so no other Store can be granted a name
// before the old holder's Lost fires. A dead process takes its locks with it.
//
// The conformance suite's fault hooks (kill a lock's session, crash its
// owner) have no session to act on: the locks live and die with the Store,
// so the test's harness makes both the Store's Close
// (conformance.FaultOverride), as examples/embedded-backend does.
//
// An outside lock service (lock_dsn) is refused with store.ErrBadDSN: only
// one process can open the file anyway, so a lock service would add a
// network dependency without letting a second tracker share the database.
// Honouring it would mean keeping the service's tokens in the fence bucket
// on every grant (store.LockService's doc); this example leaves it out.
//
// # DSN
//
// The DSN's path is the database file, created when missing (its directory
// is not). Parameters (read with store.DSN.ApplyParams: any case; an unknown
// one, or one given twice, is refused with store.ErrBadDSN):
//
//   - nosync (true or false, default false): skip the fsync of every
//     commit (bbolt's NoSync). A crash of the machine can then lose or
//     corrupt the file: tests only. The first Store of a file in a process
//     decides.
//   - file_lock_timeout (a Go duration or whole seconds, default 200ms): how long Open waits
//     for another process to let go of the file before failing with
//     ErrInUse.
//   - op_timeout, every backend's default deadline (taken by package store).
//
// Any other parameter, a host, a user or a lock_dsn is refused with
// store.ErrBadDSN. max_idle_conns and max_open_conns, which package store
// takes out of every DSN for database/sql pools, mean nothing here and are
// ignored.
//
// # Layout
//
// Buckets keyed by big-endian uint64 ids (so bbolt's byte order is numeric
// order), with secondary indexes where a method needs another order: files
// by (dmid, key) for FileByKey and ListKeys and by (dmid, classid) for
// DeleteClass; file_on by (fid, devid) and by (devid, fid); tempfiles and
// queue rows by time, for ExpiredTempFiles and Lease. Times are Unix
// nanoseconds, stored with the sign bit flipped so that they sort.
//
// # Capabilities
//
// LockMechanism "in-process", CrossProcess false, DeadOwnerBound 0,
// Embedded true, no lock service, no read replicas.
package boltstore
