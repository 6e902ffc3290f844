package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"go.etcd.io/bbolt/version"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/proclock"
)

// Scheme is the DSN scheme this backend registers.
const Scheme = "bolt"

// ErrInUse reports a database file another process holds open.
var ErrInUse = errors.New("boltstore: database file in use by another process")

// defaultFileLockTimeout is how long Open waits for another process's flock
// on the file: long enough to ride out a tracker that is just exiting, short
// enough that a second tracker started by mistake says so at once.
const defaultFileLockTimeout = 200 * time.Millisecond

// format is the layout version this package writes in the meta bucket: a
// later layout would refuse an older package instead of misreading it.
const format = 1

func init() { store.Register(Scheme, Driver{}) }

// Driver opens bolt Stores.
type Driver struct{}

var _ store.Driver = Driver{}

// capabilities are this backend's legitimate differences; see the package
// doc.
var capabilities = store.Capabilities{
	LockMechanism:  "in-process",
	CrossProcess:   false,
	DeadOwnerBound: 0,
	Embedded:       true,
}

// Open opens (creating when missing) the database file d names and returns a
// Backend on it; store.Open puts a store.Store in front of it.
func (Driver) Open(ctx context.Context, d *store.DSN) (store.Backend, error) {
	cfg, err := parseDSN(d)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h, err := openFile(cfg)
	if err != nil {
		return nil, err
	}
	if err := h.f.checkSchema(cfg.existing); err != nil {
		h.release()
		return nil, err
	}
	return &backend{h: h, f: h.f, held: map[*lock]struct{}{}, done: make(chan struct{})}, nil
}

// config is what Open takes from the DSN.
type config struct {
	path            string
	existing        bool
	noSync          bool
	fileLockTimeout time.Duration
}

func parseDSN(d *store.DSN) (config, error) {
	cfg := config{existing: d.Existing, fileLockTimeout: defaultFileLockTimeout}
	switch {
	case d.Path == "":
		return cfg, fmt.Errorf("%w: %s DSN names no database file (%s:///path/to/mogilefs.db)", store.ErrBadDSN, Scheme, Scheme)
	case len(d.AllHosts()) > 0:
		return cfg, fmt.Errorf("%w: %s DSN names a host; the database is a local file (%s:///path/to/mogilefs.db)", store.ErrBadDSN, Scheme, Scheme)
	case d.User != "" || d.Password != "":
		return cfg, fmt.Errorf("%w: %s DSN names a user; a local file has none", store.ErrBadDSN, Scheme)
	case d.Locks != nil:
		return cfg, fmt.Errorf("%w: %s keeps its locks in its own process and cannot use a lock service (lock_dsn %s): only one process can open the file anyway",
			store.ErrBadDSN, Scheme, d.Locks.Redacted())
	}
	// op_timeout and the pool sizes are the Store's, taken out of Params
	// before a backend sees them; the rest are this backend's.
	err := d.ApplyParams(Scheme,
		store.Param{Names: []string{"nosync"}, Set: store.BoolParam(&cfg.noSync)},
		store.Param{Names: []string{"file_lock_timeout"}, Set: store.SecondsParam(&cfg.fileLockTimeout, true)},
	)
	if err != nil {
		return cfg, err
	}
	abs, err := filepath.Abs(d.Path)
	if err != nil {
		return cfg, fmt.Errorf("%w: path %q: %w", store.ErrBadDSN, d.Path, err)
	}
	// Resolve the directory's links, so that the file's spellings meet in
	// one error message; the file itself is found by os.SameFile.
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return cfg, fmt.Errorf("%s: directory of %s: %w", Scheme, abs, err)
	}
	cfg.path = filepath.Join(dir, filepath.Base(abs))
	return cfg, nil
}

// dbFile is what the Stores of one database file share in this process.
type dbFile struct {
	path  string
	info  os.FileInfo // identifies the file whatever the path (os.SameFile)
	refs  int         // guarded by filesMu
	db    *bolt.DB
	wsem  chan struct{} // one slot: the turn to write, waited for under a ctx
	locks *proclock.Table
}

var (
	filesMu sync.Mutex
	files   []*dbFile
)

// handle is one Store's reference to its dbFile.
type handle struct {
	f    *dbFile
	once sync.Once
}

