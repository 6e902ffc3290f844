// Package sqlite is the SQLite backend of gomogile, in pure Go (no cgo),
// for single-host installations and tests. Importing it registers the
// backend "sqlite" with package store; the metadata operations are those of
// store/sqlstore, this package adds the connection, the dialect and the
// named locks.
//
// # DSN
//
//	sqlite:///var/lib/mogilefs/meta.db   sqlite:relative/meta.db
//	sqlite3:///path   file:/path         DBI:SQLite:dbname=/path
//
// The database is the file path; it is created when missing. Parameters
// (names in any case; an unknown one, or one given twice, is refused with
// store.ErrBadDSN):
//
//   - busy_timeout (milliseconds, default 10000): how long a statement waits
//     for another connection's write before the transaction is retried.
//
//   - synchronous (normal, the default, or full; also off and extra): when
//     SQLite waits for the disk. With normal, a crash of the process or of
//     the tracker loses nothing and the database never corrupts, but a power
//     failure or an operating-system crash can roll back the last commits
//     acknowledged before it: an uploaded file a client was told is stored
//     may be missing after the reboot (its blob stays on the storage node,
//     unreferenced). With full every commit waits for the write-ahead log to
//     reach the disk, so nothing acknowledged is lost, at the cost of one
//     fsync per commit (a few milliseconds on most disks, which bounds the
//     commits per second). extra also syncs the directory; off never syncs
//     and can corrupt the database on power failure (tests only).
//
//   - max_page_count (default none): a cap on the database's size in
//     pages (4096 bytes each unless the database was made with another
//     page_size), SQLite's PRAGMA max_page_count on every connection. A write that would grow the database past it fails with
//     store.ErrNoSpace, as on a full disk, and changes nothing; writes
//     succeed again once deletions have freed pages (the file does not
//     shrink: SQLite reuses its free pages). It bounds the metadata on a
//     disk shared with other data, and it is how the tests make the
//     database full for real.
//
//   - sql_driver (default sqlite, modernc.org/sqlite, which this package
//     links in): the name of the database/sql driver the file is opened
//     with. A program embedding gomogile that registers a wrapper of that
//     driver under a name of its own (tracing, counting statements) names
//     it here; the wrapper must take the same DSN as the driver it wraps
//     (the path, then ?_pragma=… parameters). A name no driver is
//     registered under is an error.
//
//   - op_timeout, every backend's default deadline of a Store call (default
//     store.DefaultOpTimeout, 10s; 0 = none).
//
//   - max_idle_conns and max_open_conns, every backend's pool limits
//     (default store.DefaultMaxIdleConns idle, no open limit; the tracker
//     keeps query_jobs + its workers + 2 idle).
//
// Any other parameter is an error. ":memory:" is refused: the Stores of a
// tracker must share one database, and an in-memory database belongs to
// one connection.
//
// Connections run in WAL mode, so readers never wait for the writer, and
// start every transaction with BEGIN IMMEDIATE, so concurrent writers queue
// on SQLite's busy handler instead of failing with "database is locked".
//
// # Locks
//
// Named locks live in this process: a table of one-slot semaphores for the
// database file (the file itself, found by os.SameFile, not its path), shared (and reference
// counted) by every Store open on that file, so two Stores exclude each
// other. The table (store/proclock) keeps only the names held or waited
// for. Waiting honours the timeout and the context; locks are not
// reentrant. Closing a Store frees its locks and closes their Lost channels
// first: a dead holder in this process leaves nothing behind, and a dead
// process takes its locks with it.
//
// Because the lock table cannot be seen from another process, a second
// gomogile process opening the same database is refused with ErrInUse:
// while any Store of the file is open, this process holds an exclusive
// flock(2) on the database file itself, so every path that reaches the
// file (a symbolic link, a hard link, a bind mount, another container) meets
// the same lock. A second process that opened a hard link beside the first
// used its own WAL index and corrupted the database within seconds. SQLite
// locks with fcntl byte ranges, which flock does not conflict with on local
// filesystems, so other programs (the sqlite3 shell, backups) still read
// and write the database. Stores in one process share the lock table of the
// file whatever path each was opened by (and open it by the first Store's
// path, since SQLite names the write-ahead log after the path; for the same
// reason, open a database by one path only, or a crash can leave committed
// transactions in a log another path does not see). The guard is released only after
// the Store's connections are closed, because closing any descriptor of the
// file drops the process's fcntl locks on it. On Windows, where file locks
// are mandatory and would block SQLite's own reads, the lock is on a side
// file, the database path plus GuardSuffix. On NFS, Linux emulates flock
// with fcntl locks, which then conflict with other programs' SQLite locks:
// keep the database on a local filesystem.
//
// # Capabilities
//
// LockMechanism "in-process", CrossProcess false, DeadOwnerBound 0,
// Embedded true: the database is a file this process opens, with no server
// to become unreachable.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gofrs/flock"

	_ "modernc.org/sqlite" // registers the database/sql driver "sqlite"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/proclock"
	"github.com/gomogile/gomogile/store/sqlstore"
)

