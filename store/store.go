// Package store is the metadata contract of a gomogile tracker: what every
// backend (SQLite, MySQL/MariaDB, PostgreSQL, or one written elsewhere)
// promises, the row types it speaks in, the sentinel errors callers match with
// errors.Is, and the registry through which a tracker picks its backend from
// one DSN.
//
// The tables are those of MogileFS schema version 17, so a database made by
// the original mogdbsetup opens as it is; backends add tables of their own
// only where they need more (lock rows, counters).
//
// # Implementing a backend
//
//  1. Implement [Backend], assuming what the [Store] ([New], which [Open]
//     puts in front of every backend) guarantees: calls only before Close, checked arguments, a context
//     with a deadline; errors carry their sentinel and no prefix. An SQL
//     database usually needs only a dialect, a connection and named locks:
//     package store/sqlstore holds the shared SQL.
//  2. Register a [Driver] in an init function with [Register], under its name
//     and any aliases; users select it with a blank import and a DSN whose
//     scheme (or DBI driver name) is one of them. The Driver gets a parsed
//     [DSN], its URL path as written; one whose DSNs follow neither the URL
//     nor the DBI rules also implements [DSNParser].
//  3. Run conformance.Run from a test named TestConformance with a Harness
//     that opens independent instances against one database.
//  4. Declare what legitimately differs in [Capabilities]; nothing else may.
//
// # Retries and unknown outcomes
//
// A Store runs a write's transaction again by itself only while it cannot
// have applied: after a conflict (deadlock, serialization failure) or a
// connection lost before COMMIT. A connection that stays lost fails the call
// with [ErrUnavailable]: nothing applied. Once COMMIT was sent, a lost
// acknowledgement is [ErrUnknownOutcome] and the Store never runs the write
// again. Each write's doc says whether it is idempotent under retry, that is
// whether a caller may simply call it again after ErrUnknownOutcome.
//
// A write that never reached the server is ErrUnavailable, never
// ErrUnknownOutcome, whatever it is (a transaction, or one statement that
// would have committed by itself): the connection could not be made
// (refused, unreachable, dropped in the handshake, a server starting up or
// shutting down), or the driver found its connection dead before writing
// to it. Backends tell this by the error's type (a failed dial,
// driver.ErrBadConn, their driver's connect error), never by its text.
//
// Every method taking a context may block on the database; the context bounds
// that wait, and so does a default deadline: the DSN parameter op_timeout
// (default [DefaultOpTimeout], 10s; op_timeout=0 for none) gives every call
// whose context has no earlier deadline that long, a Lock call its wait
// timeout plus that long, so a hung server or a partition never ties up a
// caller indefinitely. A call cut short by it fails with
// context.DeadlineExceeded. All methods are safe for concurrent use. After
// Close every method fails with [ErrClosed].
//
// # Read replicas
//
// A Store of a backend with Capabilities.ReadReplicas may answer some reads
// from read replicas of its database, as MogileFS 2.73 answers them from
// its "slaves": the lookups a client sends most (get_paths, file_info,
// list_keys, list_fids). Replicas come from the DSN (the replica
// parameter, see [DSN.Replicas]) and from the server settings 2.73's
// `mogadm slave add` writes (slave_keys, slave_<key> = "DSN|user|pass",
// slave_version), which the Store reads itself, as 2.73's Store does.
//
// Nothing changes for a caller that does not ask: every read sees every
// write committed before it, as the contract promises. A call whose
// context carries [AllowReplica] may instead be answered by a replica that
// is at most the DSN's replica_max_lag behind the primary, measured by
// replication position (WAL position, GTID), never by the replica's own
// report of its delay. The reads that honour it are File, FileByKey,
// FileByKeyOn (PathsReader), Files, ListKeys, FileOn and Checksum. A
// replica that lags more, is down, fails the read, or misses what was
// asked (no such file, no rows) is not believed: the read is asked of the
// primary. Writes and locks never reach a replica, and the Store opens a
// replica read-only: it checks the schema there and creates nothing.
package store

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"errors"
	"hash"
	"strconv"
	"time"
)

