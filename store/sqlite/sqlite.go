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
// The database is the file path; it is created when missing. The
// parameters are busy_timeout (milliseconds, default 10000), how long a
// statement waits for another connection's write before the transaction is
// retried, and op_timeout, every backend's default deadline of a Store call
// (default store.DefaultOpTimeout, 10s; 0 = none); any other parameter is an
// error. ":memory:" is refused: the
// Stores of a tracker must share one database, and an in-memory database
// belongs to one connection.
//
// Connections run in WAL mode, so readers never wait for the writer, and
// start every transaction with BEGIN IMMEDIATE, so concurrent writers queue
// on SQLite's busy handler instead of failing with "database is locked".
//
// # Locks
//
// Named locks live in this process: a table of one-slot semaphores keyed by
// the canonical absolute path of the database, shared (and reference
// counted) by every Store open on that file, so two Stores exclude each
// other. Waiting honours the timeout and the context; locks are not
// reentrant. Closing a Store frees its locks and closes their Lost channels
// first: a dead holder in this process leaves nothing behind, and a dead
// process takes its locks with it.
//
// Because the lock table cannot be seen from another process, a second
// gomogile process opening the same database is refused: while any Store of
// the file is open, this process holds an exclusive flock on a side file,
// the database path plus "-gomogile.lock", which records its pid. Other
// programs (the sqlite3 shell, backups) still read and write the database
// itself.
//
// # Capabilities
//
// LockMechanism "in-process", CrossProcess false, DeadOwnerBound 0.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	_ "modernc.org/sqlite" // registers the database/sql driver "sqlite"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

func init() {
	store.Register("sqlite", driver{})
}

// capabilities are this backend's legitimate differences (see # Capabilities).
var capabilities = store.Capabilities{
	LockMechanism:  "in-process",
	CrossProcess:   false,
	DeadOwnerBound: 0,
}

const defaultBusyTimeout = 10000

type driver struct{}

func (driver) Open(ctx context.Context, dsn *store.DSN) (store.Store, error) {
	s, err := Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Open opens the SQLite database named by dsn as a new, independent Store.
func Open(ctx context.Context, dsn *store.DSN) (*sqlstore.Store, error) {
	busy := defaultBusyTimeout
	for k, v := range dsn.Params {
		switch k {
		case "busy_timeout":
			n, err := strconv.Atoi(v[len(v)-1])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%w: busy_timeout %q is not a number of milliseconds", store.ErrBadDSN, v[len(v)-1])
			}
			busy = n
		default:
			return nil, fmt.Errorf("%w: unknown sqlite parameter %q (known: busy_timeout)", store.ErrBadDSN, k)
		}
	}
	path, err := canonicalPath(dsn.Database)
	if err != nil {
		return nil, err
	}
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(busy)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		f.release()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		f.release()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := upgradeColumns(ctx, db); err != nil {
		db.Close()
		f.release()
		return nil, err
	}
	s, err := sqlstore.New(ctx, sqlstore.Config{
		DB:           db,
		Dialect:      dialect{},
		Locks:        newLockBackend(f.f.locks),
		Capabilities: capabilities,
		OnClose:      f.release,
		OpTimeout:    dsn.OpTimeout,
	})
	if err != nil {
		db.Close()
		f.release()
		return nil, err
	}
	return s, nil
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
	path  string
	refs  int // guarded by filesMu
	guard *os.File
	locks *lockTable
}

var (
	filesMu sync.Mutex
	files   = map[string]*dbFile{}
)

// GuardSuffix is appended to the database path to name the file whose
// flock marks the database as owned by one gomogile process.
const GuardSuffix = "-gomogile.lock"

// ErrInUse reports a database held by another gomogile process.
var ErrInUse = errors.New("sqlite: database in use by another gomogile process")

// openFile joins (or creates) the shared state of path, taking the
// process guard when this is the first Store of the file.
func openFile(path string) (*handle, error) {
	filesMu.Lock()
	defer filesMu.Unlock()
	f := files[path]
	if f == nil {
		guard, err := lockGuard(path + GuardSuffix)
		if err != nil {
			return nil, err
		}
		f = &dbFile{path: path, guard: guard, locks: &lockTable{sems: map[string]chan struct{}{}}}
		files[path] = f
	}
	f.refs++
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
		delete(files, h.f.path)
		// Unlock before close so the next process's flock never sees a
		// stale holder; the side file stays, unlinking it would race.
		if uerr := syscall.Flock(int(h.f.guard.Fd()), syscall.LOCK_UN); uerr != nil {
			err = uerr
		}
		if cerr := h.f.guard.Close(); cerr != nil && err == nil {
			err = cerr
		}
	})
	if err != nil {
		return fmt.Errorf("sqlite: release %s%s: %w", h.f.path, GuardSuffix, err)
	}
	return nil
}

func lockGuard(name string) (*os.File, error) {
	g, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open guard file: %w", err)
	}
	if err := syscall.Flock(int(g.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid := "unknown"
		if b, rerr := os.ReadFile(name); rerr == nil && len(strings.TrimSpace(string(b))) > 0 {
			pid = strings.TrimSpace(string(b))
		}
		g.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by pid %s (SQLite locks live in one process; run one tracker per SQLite database, or use MySQL or PostgreSQL)",
				ErrInUse, name, pid)
		}
		return nil, fmt.Errorf("sqlite: lock guard file %s: %w", name, err)
	}
	if err := g.Truncate(0); err == nil {
		_, _ = g.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return g, nil
}