func init() {
	store.Register("sqlite", driver{}, "sqlite3", "file")
}

// capabilities are this backend's legitimate differences (see # Capabilities).
var capabilities = store.Capabilities{
	LockMechanism:  "in-process",
	CrossProcess:   false,
	DeadOwnerBound: 0,
	Embedded:       true,
}

const defaultBusyTimeout = 10000

type driver struct{}

var synchronousModes = map[string]string{"off": "OFF", "normal": "NORMAL", "full": "FULL", "extra": "EXTRA"}

func (driver) Open(ctx context.Context, dsn *store.DSN) (store.Backend, error) {
	s, err := Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Open opens the SQLite database named by dsn as a new, independent
// Backend; store.Open puts a store.Store in front of it, as
// store.New(b, opts) does for a caller of Open.
func Open(ctx context.Context, dsn *store.DSN) (*sqlstore.Store, error) {
	cfg, err := NewConfig(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return sqlstore.New(ctx, cfg)
}

// NewConfig opens the SQLite database file dsn names and returns what
// sqlstore.New needs for a Store on it: the pool, the Dialect, the
// in-process locks (or dsn.Locks' lock service) and the capabilities. The
// file is dsn.Database, which store.ParseDSN fills from a sqlite DSN's path;
// a backend of another scheme built on SQLite fills it itself, may set the
// Dialect's BackendName to its scheme (Info.Driver), and then calls
// sqlstore.New, which owns the result from then on. A caller that gives
// up before New calls cfg.OnClose, which closes the pool and lets go of
// the file (the guard against a second process).
func NewConfig(ctx context.Context, dsn *store.DSN) (sqlstore.Config, error) {
	busy := defaultBusyTimeout
	sync := "NORMAL"
	maxPages := 0
	sqlDriver := "sqlite"
	err := dsn.ApplyParams("sqlite",
		store.Param{Names: []string{"synchronous"}, Set: store.ChoiceParam(&sync, synchronousModes)},
		store.Param{Names: []string{"busy_timeout"}, Set: store.IntParam(&busy, 0)}, // milliseconds
		store.Param{Names: []string{"max_page_count"}, Set: store.IntParam(&maxPages, 1)},
		store.Param{Names: []string{"sql_driver"}, Set: func(v string) error {
			if sqlDriver = v; !slices.Contains(sql.Drivers(), v) {
				return errors.New("no database/sql driver is registered under that name in this program")
			}
			return nil
		}},
	)
	if err != nil {
		return sqlstore.Config{}, err
	}
	path, err := canonicalPath(dsn.Database)
	if err != nil {
		return sqlstore.Config{}, err
	}
	if _, err := os.Stat(path); dsn.Existing && errors.Is(err, fs.ErrNotExist) {
		return sqlstore.Config{}, fmt.Errorf("sqlite: %w: %s does not exist (not created: the caller asked for an existing database)", store.ErrSchemaMismatch, path)
	}
	f, err := openFile(path)
	if err != nil {
		return sqlstore.Config{}, err
	}
	// SQLite names the WAL and its index after the path: every Store of
	// the file in this process must use one path, or they would write two
	// logs of one database.
	path = f.f.path
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(busy)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+sync+")")
	if maxPages > 0 {
		q.Add("_pragma", "max_page_count("+strconv.Itoa(maxPages)+")")
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open(sqlDriver, path+"?"+q.Encode())
	if err != nil {
		f.release()
		return sqlstore.Config{}, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		f.release()
		return sqlstore.Config{}, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := upgradeColumns(ctx, db); err != nil {
		db.Close()
		f.release()
		return sqlstore.Config{}, err
	}
	var locks store.LockService
	if dsn.Locks == nil {
		locks = newLockBackend(f.f.locks)
	}
	return sqlstore.Config{
		DB:           db,
		Dialect:      Dialect{},
		Locks:        locks,
		LockDSN:      dsn.Locks,
		Capabilities: capabilities,
		// The guard goes only after every connection of this Store: closing
		// the guard's descriptor while SQLite holds fcntl locks on the file
		// would drop them (sqlstore closes the DB again; that is a no-op).
		OnClose:      func() error { return errors.Join(db.Close(), f.release()) },
		Existing:     dsn.Existing,
		MaxIdleConns: dsn.MaxIdleConns,
		MaxOpenConns: dsn.MaxOpenConns,
		// upgradeColumns did what MogileFS's SQLite upgrades did.
		UpgradedOldSchema: true,
	}, nil
}

// canonicalPath makes the database path absolute and resolves symbolic
// links, so every spelling of one file shares one lock table.
func canonicalPath(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("%w: sqlite DSN names no database file", store.ErrBadDSN)
	case p == ":memory:" || strings.HasPrefix(p, "file::memory:") || strings.Contains(p, "mode=memory"):
		return "", fmt.Errorf("%w: sqlite in-memory database %q cannot be shared by independent Stores; give a file path", store.ErrBadDSN, p)
	case strings.ContainsAny(p, "?#\x00"):
		return "", fmt.Errorf("%w: sqlite path %q contains '?', '#' or NUL", store.ErrBadDSN, p)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%w: sqlite path %q: %w", store.ErrBadDSN, p, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("sqlite: database directory of %s: %w", abs, err)
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// dbFile is what the Stores of one database file share in this process.
type dbFile struct {
	path  string      // the path it was first opened by
	info  os.FileInfo // identifies the file (os.SameFile) whatever the path
	refs  int         // guarded by filesMu
	guard *flock.Flock
	locks *proclock.Table
}

var (
	filesMu sync.Mutex
	files   []*dbFile
)

// GuardSuffix is appended to the database path to name the side file
// locked instead of the database where locking the database itself would
// get in SQLite's way (Windows; see the package doc).
const GuardSuffix = "-gomogile.lock"

// ErrInUse reports a database held by another gomogile process.
var ErrInUse = errors.New("sqlite: database in use by another gomogile process")

// openFile joins (or creates) the shared state of the file at path, taking
// the process guard when this is the first Store of the file.
func openFile(path string) (*handle, error) {
	// The file must exist to be locked and identified; an empty file is an
	// empty SQLite database.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	} else if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	filesMu.Lock()
	defer filesMu.Unlock()
	for _, f := range files {
		if os.SameFile(f.info, info) {
			f.refs++
			return &handle{f: f}, nil
		}
	}
	guard := flock.New(guardPath(path))
	ok, err := guard.TryLock()
	if err != nil {
		return nil, fmt.Errorf("sqlite: lock %s: %w", guard.Path(), err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s is locked by %s (SQLite locks live in one process; run one tracker per SQLite database, or use MySQL or PostgreSQL)",
			ErrInUse, describeFile(guard.Path(), info), lockHolder(info))
	}
	f := &dbFile{path: path, info: info, refs: 1, guard: guard, locks: &proclock.Table{}}
	files = append(files, f)
	return &handle{f: f}, nil
}

// handle is one Store's reference to a dbFile.
type handle struct {
	f    *dbFile
	once sync.Once
}

func (h *handle) release() error {
	var err error
	h.once.Do(func() {
		filesMu.Lock()
		defer filesMu.Unlock()
		h.f.refs--
		if h.f.refs > 0 {
			return
		}
		files = slices.DeleteFunc(files, func(f *dbFile) bool { return f == h.f })
		err = h.f.guard.Unlock() // unlocks, then closes the descriptor
	})
	if err != nil {
		return fmt.Errorf("sqlite: release %s: %w", h.f.guard.Path(), err)
	}
	return nil
}