// Sentinel errors. Backends wrap them (often together with the driver error)
// so callers test with errors.Is and may still reach the cause with errors.As.
var (
	ErrNotFound       = errors.New("store: not found")
	ErrDuplicate      = errors.New("store: already exists")
	ErrHasFiles       = errors.New("store: has files")
	ErrHasClasses     = errors.New("store: has classes")
	ErrHasDevices     = errors.New("store: has devices")
	ErrInvalid        = errors.New("store: invalid argument")
	ErrLockTimeout    = errors.New("store: lock timeout")
	ErrLockLost       = errors.New("store: lock lost")
	ErrClosed         = errors.New("store: closed")
	ErrSchemaMismatch = errors.New("store: schema version mismatch")
	// ErrUnknownOutcome reports a write whose acknowledgement was lost: the
	// database may or may not have applied it. It is never a plain retryable
	// error; callers retry only writes that are idempotent by contract.
	ErrUnknownOutcome = errors.New("store: outcome of write unknown")
	ErrNoDriver       = errors.New("store: no such backend")
	ErrBadDSN         = errors.New("store: malformed DSN")
	// ErrFenced refuses a write made under [WithFence] whose lock has since
	// been granted again: the write changed nothing.
	ErrFenced = errors.New("store: fenced: a newer grant of the lock exists")
	// ErrLockServiceMismatch refuses to open a Store whose named locks
	// would live elsewhere (lock_dsn) than those of the trackers already
	// on its database: they would not exclude each other.
	ErrLockServiceMismatch = errors.New("store: the database's trackers keep their locks in another lock service")
	// ErrUnavailable reports a connection-level failure (the server is down,
	// unreachable, or dropped the session) before a write's COMMIT, or
	// before any of it reached the server: the call did not apply and may be
	// retried.
	ErrUnavailable = errors.New("store: database unavailable") // connection-level failure; the call did not apply
	// ErrNoSpace reports a write the database refused for lack of space: a
	// full disk, a full table or tablespace, or a configured size cap
	// (SQLite's SQLITE_FULL, MySQL's 1114 and 1021, PostgreSQL's 53100).
	// The write did not apply; the same write may succeed once space is
	// freed, with no reconnect or restart.
	ErrNoSpace = errors.New("store: database out of space")
)

// SchemaVersion is the MogileFS schema version this contract implements.
const SchemaVersion = 17

// MoveSetting is the server setting a move between backends (mogtool
// migrate) holds on its target from its first write until the target has
// been checked against the source: a tracker refuses to start on a
// database holding it, so a half-copied installation is never served as
// if it were whole, and a dump leaves it out.
const MoveSetting = "gomogile_move"

// Never, given as a delay to [Store.Reschedule], parks a queue row until an
// operator acts (MogileFS's ENDOFTIME); [Store.Expedite] leaves it parked.
const Never time.Duration = -1

// EndOfTime is the nexttry value MogileFS stores for [Never].
var EndOfTime = time.Unix(2147483647, 0)

// Backend is what a backend implements and its registered [Driver] opens:
// the driver side of the contract, as database/sql/driver is to
// database/sql. Users never call a Backend directly: [Open] and [New] put
// a [Store] in front of it, which does for every backend, once:
//
//   - refuses every call after Close with ErrClosed, before it reaches the
//     Backend (a call racing with Close may still reach it);
//   - gives every call's context the default deadline (Options.OpTimeout,
//     from the DSN's op_timeout), a Lock call its wait timeout plus that:
//     the Backend may assume that ctx ends;
//   - checks the arguments against the contract and MogileFS's column
//     sizes (names, keys, ranges, limits, queues, lock names and timeouts)
//     and fills in the defaults of CreateHost, UpdateHost and CreateDevice
//     (status, port, weight): a Backend is only called with arguments that
//     passed, so it refuses only what needs the database to know
//     (ErrNotFound, ErrDuplicate, …);
//   - prefixes every error with "store: <operation>:" exactly once: a
//     Backend returns its errors unprefixed, each carrying the sentinel its
//     method's doc names (errors.Is), the cause kept (%w);
//   - keeps the table of held locks and tells the Options.Observer of
//     every call, lock and queue row (metrics, package store/storemetrics);
//   - offers FileByKeyOn (PathsReader) whatever the Backend, through the
//     Backend's own when it has one.
//
// What stays the Backend's: atomicity and the retry rules of the package
// doc (unknown outcomes), the fences of [WithFence] contexts on every
// write, the named locks and what their Lost promises, replicas, and its
// Capabilities. The optional methods a Store passes on when its Backend
// has them: As(any) bool (the driver-specific escape hatch) and LockStats.
// A Backend's fault hooks (package conformance's Faults) stay reachable
// through the Store's Unwrap; a Lock the Store hands out has
// Unwrap() Lock, the Backend's own.
//
// The method docs say what each must do; Close is called once. Package
// conformance checks a Backend through [Open], that is with a Store in
// front, as its users run it. A *Store is a Backend too: a test's
// decorator wraps one and is made a Store again by New.
type Backend interface {
	// Close releases the Store's locks and connections. Further calls fail
	// with ErrClosed; a second Close returns nil.
	Close() error
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Info names the backend and the server's version.
	Info(ctx context.Context) (Info, error)
	// Capabilities lists the legitimate differences of this backend.
	Capabilities() Capabilities
	// Now is the database's clock; leases and queue times use it.
	Now(ctx context.Context) (time.Time, error)

	Namespace
	Files
	Placement
	Queues
	Settings
	Checksums
	FsckLog
	Locker
}

