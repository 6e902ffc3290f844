package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Outside lock services (lock_dsn).
//
// A Store keeps its named locks in its metadata database by default (each
// backend's own mechanism, Capabilities.LockMechanism). Where that database
// cannot keep them — a cluster whose nodes do not share session locks
// (MariaDB Galera's GET_LOCK is per node), or an installation that wants
// its locks apart from its metadata — they live in a lock service of their
// own, named by a second DSN, lock_dsn: etcd first (package store/etcd).
//
// The service grants, reports loss and issues fencing tokens; the metadata
// database still keeps the fence. A Store with an outside lock service
// raises its database's fence row of a name to each grant's token before
// Lock returns, durably, and every write made under WithFence checks that
// row in its own transaction, so a holder that lost its grant (paused,
// partitioned) cannot write after its successor's grant was fenced in,
// whatever the service or the network did.

// LockService is the driver interface of named locks, as database/sql's
// driver.Conn is of statements: what a lock mechanism gives a Store —
// grants of named locks under one owner identity and one liveness (an etcd
// session's lease, a PostgreSQL owner's lease, MySQL sessions watched, the
// process itself) for the Store's life. Every mechanism is one: an outside
// lock service's driver (lock_dsn; RegisterLockService), and each SQL
// backend's own locks (store/sqlstore's Config.Locks).
//
// The Store does the rest, once for every mechanism: it checks names and
// timeouts before calling Acquire (a valid UTF-8 name of 1 to 255 bytes,
// CheckLock), refuses calls after its Close, bounds every call with its
// deadline, wraps errors once, fences (a grant's Token into the fence the
// database keeps), counts, and closes the mechanism before its database.
type LockService interface {
	// Acquire takes name, waiting at most timeout (0: try once, and that
	// one try is made however late the call starts) and no longer than
	// ctx: it returns by then even when the service does not answer, and
	// takes back whatever it left in the service in the background. It fails with ErrLockTimeout (wrapped) when name stayed taken,
	// ctx's error when ctx ended first, ErrClosed after Close, or another
	// error (the service unreachable: ErrUnavailable where it can tell).
	// It must not be reentrant: a second Acquire of a name this service
	// holds waits like any other caller.
	Acquire(ctx context.Context, name string, timeout time.Duration) (LockGrant, error)
	// Describe names the service for logs, Info and the status page, with
	// no secret in it: "etcd 3.4.23 at 127.0.0.1:2379,… prefix /gomogile".
	Describe() string
	// DeadOwnerBound is the longest a dead holder's grant stays taken.
	DeadOwnerBound() time.Duration
	// Close releases every grant still held (their Lost fires first) and
	// ends the owner identity. Further Acquires fail with ErrClosed.
	Close() error
}

// LockGrant is one grant a LockService made.
type LockGrant interface {
	Name() string
	// Token is the grant's fencing token, issued by the service: larger
	// than every earlier grant's of the same name, by any owner, ever. A
	// database's own mechanism whose grant bumped no token returns 0, and
	// the Store bumps one in the database after the grant; an outside
	// service must issue one.
	Token() int64
	// Lost is closed when the service can no longer vouch for the grant:
	// the owner's liveness lapsed or was revoked, or will lapse before
	// the service could grant the name again (a margin against its own
	// expiry). Release does not close it.
	Lost() <-chan struct{}
	// Release frees the grant: nil again after a release, ErrLockLost
	// (wrapped) once the grant was lost, and nothing changed then. It
	// returns by ctx's end: a service that could not answer by then
	// finishes the release in the background (the name stays the
	// Store's until it has) and Release reports the error.
	Release(ctx context.Context) error
}

// LockServiceDriver opens a LockService from a parsed lock_dsn; drivers
// register with RegisterLockService in their package's init.
type LockServiceDriver interface {
	OpenLockService(ctx context.Context, dsn *DSN) (LockService, error)
}

var (
	lockDriversMu sync.RWMutex
	lockDrivers   = map[string]LockServiceDriver{}
)