// openFile joins the dbFile of cfg.path, opening the database when no Store
// of this process has it open.
func openFile(cfg config) (*handle, error) {
	filesMu.Lock()
	defer filesMu.Unlock()
	info, err := os.Stat(cfg.path)
	switch {
	case err == nil:
		for _, f := range files {
			if os.SameFile(f.info, info) {
				f.refs++
				return &handle{f: f}, nil
			}
		}
	case errors.Is(err, fs.ErrNotExist) && cfg.existing:
		return nil, fmt.Errorf("%w: %s does not exist (not created: the caller asked for an existing database)", store.ErrSchemaMismatch, cfg.path)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: %w", Scheme, err)
	}
	db, err := bolt.Open(cfg.path, 0o600, &bolt.Options{Timeout: cfg.fileLockTimeout, NoSync: cfg.noSync, FreelistType: bolt.FreelistMapType})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s is locked (flock) by another process; run one tracker per bolt database", ErrInUse, cfg.path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return nil, fmt.Errorf("%w: %s is not a bbolt database: %w", store.ErrSchemaMismatch, cfg.path, err)
	case err != nil:
		return nil, fmt.Errorf("%s: open %s: %w", Scheme, cfg.path, err)
	}
	if info, err = os.Stat(cfg.path); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", Scheme, err)
	}
	f := &dbFile{path: cfg.path, info: info, refs: 1, db: db, wsem: make(chan struct{}, 1), locks: &proclock.Table{}}
	files = append(files, f)
	return &handle{f: f}, nil
}

// release drops the Store's reference; the last one closes the database and
// with it the flock, so another process (or the test's Reset) may open it.
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
		err = h.f.db.Close()
	})
	if err != nil {
		return fmt.Errorf("%s: close %s: %w", Scheme, h.f.path, err)
	}
	return nil
}

// Buckets. Every one exists once checkSchema has run.
var (
	bMeta       = []byte("meta")        // "format", "fid_counter", "fsck_logid"
	bLockToken  = []byte("lock_token")  // lock name → last token granted
	bSetting    = []byte("setting")     // key → value
	bDomain     = []byte("domain")      // dmid → name
	bDomainName = []byte("domain_name") // name → dmid
	bClass      = []byte("class")       // dmid, classid → class
	bClassName  = []byte("class_name")  // dmid, name → classid
	bHost       = []byte("host")        // hostid → host
	bHostName   = []byte("host_name")   // name → hostid
	bHostIP     = []byte("host_ip")     // ip → hostid
	bDevice     = []byte("device")      // devid → device
	bTemp       = []byte("tempfile")    // fid → tempfile
	bTempTime   = []byte("tempfile_by_time")
	bFile       = []byte("file")        // fid → file
	bFileKey    = []byte("file_by_key") // dmid, key → fid
	bFileClass  = []byte("file_by_class")
	bFileOn     = []byte("file_on")        // fid, devid → ∅
	bFileOnDev  = []byte("file_on_by_dev") // devid, fid → ∅
	bChecksum   = []byte("checksum")       // fid → hashtype, sum
	bFsck       = []byte("fsck_log")       // logid → event
)

// queueBuckets are each queue's rows (fid → row) and its due index
// (nexttry, fid → ∅).
var queueBuckets = map[store.Queue][2][]byte{
	store.QueueReplicate: {[]byte("queue_replicate"), []byte("queue_replicate_due")},
	store.QueueDelete:    {[]byte("queue_delete"), []byte("queue_delete_due")},
	store.QueueFsck:      {[]byte("queue_fsck"), []byte("queue_fsck_due")},
	store.QueueRebalance: {[]byte("queue_rebalance"), []byte("queue_rebalance_due")},
}

// buckets lists every bucket of the layout.
func buckets() [][]byte {
	bs := [][]byte{bMeta, bLockToken, bSetting, bDomain, bDomainName, bClass, bClassName, bHost, bHostName, bHostIP,
		bDevice, bTemp, bTempTime, bFile, bFileKey, bFileClass, bFileOn, bFileOnDev, bChecksum, bFsck}
	for _, q := range []store.Queue{store.QueueReplicate, store.QueueDelete, store.QueueFsck, store.QueueRebalance} {
		bs = append(bs, queueBuckets[q][0], queueBuckets[q][1])
	}
	return bs
}

// initSchema writes what a new database holds: its buckets, the layout's
// format and the schema_version setting MogileFS keeps.
func initSchema(tx *bolt.Tx) error {
	for _, name := range buckets() {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bMeta).Put([]byte("format"), u64(format)); err != nil {
		return err
	}
	return tx.Bucket(bSetting).Put([]byte("schema_version"), []byte(strconv.Itoa(store.SchemaVersion)))
}