// Namespace: domains, classes, hosts and devices.
type Namespace interface {
	// CreateDomain allocates a dmid race-free. ErrDuplicate if the name exists.
	// Not idempotent: a retry of one that applied fails with ErrDuplicate.
	CreateDomain(ctx context.Context, name string) (Domain, error)
	// DeleteDomain removes a domain and its implicit default class.
	// ErrNotFound, ErrHasFiles, or ErrHasClasses (a class other than 0 exists).
	// A retry of one that applied fails with ErrNotFound.
	DeleteDomain(ctx context.Context, dmid int) error
	Domains(ctx context.Context) ([]Domain, error)

	// CreateClass allocates a classid within its domain race-free; the name
	// "default" maps to classid 0. ErrNotFound (domain), ErrDuplicate (name).
	// Not idempotent: a retry of one that applied fails with ErrDuplicate.
	CreateClass(ctx context.Context, c Class) (Class, error)
	// UpdateClass sets name, mindevcount, replpolicy and hashtype of
	// (DomainID, ID). ErrNotFound, ErrDuplicate (name taken).
	// Idempotent under retry.
	UpdateClass(ctx context.Context, c Class) error
	// DeleteClass: ErrNotFound, ErrHasFiles.
	// A retry of one that applied fails with ErrNotFound.
	DeleteClass(ctx context.Context, dmid, classid int) error
	Classes(ctx context.Context) ([]Class, error)

	// CreateHost allocates a hostid race-free when h.ID is 0.
	// ErrDuplicate (name, ip or id taken).
	// Not idempotent: a retry of one that applied fails with ErrDuplicate.
	CreateHost(ctx context.Context, h Host) (Host, error)
	// UpdateHost replaces every field of host h.ID. ErrNotFound, ErrDuplicate.
	// Idempotent under retry.
	UpdateHost(ctx context.Context, h Host) error
	// DeleteHost: ErrNotFound, ErrHasDevices.
	// A retry of one that applied fails with ErrNotFound.
	DeleteHost(ctx context.Context, hostid int) error
	Hosts(ctx context.Context) ([]Host, error)

	// CreateDevice adds a device with the caller's id (as mogadm does), or
	// the next free one when d.ID is 0. ErrDuplicate, ErrNotFound (host).
	// Not idempotent: with d.ID a retry of one that applied fails with
	// ErrDuplicate; with d.ID 0 it adds a second device.
	CreateDevice(ctx context.Context, d Device) (Device, error)
	// SetDeviceState: ErrNotFound, ErrInvalid (unknown state).
	// Idempotent under retry.
	SetDeviceState(ctx context.Context, devid int, state DeviceState) error
	// SetDeviceWeight: ErrNotFound, ErrInvalid (negative).
	// Idempotent under retry.
	SetDeviceWeight(ctx context.Context, devid int, weight int) error
	// SetDeviceUsage records usage in MiB, stamped with the database clock.
	// Idempotent under retry.
	SetDeviceUsage(ctx context.Context, devid int, mbTotal, mbUsed int64) error
	// DeleteDevice: ErrNotFound, ErrHasFiles (file_on rows remain).
	// A retry of one that applied fails with ErrNotFound.
	DeleteDevice(ctx context.Context, devid int) error
	Devices(ctx context.Context) ([]Device, error)
}