// RegisterLockService makes a lock service available under name (a
// lock_dsn's scheme, compared case-insensitively). It panics on a nil
// driver, an empty name or a name registered twice, as Register does.
func RegisterLockService(name string, d LockServiceDriver) {
	if d == nil {
		panic("store: RegisterLockService driver is nil")
	}
	n := strings.ToLower(name)
	if n == "" {
		panic("store: RegisterLockService with an empty name")
	}
	lockDriversMu.Lock()
	defer lockDriversMu.Unlock()
	if _, dup := lockDrivers[n]; dup {
		panic("store: RegisterLockService called twice for " + n)
	}
	lockDrivers[n] = d
}

// LockServices lists the registered lock services, sorted.
func LockServices() []string {
	lockDriversMu.RLock()
	defer lockDriversMu.RUnlock()
	out := make([]string, 0, len(lockDrivers))
	for n := range lockDrivers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ParseLockDSN parses a lock_dsn: a URL whose scheme names a registered
// lock service (etcd://host1:2379,host2:2379/prefix?param=value). Its
// errors wrap ErrBadDSN and show no password.
func ParseLockDSN(s string) (*DSN, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: empty lock_dsn", ErrBadDSN)
	}
	d, err := ParseURL(s)
	if err != nil {
		return nil, fmt.Errorf("lock_dsn: %w", err)
	}
	d.Driver = strings.ToLower(d.Driver)
	return d, nil
}

// OpenLockService opens the lock service d names (ParseLockDSN's result).
func OpenLockService(ctx context.Context, d *DSN) (LockService, error) {
	lockDriversMu.RLock()
	drv, ok := lockDrivers[d.Driver]
	lockDriversMu.RUnlock()
	if !ok {
		have := strings.Join(LockServices(), ", ")
		if have == "" {
			have = "none"
		}
		return nil, fmt.Errorf("%w: lock service %q (have: %s); forgot to import github.com/gomogile/gomogile/store/%s?",
			ErrNoDriver, d.Driver, have, d.Driver)
	}
	ls, err := drv.OpenLockService(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("store: open lock service %s: %w", d.Redacted(), err)
	}
	return ls, nil
}

// OpenOption changes how Open opens a Store.
type OpenOption func(*openConfig) error

// openConfig is what Open's options change: the parsed DSN and the
// Store's options.
type openConfig struct {
	dsn  *DSN
	opts Options
}

// WithObserver has obs told of every call, lock and queue row of the
// Store (see [Observer]; store/storemetrics is one).
func WithObserver(obs Observer) OpenOption {
	return func(c *openConfig) error {
		c.opts.Observer = obs
		return nil
	}
}

// WithLockDSN keeps the Store's named locks in the lock service lockDSN
// names (the tracker's lock_dsn) rather than in its database; "" keeps
// the database's own. It overrides a lock_dsn parameter of the DSN.
func WithLockDSN(lockDSN string) OpenOption {
	return func(c *openConfig) error {
		d := c.dsn
		if strings.TrimSpace(lockDSN) == "" {
			d.Locks = nil
			return nil
		}
		l, err := ParseLockDSN(lockDSN)
		if err != nil {
			return err
		}
		d.Locks = l
		return nil
	}
}

// ExistingOnly opens only a database that already holds an installation's
// schema (DSN.Existing): for tools that read one (mogtool dump, the source
// of a move), which must not turn a wrongly named database into an empty
// MogileFS one.
func ExistingOnly() OpenOption {
	return func(c *openConfig) error {
		c.dsn.Existing = true
		return nil
	}
}

// takeLockDSN moves the lock_dsn parameter out of Params into Locks.
func (d *DSN) takeLockDSN() error {
	vs, ok := d.Params["lock_dsn"]
	if !ok {
		return nil
	}
	delete(d.Params, "lock_dsn")
	if len(vs) != 1 {
		return fmt.Errorf("%w: parameter lock_dsn given %d times", ErrBadDSN, len(vs))
	}
	l, err := ParseLockDSN(vs[0])
	if err != nil {
		return err
	}
	d.Locks = l
	return nil
}
