// Package torture is the torture program of design §5: "a program that,
// run long enough, reproduces the error". Its second edition makes every
// fault for real: tracker processes that are killed and frozen, a database
// server that crashes, a network that partitions, delays and loses COMMIT
// replies. It then checks the invariants the contract promises over the
// merged history of every process.
//
// # Processes
//
// Run is the coordinator. It creates the rows the load needs with a Store
// of its own, then starts Procs tracker processes by re-executing its own
// binary (os.Executable) with WorkerEnv set to the worker's configuration;
// a program that calls Run must call MaybeWorker first thing in main (a
// test binary: in TestMain). Each process opens its own Stores (Stores,
// each a simulated tracker) and runs Workers goroutines per Store, at
// random: lock-guarded read-modify-write counters whose writes are fenced
// (store.WithFence), uploads (CreateTempFile, CommitFile, a retry after an
// unknown outcome), placement under and without the devcount lock, renames,
// deletes, and replicate-queue work (Lease, Finish, Reschedule, Enqueue).
// Every call and what it learned is one JSON line on a pipe (fd 3), written
// the moment it happens with wall-clock nanoseconds (one host, one clock),
// so a SIGKILL loses only what was in flight, and that counts as an unknown
// outcome. SQLite's database is owned by one process (its Stores refuse a
// second), so an SQLite run has one process with three Stores, and the
// coordinator's Store is closed during the load.
//
// # Faults
//
// Every FaultEvery the injector makes one fault, taking the kinds that
// apply in a shuffled turn, so each kind happens in any run a few turns
// long:
//
//   - kill9: SIGKILL of a tracker process, preferably one holding a lock;
//     a new process takes its slot. On SQLite this is also the database's
//     crash (dbcrash): the process owns it. The coordinator then takes the
//     dead holder's locks itself to measure how soon they are free.
//   - sigstop: SIGSTOP of a process holding a counter lock, for
//     DeadOwnerBound + 500ms (at least 1s: past a PostgreSQL lease), then
//     SIGCONT. Its locks go to others meanwhile; its writes after waking must
//     be refused by their fence.
//   - sessions: the server kills the test database's sessions (MySQL KILL,
//     PostgreSQL pg_terminate_backend), all or a random half.
//   - partition, delay, cut, ambiguous: made by an in-process fault proxy
//     (internal/testkit/faultproxy) between each process's Store and the server —
//     per process slot one proxy per database node the DSN names (two for
//     a failover pair), the coordinator connecting directly; a fault takes
//     all of one slot's proxies, so it hits the slot's connections to
//     whichever node is primary. A partition blackholes them (no FIN, no RST)
//     for 0.3–1s, a third of them past max(DeadOwnerBound, 1s); a delay adds
//     10–160ms to every packet for 0.5–2s; a cut closes every connection; an
//     ambiguous commit lets the next COMMITs through and drops their replies,
//     cutting the connection (armed on the primary's proxy only). SQLite
//     has no network: these print "-".
//   - failover (Private = postgres, a primary with a synchronous streaming
//     standby, so no acknowledged commit is lost): SIGKILL of the primary
//     and promotion of the standby. Every Store names both nodes in a
//     multi-host DSN with target_session_attrs=read-write and reconnects by
//     itself — pool, lock renewer and listener — to the node that accepts
//     writes; there is no service address in front of the pair. The old
//     primary is then rebuilt from the new one (pg_basebackup) as its
//     synchronous standby on the port the DSN names, so the pair fails over
//     again and again within one run, among dbcrash (SIGKILL and restart of
//     whichever node is primary) and every other kind.
//   - On Private = galera (a 3-node MariaDB Galera cluster; Config.Locks
//     must be LocksEtcd, as a Galera node's GET_LOCK is its own) slot i's
//     processes, and its proxies, go to node i%3 + 1 and the coordinator
//     to node 1, so that writes under one lock arrive through different
//     nodes; dbcrash is the SIGKILL of node 2 or 3 and its restart, which
//     rejoins the cluster by a state transfer; sessions are killed on
//     node 1 only (KILL reaches the node's own sessions).
//   - dupowner: a worker process of its own opens what a live process opens
//     — its lock_owner identity on PostgreSQL, which must be refused with
//     store.ErrDuplicate, its database file on SQLite (sqlite.ErrInUse).
//     MySQL's session locks have no owner identity: it does not apply;
//     nor with etcd locks, where each Store takes a lease of its own.
//   - etcdkill, etcdleader, etcdpartition (Config.Locks = LocksEtcd, the
//     locks in a private 3-member etcd cluster, lock_dsn with a prefix of
//     the run's own and a 2s session lease; fencing tokens are etcd
//     revisions raised into the database's fence rows): SIGKILL of a
//     follower, or of the leader (an election), restarted 0.3–2s later,
//     one member at a time so a quorum stays; and one slot's proxies to
//     every member (each slot reaches etcd through a proxy per member of
//     its own, the coordinator directly) blackholed for 0.3–1s, a third
//     of them past DeadOwnerBound. A probe of a killed holder's lock
//     across a leader kill is not judged against DeadOwnerBound: the new
//     leader extends every lease by its TTL.
//
// A seed drives every random choice; the interleaving of processes and
// the database cannot be repeated.
//
// # The pooler
//
// Private = postgres-pgbouncer puts a private PgBouncer in transaction mode
// between the workers' proxies and the server (the coordinator connects
// directly). It is the harness's own infrastructure and no fault kind:
// nothing kills it on purpose. But Debian 12's PgBouncer 1.18 dies by
// itself now and then under these faults, on an assertion of its own
// ("FATAL @src/objects.c:1060 in function disconnect_client(): bad client
// state: 0", just after it forwarded a cancel request; PgBouncer issues
// 801, 822 and 904, fixed in later releases), and with it gone no worker
// reaches the database. So the run watches it (a connection to its admin
// console, which its death closes, and a refused connection to its port)
// and starts it again on the same port, as a deployment's service manager
// would; each restart is reported (pooler_restarts in the summary, a
// finding with the last lines of its log) and is not a violation, and the
// time it was down is the harness's, not held against the workers. A
// restart that fails is the run's error: it could not be carried out.
//
// # Invariants
//
// Checked on every run, each over the whole history, with the checkers of
// package check where one fits (porcupine decides the counters):
//
//   - no two holders of a lock name at once, by time (a holding runs from
//     Lock's return to its Release call, its Lost, its process's SIGKILL or
//     SIGSTOP; a Lost stamp may come LostSlack — plus MySQL's documented
//     watcher bound — after the next grant, since a goroutine stamps it;
//     a session lock — MySQL's — ends when its server crashes, whatever
//     its partitioned holder believes, as store.Lock documents), and by
//     fencing-token order (a grant after another ended has a larger
//     token);
//   - fenced writes never stale: no acknowledged write called after a grant
//     of its lock with a larger token;
//   - guarded counters exact: the counter histories linearizable and ending
//     at the value read, every acknowledged increment counted and an
//     unknown one at most once — an erased increment is a violation;
//   - a killed holder's lock granted again within Capabilities'
//     DeadOwnerBound + RecoverySlack (the worst is max_lock_recovery_ms);
//   - no operation returns more than DeadlineSlack past its deadline
//     (OpTimeout), unless its process was paused meanwhile; the spans in
//     which the process's runtime ran nothing at all (each worker's stall
//     watch: a 10ms ticker, reporting gaps of 100ms or more — a starved
//     process on a loaded machine) are taken off its lateness;
//   - no lock timeout before the time asked;
//   - devcount = COUNT(file_on) (through the contract and in raw SQL); no two
//     files share (dmid, key);
//   - fids unique and increasing: each above every fid returned before its
//     call began, by any process;
//   - every acknowledged commit present exactly once: a file or queued for
//     deletion, in exactly one of tempfile, file and delete queue; a failed
//     one absent; an unknown one applied at most once;
//   - every queue row eventually handled (leased or finished after its
//     enqueue, and the queue empty after the drain) and never leased to two
//     workers while both leases are valid;
//   - every tracker process opened each of its Stores within OpenBound
//     (30s) of its first attempt, not counting the time the database or
//     the pooler was down or the process paused: a worker retries Open,
//     each attempt bounded, until the Store is open or the run stops it,
//     and never gives up by itself (a new process of a slot takes its
//     lock_owner identity over from the killed one within a lease).
//
// A run whose invariants hold ends with one line,
//
//	torture: backend=<b> seconds=<s> ops=<n> faults=<n> violations=0 kill9=<n> sigstop=<n> dbcrash=<n> partition=<n> delay=<n> ambiguous=<n> failover=<n> etcdkill=<n> etcdleader=<n> etcdpartition=<n> max_lock_recovery_ms=<n>
//
// where a kind that does not apply prints "-" (the etcd kinds without etcd
// locks); behind the private
// PgBouncer it ends with " pooler_restarts=<n>".
//
// # Negative controls
//
// Controls lists one control per invariant: a wrapper of package broken
// (a lock that does not exclude, a late Lost, a fenced write not checked, a
// double lease, a reused fid, a lost commit) that every worker process
// applies to its Stores (Config.Broken); the run must report the
// invariant's violation. torture_test.go runs each briefly on every
// backend, SQLite included: there, where nothing takes a lock from a live
// holder, late-lost and unfenced make their locks expire after a 5ms lease.
// A control with Locks set runs with those locks: unfenced on etcd locks
// (Control.Locks = LocksEtcd; gomogile-torture --locks etcd --broken
// unfenced) must show a stale write past etcd's grant of the lock to
// another Store, which the database's fence row alone would refuse.
//
// cmd/gomogile-torture runs the program from the command line, as long as
// asked; `make torture DURATION=120s BACKEND=postgres` runs it on each
// backend, `make torture LOCKS=etcd` with etcd locks.
package torture