// Files: tempfiles (reserved fids) and committed files.
type Files interface {
	// CreateTempFile reserves a fid: unique across every Store on the
	// database, never reused, never at or below a committed or reserved fid;
	// the first fid of an empty database is 1, as in MogileFS.
	// t.Fid may name the fid (ErrDuplicate if taken; ErrInvalid above
	// MaxNamedFid); CreateTime is set from
	// the database clock.
	// Not idempotent: a retry reserves another fid (with t.Fid it fails with ErrDuplicate).
	CreateTempFile(ctx context.Context, t TempFile) (int64, error)
	// TempFile: ErrNotFound.
	TempFile(ctx context.Context, fid int64) (TempFile, error)
	// DeleteTempFile: ErrNotFound.
	// A retry of one that applied fails with ErrNotFound.
	DeleteTempFile(ctx context.Context, fid int64) error
	// ExpiredTempFiles lists tempfiles created more than age ago (database
	// clock), oldest first.
	ExpiredTempFiles(ctx context.Context, age time.Duration, limit int) ([]TempFile, error)

	// CommitFile turns tempfile c.Fid into a file, atomically: the tempfile
	// row goes, the file row and its file_on rows appear, devcount is set,
	// the checksum is stored, an older fid owning (DomainID, Key) is removed
	// and queued for deletion, and with c.Replicate the fid is queued for
	// replication. Of two racing commits of one tempfile exactly one wins; the
	// other gets ErrNotFound. A retry of a commit that did apply (same fid,
	// domain and key already committed) returns the same result, not an error.
	// Idempotent under retry, as said above.
	CommitFile(ctx context.Context, c Commit) (CommitResult, error)

	// File and FileByKey: ErrNotFound.
	File(ctx context.Context, fid int64) (File, error)
	FileByKey(ctx context.Context, dmid int, key string) (File, error)
	// Files lists files with from <= fid <= to in fid order, at most limit.
	Files(ctx context.Context, from, to int64, limit int) ([]File, error)
	// MaxFid is the largest committed fid, 0 when there is none.
	MaxFid(ctx context.Context) (int64, error)
	// FidCounter is the largest fid the database has handed out or been
	// given (a named fid, ImportRows' floor), at least MaxFid and every
	// tempfile's fid; 0 for a new database. A move between backends
	// carries it, so that no fid is ever handed out twice.
	FidCounter(ctx context.Context) (int64, error)
	// ImportRows writes rows copied from another database by a move
	// between backends (mogtool migrate), keeping their fids, devcounts,
	// due times and fsck times, in one transaction: all of them or none.
	// The fsck events take log ids of this database's own, in the order
	// given. The fid counter ends at or above every fid written and
	// im.FidFloor, so no fid is handed out again. ErrDuplicate if a file's
	// fid or (domain, key), a copy, a checksum or a queue row is already
	// there, and nothing is written; ErrInvalid for a row out of range.
	// Not idempotent: a retry of one that applied fails with ErrDuplicate.
	ImportRows(ctx context.Context, im Import) error
	// FileCounts counts the committed files by domain, class and devcount,
	// as the original's mogstats does: one row per combination that has
	// files, ordered by domain, class and devcount. It reads every file
	// row, so callers run it seldom and keep the answer (the status page
	// counts at most once a minute).
	FileCounts(ctx context.Context) ([]FileCount, error)
	// ListKeys returns keys of domain dmid starting with prefix and sorting
	// after `after` (exclusive; "" = from the start), in byte order whatever
	// the server collation, at most limit. Prefix characters are literal
	// (%, _ and \ included). Where keys are unique by a collation of the
	// database's own (a MySQL database made by mogdbsetup) the prefix, like
	// FileByKey, matches by that collation, as in MogileFS.
	ListKeys(ctx context.Context, dmid int, prefix, after string, limit int) ([]string, error)
	// RenameFile: ErrNotFound (from), ErrDuplicate (to exists).
	// Not idempotent: a retry of one that applied fails with ErrNotFound.
	RenameFile(ctx context.Context, dmid int, from, to string) error
	// SetFileClass: ErrNotFound.
	// Idempotent under retry.
	SetFileClass(ctx context.Context, fid int64, classid int) error
	// DeleteFile removes the file row (and any tempfile row of that fid) and
	// queues the fid for deletion, atomically. file_on and checksum rows stay
	// for the delete worker. ErrNotFound.
	// A retry of one that applied fails with ErrNotFound.
	DeleteFile(ctx context.Context, fid int64) error
}

