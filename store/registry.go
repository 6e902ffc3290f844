package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Driver opens Stores of one backend. Open must connect, check the schema
// (creating or upgrading it to SchemaVersion when needed, refusing a newer
// one with ErrSchemaMismatch) and return a ready Backend, which [Open] puts
// the Store in front of ([New]).
type Driver interface {
	Open(ctx context.Context, dsn *DSN) (Backend, error)
}

// registered is one backend: the name it was registered under and its
// Driver. Each alias maps to the same value.
type registered struct {
	name   string
	driver Driver
}

var (
	driversMu sync.RWMutex
	drivers   = map[string]registered{}
)

// Register makes a backend available under name (compared case-insensitively)
// and any aliases: other URL schemes or DBI driver names that select it, such
// as "postgresql" and "Pg" (DBI:Pg:…) for "postgres". A DSN through any of
// them parses to a DSN whose Driver is name. It panics on an empty name, a
// nil driver or a name taken twice: all three are programming errors found
// at init.
func Register(name string, d Driver, aliases ...string) {
	if d == nil {
		panic("store: Register driver is nil")
	}
	driversMu.Lock()
	defer driversMu.Unlock()
	r := registered{name: strings.ToLower(name), driver: d}
	for _, n := range append([]string{name}, aliases...) {
		n = strings.ToLower(n)
		if n == "" {
			panic("store: Register with an empty name")
		}
		if _, dup := drivers[n]; dup {
			panic("store: Register called twice for backend " + n)
		}
		drivers[n] = r
	}
}

func lookup(name string) (registered, bool) {
	driversMu.RLock()
	defer driversMu.RUnlock()
	r, ok := drivers[strings.ToLower(name)]
	return r, ok
}

// ownAliases are the other spellings of gomogile's own backends, used only
// to name the package to import when none registered the name; each
// backend registers its aliases itself (a test in cmd/mogilefsd checks this
// list against what they register).
var ownAliases = map[string]string{
	"postgresql": "postgres", "pg": "postgres",
	"mariadb": "mysql",
	"sqlite3": "sqlite", "file": "sqlite",
}

// Drivers returns the sorted names (aliases included) of registered backends.
func Drivers() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	names := make([]string, 0, len(drivers))
	for n := range drivers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open parses dsn, connects, pings and checks the schema, so a wrong DSN or an
// unreachable database fails here rather than at the first request. Accepted
// forms are listed at [ParseDSN]. The Store is [New]'s over the backend's
// Backend, with the DSN's op_timeout as its default deadline.
func Open(ctx context.Context, dsn string, opts ...OpenOption) (*Store, error) {
	d, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return OpenDSN(ctx, d, opts...)
}

// OpenDSN is Open for an already parsed (and possibly amended) DSN, such as
// one whose User and Password came from a tracker's db_user and db_pass.
func OpenDSN(ctx context.Context, d *DSN, opts ...OpenOption) (*Store, error) {
	c := openConfig{dsn: d}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	r, ok := lookup(d.Driver)
	if !ok {
		have := strings.Join(Drivers(), ", ")
		if have == "" {
			have = "none"
		}
		pkg := strings.ToLower(d.Driver)
		if own, ok := ownAliases[pkg]; ok {
			pkg = own
		}
		return nil, fmt.Errorf("%w %q (have: %s); forgot to import github.com/gomogile/gomogile/store/%s?",
			ErrNoDriver, d.Driver, have, pkg)
	}
	b, err := r.driver.Open(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", d.Redacted(), err)
	}
	c.opts.OpTimeout = d.OpTimeout
	if d.OpTimeout == 0 {
		c.opts.OpTimeout = -1 // op_timeout=0: none
	}
	s := New(b, &c.opts)
	if d.Locks != nil && s.Capabilities().LockService == "" {
		// A backend that ignored lock_dsn would lock where no other
		// tracker of the installation looks.
		s.Close()
		return nil, fmt.Errorf("store: open %s: backend %s cannot keep its locks in a lock service (lock_dsn): %w",
			d.Redacted(), d.Driver, ErrInvalid)
	}
	if len(d.Replicas) > 0 && !s.Capabilities().ReadReplicas {
		s.Close()
		return nil, fmt.Errorf("store: open %s: backend %s cannot read from replicas (replica=): %w",
			d.Redacted(), d.Driver, ErrInvalid)
	}
	return s, nil
}