// checkSchema creates the layout in a new database and refuses one made by
// a later MogileFS schema or a later layout of this package, changing
// nothing in it. With existing, a database without the layout is refused
// too, and nothing is created.
func (f *dbFile) checkSchema(existing bool) error {
	check := func(tx *bolt.Tx) error {
		meta := tx.Bucket(bMeta)
		if meta == nil {
			if existing {
				return fmt.Errorf("%w: %s holds no gomogile bolt database (not created: the caller asked for an existing one)", store.ErrSchemaMismatch, f.path)
			}
			if tx.Writable() {
				return initSchema(tx)
			}
			return nil
		}
		if v := meta.Get([]byte("format")); v == nil || getU64(v) != format {
			return fmt.Errorf("%w: %s has bolt layout %d; this package reads layout %d", store.ErrSchemaMismatch, f.path, getU64(v), format)
		}
		for _, name := range buckets() {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("%w: %s lacks bucket %q", store.ErrSchemaMismatch, f.path, name)
			}
		}
		want := strconv.Itoa(store.SchemaVersion)
		if v := tx.Bucket(bSetting).Get([]byte("schema_version")); string(v) != want {
			return fmt.Errorf("%w: %s has schema_version %q; this tracker implements %s", store.ErrSchemaMismatch, f.path, v, want)
		}
		return nil
	}
	// Look first without writing: a database that is refused, or opened
	// by a tool that wants an existing one, is never written to.
	var fresh bool
	err := f.db.View(func(tx *bolt.Tx) error {
		fresh = tx.Bucket(bMeta) == nil
		return check(tx)
	})
	if err != nil || !fresh {
		return err
	}
	f.wsem <- struct{}{}
	defer func() { <-f.wsem }()
	return f.db.Update(check)
}

// backend is one Store on a dbFile: a tracker.
type backend struct {
	h      *handle
	f      *dbFile
	closed atomic.Bool

	// Named locks this Store holds (locks.go).
	mu        sync.Mutex
	held      map[*lock]struct{}
	done      chan struct{} // closed by Close: ends every lock wait
	locksGone bool
}

var (
	_ store.Backend     = (*backend)(nil)
	_ store.PathsReader = (*backend)(nil)
)

// Close frees the Store's locks (Lost first) and lets go of the file.
func (b *backend) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	b.closeLocks()
	return b.h.release()
}

func (b *backend) Ping(ctx context.Context) error {
	return b.read(ctx, func(*bolt.Tx) error { return nil })
}

func (b *backend) Info(ctx context.Context) (store.Info, error) {
	if err := b.usable(ctx); err != nil {
		return store.Info{}, err
	}
	return store.Info{Driver: Scheme, ServerVersion: "bbolt " + version.Version, Locks: "database"}, nil
}

func (b *backend) Capabilities() store.Capabilities { return capabilities }

// Now is the process's clock: the database runs in it.
func (b *backend) Now(ctx context.Context) (time.Time, error) {
	if err := b.usable(ctx); err != nil {
		return time.Time{}, err
	}
	return time.Now().Round(0), nil
}

// usable refuses a call on a closed Store or with a context already done:
// bbolt's calls take no context, so this is where it is honoured.
func (b *backend) usable(ctx context.Context) error {
	if b.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// read runs fn in a read-only transaction: a consistent snapshot, which
// never waits for writers.
func (b *backend) read(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := b.usable(ctx); err != nil {
		return err
	}
	return wrapErr(b.f.db.View(fn))
}

// write runs fn in a read-write transaction, after the fences of ctx were
// found current in it: everything fn did commits, or nothing does.
func (b *backend) write(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := b.usable(ctx); err != nil {
		return err
	}
	// bbolt has one writer at a time and waits for it on a mutex that no
	// context can cut short; wait for the turn here instead.
	select {
	case b.f.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.f.wsem }()
	return wrapErr(b.f.db.Update(func(tx *bolt.Tx) error {
		// The context may have ended while waiting: then nothing applies.
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := checkFences(tx, store.Fences(ctx)); err != nil {
			return err
		}
		return fn(tx)
	}))
}

// checkFences refuses a write under a fence whose lock has been granted
// again since: the name's token in lock_token is newer than the fence's. It
// runs inside the write's transaction, so no grant can come between the
// check and the write (grants bump the token in a write transaction too).
func checkFences(tx *bolt.Tx, fences []store.Fence) error {
	if len(fences) == 0 {
		return nil
	}
	tokens := tx.Bucket(bLockToken)
	for _, f := range fences {
		if v := tokens.Get([]byte(f.Name)); v != nil && int64(getU64(v)) > f.Token {
			return fmt.Errorf("%w: lock %q was granted again (token %d) after the fence's grant (token %d)",
				store.ErrFenced, f.Name, getU64(v), f.Token)
		}
	}
	return nil
}

// wrapErr gives bbolt's errors the sentinels of package store.
func wrapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		// A call racing with the last Close of the file.
		return fmt.Errorf("%w: %w", store.ErrClosed, err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("%w: %w", store.ErrNoSpace, err)
	}
	return err
}