// Placement: which devices hold a fid, and devcount.
type Placement interface {
	// AddFileOn records a copy of fid on devid and reports whether the row
	// is new. If the file row exists its devcount is updated in the same
	// transaction, so devcount always ends equal to COUNT(file_on).
	// Idempotent under retry (the retry reports false).
	AddFileOn(ctx context.Context, fid int64, devid int) (bool, error)
	// RemoveFileOn is AddFileOn's inverse; it reports whether a row went.
	// Idempotent under retry (the retry reports false).
	RemoveFileOn(ctx context.Context, fid int64, devid int) (bool, error)
	// FileOn lists the devices holding fid, ascending.
	FileOn(ctx context.Context, fid int64) ([]int, error)
	// FidsOnDevice lists fids on devid greater than after, ascending.
	FidsOnDevice(ctx context.Context, devid int, after int64, limit int) ([]int64, error)
	// FileOnRows lists the rows of file_on after the row after, in (fid,
	// devid) order, at most limit: every copy of every file, paged, for a
	// tool that reads the whole table (mogtool dump).
	FileOnRows(ctx context.Context, after FileOnRow, limit int) ([]FileOnRow, error)
	// SyncDevCount sets devcount to COUNT(file_on) and returns it (fsck's
	// repair of rows edited by hand). ErrNotFound.
	// Idempotent under retry.
	SyncDevCount(ctx context.Context, fid int64) (int, error)
}

// Queue names one of MogileFS's work queues.
type Queue int

const (
	QueueReplicate Queue = iota + 1 // file_to_replicate
	QueueDelete                     // file_to_delete2
	QueueFsck                       // file_to_queue, type 1
	QueueRebalance                  // file_to_queue, type 2
)

func (q Queue) String() string {
	switch q {
	case QueueReplicate:
		return "replicate"
	case QueueDelete:
		return "delete"
	case QueueFsck:
		return "fsck"
	case QueueRebalance:
		return "rebalance"
	}
	return "unknown"
}

// Queues: the replicate, delete, fsck and rebalance queues.
type Queues interface {
	// Enqueue adds fids to q. It is idempotent: an existing row keeps its
	// failcount, devid and arg and moves its nexttry earlier if the new one
	// is earlier. ErrInvalid for an unknown queue.
	// Idempotent under retry.
	Enqueue(ctx context.Context, q Queue, entries ...QueueEntry) error
	// Lease takes up to max rows due now (database clock), oldest nexttry
	// first, and pushes their nexttry to now+lease, so no other Store gets
	// them until the lease runs out. Rows parked with Never are not due.
	// Not idempotent: rows a lost call leased stay leased until their lease runs out.
	Lease(ctx context.Context, q Queue, max int, lease time.Duration) ([]QueueItem, error)
	// Reschedule sets nexttry to now+after (or parks the row with Never),
	// adding one to failcount if failed. ErrNotFound.
	// Idempotent under retry only with failed false (each applied call with failed adds one).
	Reschedule(ctx context.Context, q Queue, fid int64, after time.Duration, failed bool) error
	// Finish removes fid from q; removing an absent row is not an error.
	// Idempotent under retry.
	Finish(ctx context.Context, q Queue, fid int64) error
	// QueueItem reads one row. ErrNotFound.
	QueueItem(ctx context.Context, q Queue, fid int64) (QueueItem, error)
	// QueueItems lists the rows of q with fid > after, ascending, parked
	// ones included, at most limit. ErrInvalid for an unknown queue.
	QueueItems(ctx context.Context, q Queue, after int64, limit int) ([]QueueItem, error)
	// QueueLength counts the rows of q, parked ones included.
	QueueLength(ctx context.Context, q Queue) (int64, error)
	// Expedite makes every row of q due now except parked ones
	// (replicate_now) and returns how many it moved.
	// Idempotent under retry (the retry may count fewer rows).
	Expedite(ctx context.Context, q Queue) (int64, error)
	// ClearQueue removes every row of q (fsck_reset, rebalance_reset).
	// Idempotent under retry.
	ClearQueue(ctx context.Context, q Queue) error
}

