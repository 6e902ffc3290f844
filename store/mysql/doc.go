// Package mysql is the MySQL and MariaDB backend of the gomogile metadata
// store: the schema, the SQL dialect and the named locks that package
// store/sqlstore needs to implement store.Backend on a MySQL 8 or MariaDB
// 10.11 server. It registers itself as "mysql" and "mariadb"; a tracker
// selects it with a blank import and a DSN.
//
//	import _ "github.com/gomogile/gomogile/store/mysql"
//	s, err := store.Open(ctx, "mysql://mogile:secret@db1:3306/mogilefs")
//
// # DSN
//
// Both forms store.ParseDSN accepts name the same settings:
//
//	mysql://user:password@host:port/database?param=value
//	DBI:mysql:database=mogilefs;host=db1;port=3306
//	DBI:mysql:mogilefs:host=db1       DBI:mysql:mogilefs:db1:3306
//
// As in DBD::mysql, DBI attributes are separated by ';' or ':', and bare
// ones are the database, host and port in that order; database, db and
// dbname are the same attribute. One host only (locks are per server).
// The host defaults to 127.0.0.1 and the port to 3306; a host that is an
// absolute path, or the socket parameter, selects a Unix socket. The
// database must exist and be named. Accepted parameters, in any case
// (any other, or one given twice under any of its names, is refused with
// store.ErrBadDSN, so a typo is not silently ignored):
//
//	tls=true|false|skip-verify|preferred|1|0   (DBD::mysql: mysql_ssl)
//	timeout=5s          dial timeout       (connect_timeout, mysql_connect_timeout)
//	readTimeout=30s     I/O read timeout   (read_timeout, mysql_read_timeout)
//	writeTimeout=30s    I/O write timeout  (write_timeout, mysql_write_timeout)
//	socket=/path        Unix socket        (mysql_socket)
//	mysql_enable_utf8, mysql_enable_utf8mb4
//	                    0 or 1; 1 keeps utf8mb4 sessions on a latin1
//	                    mogdbsetup database (see Schema), which otherwise
//	                    get latin1 ones; elsewhere sessions are utf8mb4
//	op_timeout=10s      default deadline of every Store call (store.DefaultOpTimeout;
//	                    0 = none; a Lock call gets its wait timeout on top)
//	max_idle_conns=8    idle connections the pool keeps (store.DefaultMaxIdleConns;
//	                    the tracker sets query_jobs + its workers + 2)
//	max_open_conns=N    limit on the pool's open connections (default none);
//	                    both limits apply to the batch pool (below) too;
//	                    lock sessions are a pool of their own
//
// Durations are Go durations or whole seconds. The read timeout applies to
// the Store's queries, never to lock sessions, which wait in GET_LOCK as
// long as the caller asked.
//
// Sessions use utf8mb4 (latin1 on a latin1 mogdbsetup database, see
// Schema), READ COMMITTED isolation, and client-side
// placeholder interpolation, so each statement costs one round trip. The
// Store's pool runs one statement per query; a second pool with the same
// settings (on a single server, not on Galera; see Galera clusters)
// allows several (multiStatements) and carries only the shared
// layer's statements that gain from it (sqlstore.Config.Batch): an
// upload's fid and tempfile row in one round trip, its commit in two
// instead of six, a replication's AddFileOn in two or three instead of
// five or six, a queue worker's Lease in two instead of four. With
// binary logging on, the server's binlog_format must be ROW or MIXED (the
// defaults of MySQL 8 and MariaDB): InnoDB refuses writes at READ
// COMMITTED under STATEMENT.
//
// # Schema
//
// The tables are MogileFS schema 17, created with CREATE TABLE IF NOT
// EXISTS, InnoDB and utf8mb4, every fid BIGINT UNSIGNED. The names that
// must compare byte for byte (file and tempfile keys, domain and class
// names, setting names) are VARBINARY: "A" and "a" are different keys. A
// database made by mogdbsetup keeps its own column types and collation,
// and keys there behave as they did under MogileFS: a key is found by that
// collation, as its unique index compares (with the usual case-insensitive,
// PAD SPACE one, "Photo", "PHOTO" and "photo " are one key, and uploading
// one replaces the file of another), and list_keys' prefix matches by it
// too (MogileFS's LIKE); keys are still listed and paged in byte order.
// When file.dkey is latin1 (a server whose default was latin1, as MySQL
// 5's was), the Store's sessions are latin1 as DBD::mysql's were, so keys
// pass through as bytes: a UTF-8 key the Perl tracker stored is found and
// listed as those bytes, and ours are stored as theirs were; unless the
// DSN sets mysql_enable_utf8 (or mysql_enable_utf8mb4), with which
// DBD::mysql sent characters, which the server converted to latin1. A
// MogileFS database below
// schema 17 is refused with store.ErrSchemaMismatch rather than upgraded:
// run MogileFS's mogdbsetup on it first.
//
// # Locks
//
// Named locks are GET_LOCK/RELEASE_LOCK. Each held lock has a server
// session of its own, from a connection pool used for nothing else and
// never returned to any pool while it may hold a lock, so no unrelated
// query can run on it (the classic bug of taking GET_LOCK on a pooled
// connection: the lock is then released or granted twice by whoever gets
// that connection next). A session that provably holds nothing is reused.
// Because every Lock call waits on a session holding no lock, a second
// Lock of a name the same Store holds waits like any other caller (the
// server's per-session nesting never applies), and MySQL's user-lock
// deadlock detection has nothing to report.
//
// GET_LOCK's namespace is the whole server, and its name rules differ
// between servers and from their manuals (MySQL refuses names over 64
// characters; both manuals call names case-insensitive, yet MariaDB 10.11
// grants "abc" while another session holds "Abc"), so a lock name is never
// passed through: the server name is "gomogile:"
// followed by the SHA-256, in lower-case base32, of the database name, a
// NUL and the lock name — 61 characters on both servers, case preserved by
// the hash, and two databases on one server never share a lock. Original
// MogileFS trackers take unhashed names, so they and gomogile trackers must
// not run against one database at the same time.
//
// A timeout is honoured to the millisecond on both servers (MySQL rounds
// GET_LOCK's timeout to whole seconds; the last fraction is polled).
// Cancelling the context of a waiting Lock closes its session and KILLs it
// from the Store's pool, so a lock granted at that instant does not
// survive.
//
// Lost: a watcher per held lock waits on the session's socket (on Linux,
// the BSDs and macOS) without reading from it, and asks the server every
// 200ms whether the session still owns the lock (IS_USED_LOCK). Lost fires
// when the socket closes, when a ping fails or answers wrongly, or when no
// answer came within 1.2s (a ping period plus the 1s ping timeout) of the
// last answered statement being sent. Whenever it fires, the session is
// ended for real first: every descriptor of its socket is closed and shut
// down, and the session is KILLed from the Store's pool where that pool
// reaches the server (only if it still holds this very lock, so a KILL
// arriving after a server restart cannot end a stranger that reuses its
// id). A lock reported lost is thus freed on the server as soon as the
// server hears of it.
//
// Lost before the next grant: the server frees a session's locks the
// moment the session ends and grants them to a waiting session at once,
// while the holder may hear of it only later — up to its ping deadline if
// it is cut off (a partition) when an operator KILLs its session or the
// server crashes. So each grant is recorded in gomogile_lock_holder (a
// MEMORY table: no durable commit; Release deletes the row before
// RELEASE_LOCK), and a grant that finds the row of a holding that ended
// without a clean release, or finds the table emptied by a server restart
// less than 1.5s after that restart, waits until 1.5s after it first saw
// that (a ping deadline plus margin) before Lock returns: by then the old
// holder's watcher has fired Lost. A holder that saw its Lost deletes its
// row itself, so a handoff after a loss the holder noticed does not wait.
// The wait counts against the Lock's timeout (a try-lock with timeout 0
// fails with ErrLockTimeout while it lasts).
// (TestLock_KilledWhilePartitionedLostBeforeNextGrant: granted 1.5s after
// the KILL, Lost already fired; without the wait the waiter was granted
// within milliseconds and two held the lock until the partition healed.)
// What it cannot cover is a holder process that does not run (SIGSTOP, a
// VM pause): work done under a lock must be fenced (store.WithFence with
// the lock's token), not timed by Lost. Per fault (figures measured
// against MariaDB 10.11 on loopback, by the tests named):
//
//   - The server ends the session (KILL, shutdown, its wait_timeout): Lost
//     at once where the socket is watched, within a ping period plus a
//     round trip (200ms) where it is not (TestLock_KillLostVersusGrant).
//     The next grant waits its 1.5s unless the holder's own clean-up of its
//     row came first.
//   - The server crashes (SIGKILL of mariadbd): its operating system closes
//     the sockets and Lost fires at once (TestLock_ServerCrashRestart); the
//     locks die with the server, Lock fails with store.ErrUnavailable until
//     it is back, and then grants (after the 1.5s restart wait) and
//     excludes again.
//   - A partition (no FIN, no RST, the Store's pool cut off too): Lost
//     within 1.2s. The server keeps the lock until the session has been
//     silent for its wait_timeout of 2s, counted from the last ping it
//     answered, and the next grant then waits its 1.5s, so no other
//     session is granted the lock before about 3.3s into the partition
//     (TestLock_PartitionedHolderLostBeforeGrant); after a KILL or a crash,
//     the 1.5s handoff wait alone covers it. If the partition heals
//     sooner, the closed socket or the KILL frees the lock then.
//   - Replies stop on the lock's connection alone (a stuck proxy or
//     socket): Lost at the ping deadline, and then the close or the KILL
//     frees the lock within milliseconds (TestLock_LostClosesSession,
//     TestLock_LostKillsPartitionedSession).
//   - The holder process is paused (SIGSTOP, a VM pause): its session stays
//     open but silent, so the lock stays held, and granted to nobody else,
//     for up to the 2s wait_timeout; then the server ends the session and
//     may grant the lock to another (after the 1.5s wait) while the paused
//     holder cannot know. On resuming, its watcher sees the closed socket
//     and Lost fires at once (TestLock_PausedHolder), but code that resumes
//     with it may act before looking at Lost: only fencing keeps its writes
//     out.
//
// Fencing tokens are written by the lock backend's grants into
// gomogile_lock_holder (MEMORY), not into a durable table, so a grant
// costs no durable commit; a fenced write checks them as every backend's
// are, with sqlstore's one check, with the SQL of Dialect.Fencing: a
// grant's token comes from a counter in the sentinel row of
// gomogile_lock_holder and is written into the grant's row, in the
// transaction that holds the name's row of gomogile_fence_stripe (InnoDB,
// 1024 rows that never change) FOR UPDATE, and a fenced write takes the
// same row LOCK IN SHARE MODE (Fencing.Order) before it reads the token: the grant waits
// for a write under the old token to commit, or the write reads the new
// token and is refused (TestFence_WriteInFlightHoldsBackNextGrant). A
// write under the fence of a holding that ended in a clean release finds
// no row and is refused too. The sentinel is written only with a new
// epoch of gomogile_fence_epoch (InnoDB, committed before the sentinel;
// Fencing.NewEpoch, run by sqlstore.NewFenceEpoch as every backend's
// epochs are), its counter starting at epoch << 40, so tokens grow across
// the restarts that empty the MEMORY table (conformance's
// FenceTokensAcrossRestart). A lock cycle is two round trips on the
// lock's session (make bench's ours_rt): GET_LOCK with the holder-row read
// after it and the claim of the row with its token, in one query; the
// row's DELETE with RELEASE_LOCK. A grant that must wait out a grace first
// claims in a round trip of its own.
//
// Errors: a lock call fails with store.ErrLockTimeout when the timeout
// passed, with the caller's context error when that ended it, with
// store.ErrClosed after Close, and with store.ErrUnavailable, the driver's
// error beside it, for any failure of the database (session killed or cut,
// server down or refusing connections); a Release that cannot confirm the
// lock was held to the end reports store.ErrLockLost. None is recognised
// by its text. Open, too, reports a server that is down or unreachable
// with store.ErrUnavailable.
//
// Dead owners: when a tracker process dies, its operating system closes the
// sockets and the server frees its locks at once; KILL frees them at once
// too. When the tracker's host vanishes without closing them (power loss),
// or the process dies while a partition holds back its FIN, the server
// notices only through silence: lock sessions run with wait_timeout 2s,
// which the watcher's pings (every 200ms) keep from expiring while the
// holder lives, so such a lock is freed within about 2.2s of the death.
// (A vanished but live holder's own Lost fires within 1.2s, before that.)
// A dead holder's lock is granted to the next waiter 1.5s after the server
// freed it (the handoff wait above), since the server cannot tell a dead
// holder from a cut-off one (TestLock_SilentHolderFreed).
//
// # Galera clusters
//
// GET_LOCK is a node's own on a MariaDB Galera cluster (and Percona XtraDB
// Cluster): a lock taken through one node does not exclude a session on
// another, and gomogile_lock_holder, a MEMORY table, is not replicated, so
// fencing is node-local too. Two trackers on two nodes would both be
// granted "mgfs:fid:1", and the earlier holder's fenced writes would still
// be accepted after the later grant (TestGalera/DoubleGrantWithoutTheCheck,
// on a private three-node cluster). So Open asks the server (wsrep_on,
// wsrep_provider, the wsrep_cluster_size status) and, on a node of a
// cluster of more than one node, fails with ErrNodeLocalLocks, whose text
// names the fix: a lock service outside the database, set with lock_dsn
// (etcd, package store/etcd). The check is the lock backend's, made when
// it starts, so a Store with lock_dsn, which starts no GET_LOCK session,
// is not refused: Stores on two nodes then exclude each other through
// etcd, and their fence is an InnoDB table Galera replicates
// (TestGalera/LockDSNExcludesAcrossNodes). A fenced write checks its fence
// there by writing the fence row (its checks column), not with a share
// lock: a read's lock is the node's own and Galera certifies what a
// transaction writes, so a write checked through one node while a later
// grant's fence was raised through another would otherwise be replayed
// and commit after it; writing the row makes certification refuse the
// later of the two (TestGalera_FenceCheckCertified).
//
// A Galera cluster of one node is a single server as far as locks go: Open
// accepts it and logs a warning. Such a Store then asks every second
// whether another node joined, and so does each new lock session it opens
// (which also catches a server restarted into a cluster). Once it sees
// more than one node, its locks fail safe for good: each held lock's
// watcher fires Lost and ends its session, Release reports
// store.ErrLockLost, and every Lock fails with ErrNodeLocalLocks
// (TestGalera/NodeJoiningLaterFailsLocksSafe). A tracker started on the
// new node is refused by Open.
//
// A Galera node applies what other nodes commit a moment after they have
// answered their clients, so a session reading there may not yet see a
// row another tracker committed through another node, nor find it to
// update or delete. On a Galera node (wsrep_on, or a provider loaded) the
// Store's sessions therefore read causally: each adds bits 1, 2 and 4 to
// wsrep_sync_wait, so that a START TRANSACTION, SELECT, UPDATE, DELETE,
// INSERT or REPLACE outside a transaction first waits until the node has
// applied everything the cluster committed before it
// (TestGalera_CausalReads). That costs such a statement a round trip
// through the cluster; a single server is not asked.
//
// Nodes certify each transaction against the commits other nodes made
// while it ran: the later of two that wrote one row fails with 1213 (at
// its COMMIT, or at whatever statement follows its abort; an INSERT of a
// key another node inserted meanwhile fails so too, not with 1062). Like
// a deadlock that is retried, and since a row that trackers on several
// nodes update can fail many attempts in a row, a Store on a Galera node
// runs such a transaction up to 32 times instead of 8
// (sqlstore.Config.ConflictAttempts; TestGalera_ConflictBudget).
//
// Nor does a Store on a Galera node open the batch pool: when another
// node's commit aborts a transaction while a query of several statements
// runs in it, MariaDB runs the query's remaining statements on outside the
// transaction, each committed on its own, and may answer the query with
// success (TestGalera_BatchAbortedMidQuery): two racing commits of one fid
// were both told they won, the loser's later rows kept. Every statement
// then goes in a query of its own (TestGalera_RacingCommitsOneWinner), as
// without sqlstore.Config.Batch on any server.
//
// # Capabilities
//
//	LockMechanism  "session": the server frees locks when the session ends.
//	CrossProcess   true: any number of trackers share one database.
//	DeadOwnerBound 4.5s: the bound after a holder dies, however: a silent
//	               session's 2s wait_timeout (after a ping at most 200ms
//	               before the death), the 1.5s handoff wait, and margin
//	               for a loaded host (see Dead owners above).
//	Embedded       false: a server, whose port may close under a Store.
package mysql