// Settings: the server_settings table.
type Settings interface {
	// ServerSetting: ErrNotFound.
	ServerSetting(ctx context.Context, key string) (string, error)
	ServerSettings(ctx context.Context) (map[string]string, error)
	// Idempotent under retry.
	SetServerSetting(ctx context.Context, key, value string) error
	// DeleteServerSetting is idempotent.
	DeleteServerSetting(ctx context.Context, key string) error
	// IncrServerSetting adds delta to an integer setting (absent = 0)
	// atomically and returns the new value.
	// NOT idempotent: the Store never runs it again once its COMMIT was
	// sent, and ErrUnknownOutcome means it may have applied; a caller that
	// retries it then may add delta twice.
	IncrServerSetting(ctx context.Context, key string, delta int64) (int64, error)
}

// Checksums: the checksum table.
type Checksums interface {
	// SetChecksum inserts or replaces the checksum of c.Fid.
	// Idempotent under retry.
	SetChecksum(ctx context.Context, c Checksum) error
	// Checksum: ErrNotFound.
	Checksum(ctx context.Context, fid int64) (Checksum, error)
	// Checksums lists the checksums of fids greater than after, ascending,
	// at most limit.
	Checksums(ctx context.Context, after int64, limit int) ([]Checksum, error)
	// DeleteChecksum is idempotent.
	DeleteChecksum(ctx context.Context, fid int64) error
}

// FsckLog: the fsck_log table.
type FsckLog interface {
	// AppendFsckLog records an event stamped with the database clock.
	// Not idempotent: a retry of one that applied logs the event twice.
	AppendFsckLog(ctx context.Context, e FsckEvent) error
	// FsckEvents lists events with logid > after, ascending, at most limit.
	FsckEvents(ctx context.Context, after int64, limit int) ([]FsckEvent, error)
	// FsckEventCounts counts events per code.
	FsckEventCounts(ctx context.Context) (map[string]int64, error)
	// Idempotent under retry.
	ClearFsckLog(ctx context.Context) error
}

// Locker: named locks in one namespace shared by every Store on the database.
//
// Names are valid UTF-8 of 1 to 255 bytes, compared byte for byte. Locks are
// not reentrant: a second Lock of a name this Store already holds waits like
// any other caller. A Store may hold many locks at once.
type Locker interface {
	// Lock acquires name, waiting at most timeout (0 = try once). It fails
	// with ErrLockTimeout no earlier than timeout, with ctx's error when ctx
	// ends first, and with ErrInvalid for a bad name or negative timeout.
	Lock(ctx context.Context, name string, timeout time.Duration) (Lock, error)
}

// Lock is one held named lock.
//
// # What Lost promises, per lock mechanism
//
// Lost is how a holder learns it should stop; what it promises depends on
// Capabilities.LockMechanism:
//
//   - "in-process" (SQLite): exact. The lock lives in this process and is
//     lost only when its Store closes, which closes Lost before any other
//     Store can take the name.
//   - "lease" (PostgreSQL): Lost fires by the holder's own deadline, lease/5
//     before the lease could be reaped, whatever the connection or the
//     server does meanwhile, so another grant comes after Lost as long as
//     the holder's process keeps running.
//   - "session" (MySQL/MariaDB GET_LOCK): Lost fires when the Store's
//     watcher sees the holding session die, or within a ping deadline
//     (1.2s) of losing touch with the server. The server frees a dead
//     session's locks at once, so a grant after a holding that did not end
//     in a clean release waits out that deadline (plus margin) before Lock
//     returns: Lost comes before the next holder runs, as long as the old
//     holder's process keeps running (store/mysql's package doc).
//   - "service" (an outside lock service, lock_dsn; Capabilities.LockService
//     names it): as the service's driver says. etcd (store/etcd): Lost
//     fires by the holder's own deadline, a fifth of the session's TTL
//     before its lease could expire at the server, so another grant comes
//     after Lost as long as the holder's process keeps running; a lease
//     revoked at the server frees its locks at once, and Lost follows at
//     the holder's next renewal.
//
// Under every mechanism a holder that is paused (GC, SIGSTOP, a VM pause)
// or partitioned cannot look at Lost in time. What makes a guarded write
// safe whatever Lost does is fencing: make it under [WithFence] with the
// lock, and the database refuses it with [ErrFenced] once a newer grant of
// the name exists, checked inside the write's own transaction.
type Lock interface {
	Name() string
	// Token is this grant's fencing token: larger than every earlier grant's token of the
	// same name, across all Stores on the database and across server restarts.
	Token() int64
	// Lost is closed when the backend can no longer guarantee exclusivity
	// (session killed, lease not renewed); see above for how early, per
	// mechanism. It is not closed by Release.
	Lost() <-chan struct{}
	// Release frees the lock. Releasing again returns nil; releasing a lock
	// that was lost returns ErrLockLost and changes nothing.
	Release(ctx context.Context) error
}

// Info describes a running backend.
type Info struct {
	Driver        string // registered name, e.g. "postgres"
	ServerVersion string // as the server reports it
	// Locks says where the Store's named locks live: "database" (the
	// backend's own mechanism, Capabilities.LockMechanism) or the outside
	// lock service's description (LockService.Describe).
	Locks string
	// Replicas are the read replicas the Store knows (see AllowReplica),
	// in the order they were named; none for most Stores.
	Replicas []ReplicaStatus
	// Plan says, by operation, which way the backend runs the operations
	// it has more than one way of running (store/sqlstore's fast paths:
	// on a Galera node, for one, MySQL's batched paths are off). Empty for
	// a backend with one way. The tracker logs it at start.
	Plan map[string]string
}

// Capabilities are the few legitimate differences between backends. Only
// the conformance suite reads them; no core behaviour may depend on them.
type Capabilities struct {
	// LockMechanism is how locks are held: "in-process", "session" (the
	// server frees them when the holding connection dies), "lease" (rows
	// renewed by the owner and reaped when the owner dies) or "service" (an
	// outside lock service, LockService).
	LockMechanism string
	// CrossProcess reports whether a second process may open the same
	// database. Embedded backends refuse it instead of splitting the lock
	// namespace.
	CrossProcess bool
	// DeadOwnerBound is the longest a dead holder's lock stays taken.
	DeadOwnerBound time.Duration
	// Embedded reports that the database runs inside the Store's process
	// (SQLite): there is no server whose port could close under a running
	// Store, and the DSN names no host. A backend with a database server
	// leaves it false, and the conformance suite then closes that server's
	// port under an open Store and expects ErrUnavailable from every write.
	Embedded bool
	// LockService is the outside lock service the locks live in
	// (lock_dsn's scheme, e.g. "etcd"; LockMechanism is then "service"),
	// "" for the database's own.
	LockService string
	// ReadReplicas reports that the Store can answer reads from read
	// replicas (DSN.Replicas, 2.73's slave settings; see AllowReplica).
	ReadReplicas bool
}

// Domain is a row of domain.
type Domain struct {
	ID   int    // dmid
	Name string // namespace
}

// HashType is MogileFS's checksum algorithm code (class.hashtype and
// checksum.hashtype), numbered as MogileFS::Checksum numbers them. 2.73
// defines MD5 and SHA-1 only; it reserves 3-6 for the SHA-2 family but
// leaves them disabled, so they are unknown codes here as there.
type HashType int

const (
	HashNone HashType = 0 // no checksum (hashtype NULL)
	HashMD5  HashType = 1 // "MD5"
	HashSHA1 HashType = 2 // "SHA-1"
)

// hashTypes are the algorithms by code: MogileFS's name and digest.
var hashTypes = map[HashType]struct {
	name string
	new  func() hash.Hash
}{
	HashMD5:  {"MD5", md5.New},
	HashSHA1: {"SHA-1", sha1.New},
}

// ParseHashType reads a hash type by the name MogileFS uses in
// create_class's hashtype=, in "<name>:<hex>" checksums and in
// fsck_checksum ("MD5", "SHA-1"; case-sensitive, as the original), and
// "NONE" as HashNone. ok is false for any other name.
func ParseHashType(name string) (h HashType, ok bool) {
	if name == "NONE" {
		return HashNone, true
	}
	for h, t := range hashTypes {
		if t.name == name {
			return h, true
		}
	}
	return 0, false
}

// String is the name ParseHashType reads ("NONE" for HashNone, as
// get_domains prints it), or the number of an unknown code.
func (h HashType) String() string {
	if h == HashNone {
		return "NONE"
	}
	if t, ok := hashTypes[h]; ok {
		return t.name
	}
	return strconv.Itoa(int(h))
}

// New returns a fresh hash computing h; nil for HashNone and unknown codes.
func (h HashType) New() hash.Hash {
	if t, ok := hashTypes[h]; ok {
		return t.new()
	}
	return nil
}

// Size is the length in bytes of h's digests; 0 for HashNone and unknown
// codes.
func (h HashType) Size() int {
	if t, ok := hashTypes[h]; ok {
		return t.new().Size()
	}
	return 0
}

// Class is a row of class. Class 0 of each domain is "default".
type Class struct {
	DomainID    int
	ID          int
	Name        string
	MinDevCount int
	ReplPolicy  string // "" = MultipleHosts()
	HashType    HashType
}

// HostStatus is host.status.
type HostStatus string

const (
	HostAlive    HostStatus = "alive"
	HostDead     HostStatus = "dead"
	HostDown     HostStatus = "down"
	HostReadOnly HostStatus = "readonly"
)

// Host is a row of host.
type Host struct {
	ID          int
	Name        string // hostname
	Status      HostStatus
	HTTPPort    int // default 7500
	HTTPGetPort int // 0 = same as HTTPPort
	IP          string
	AltIP       string
	AltMask     string
}

// DeviceState is device.status.
type DeviceState string

const (
	DeviceAlive    DeviceState = "alive"
	DeviceDead     DeviceState = "dead"
	DeviceDown     DeviceState = "down"
	DeviceReadOnly DeviceState = "readonly"
	DeviceDrain    DeviceState = "drain"
)

// Valid reports whether s is one of the states schema 17 allows.
func (s DeviceState) Valid() bool {
	switch s {
	case DeviceAlive, DeviceDead, DeviceDown, DeviceReadOnly, DeviceDrain:
		return true
	}
	return false
}

// Device is a row of device. Usage fields are zero when never reported.
type Device struct {
	ID      int
	HostID  int
	Status  DeviceState
	Weight  int // default 100
	MBTotal int64
	MBUsed  int64
	MBAsOf  time.Time
}

// TempFile is a row of tempfile: a fid reserved by create_open.
type TempFile struct {
	Fid        int64
	DomainID   int
	Key        string
	ClassID    int
	CreateTime time.Time
	DevIDs     []int // devices offered to the client
}

// File is a row of file.
type File struct {
	Fid      int64
	DomainID int
	Key      string
	Length   int64
	ClassID  int
	DevCount int
}

// Import are rows copied from another database; see [Files.ImportRows].
type Import struct {
	Files     []File
	FileOn    []FileOnRow
	Checksums []Checksum
	Queue     []QueueItem // each with its Queue; NextTry, FailCount, Flags kept
	FsckLog   []FsckEvent // Time kept; LogID not used
	FidFloor  int64       // the fid counter is raised to at least this
	// Settings are server settings set in the same transaction: a mover's
	// record of how far it got, which must not say more than was written.
	Settings map[string]string
}

// FileOnRow is a row of file_on: a copy of Fid on DevID.
type FileOnRow struct {
	Fid   int64
	DevID int
}

// FileCount is how many committed files of one domain and class have one
// devcount; see [Files.FileCounts].
type FileCount struct {
	DomainID int
	ClassID  int
	DevCount int
	Files    int64
}

// Commit is create_close's request; see [Files.CommitFile].
type Commit struct {
	Fid       int64
	DomainID  int
	Key       string
	ClassID   int
	Length    int64
	DevIDs    []int     // devices holding the uploaded copy
	Checksum  *Checksum // optional; Fid is filled in
	Replicate bool      // queue for replication in the same transaction
}

// CommitResult reports what CommitFile did.
type CommitResult struct {
	File        File
	ReplacedFid int64 // the fid that owned the key before, now queued for deletion; 0 if none
}

// QueueEntry is one fid to enqueue.
type QueueEntry struct {
	Fid   int64
	DevID int           // replicate: fromdevid; fsck/rebalance: devid; 0 = none
	Arg   string        // fsck/rebalance only
	After time.Duration // due this long from now; Never parks it
}

// QueueItem is one queue row.
type QueueItem struct {
	Queue     Queue
	Fid       int64
	DevID     int
	Arg       string
	NextTry   time.Time // EndOfTime when parked
	FailCount int
	Flags     int
}

// Checksum is a row of checksum.
type Checksum struct {
	Fid      int64
	HashType HashType
	Sum      []byte
}

// FsckEvent is a row of fsck_log. Codes are MogileFS's four-letter ones
// ("NOPA", "MISS", "BCNT", "REPL", "BSUM", …).
type FsckEvent struct {
	LogID int64
	Time  time.Time
	Fid   int64
	Code  string
	DevID int // 0 = none
}
