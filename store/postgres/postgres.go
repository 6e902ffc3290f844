package postgres

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

func init() {
	store.Register("postgres", Driver{}, "postgresql", "pg")
}

// Driver opens PostgreSQL Stores; it is registered as "postgres" (aliases
// "postgresql", "pg").
type Driver struct{}

var _ store.Driver = Driver{}

// DefaultPort is PostgreSQL's port, used when the DSN names none.
const DefaultPort = 5432

// Open connects, pings, creates or upgrades the schema, registers the
// Store's lock owner and starts its renewal. ctx bounds all of that; the
// Store's background work outlives it until Close.
func (Driver) Open(ctx context.Context, d *store.DSN) (store.Store, error) {
	cfg, err := NewConfig(ctx, d)
	if err != nil {
		return nil, err
	}
	s, err := sqlstore.New(ctx, cfg)
	if err != nil {
		cfg.DB.Close()
		return nil, err
	}
	return s, nil
}

// NewConfig connects to the database d names and returns what
// sqlstore.New needs for a PostgreSQL Store: the pool, Dialect, the
// lease-lock backend (started by sqlstore.New once the schema exists) and
// the capabilities. A backend for a PostgreSQL-like database builds on it:
// it may replace the Dialect (keeping LockSchema in its Schema, which the
// locks need) before calling sqlstore.New. Until then the caller owns
// cfg.DB and closes it on failure.
func NewConfig(ctx context.Context, d *store.DSN) (sqlstore.Config, error) {
	cfg, err := parseDSN(d)
	if err != nil {
		return sqlstore.Config{}, err
	}
	db := openDB(cfg.conn)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return sqlstore.Config{}, fmt.Errorf("postgres: connect: %w", err)
	}
	host, _ := os.Hostname()
	return sqlstore.Config{
		DB:           db,
		Dialect:      Dialect{},
		Locks:        newLockBackend(db, cfg.conn, cfg.locks, host, os.Getpid()),
		Capabilities: capabilities(cfg.locks),
		OpTimeout:    d.OpTimeout,
	}, nil
}

func capabilities(c lockConfig) store.Capabilities {
	return store.Capabilities{
		LockMechanism:  "lease",
		CrossProcess:   true,
		DeadOwnerBound: c.deadOwnerBound(),
	}
}

// config is a DSN turned into what Open needs.
type config struct {
	conn  *pgx.ConnConfig
	locks lockConfig
}

// passThrough lists the DSN parameters handed to pgx unchanged.
var passThrough = map[string]bool{
	"sslmode":                    true,
	"sslrootcert":                true,
	"sslcert":                    true,
	"sslkey":                     true,
	"connect_timeout":            true,
	"application_name":           true,
	"default_query_exec_mode":    true,
	"statement_cache_capacity":   true,
	"description_cache_capacity": true,
}

// parseDSN validates d without connecting.
func parseDSN(d *store.DSN) (*config, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: postgres: "+format, append([]any{store.ErrBadDSN}, args...)...)
	}
	if d.Database == "" {
		return nil, bad("no database name")
	}
	host := d.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := d.Port
	if port == 0 {
		port = DefaultPort
	}
	kv := []string{
		"host=" + quoteValue(host),
		"port=" + strconv.Itoa(port),
		"dbname=" + quoteValue(d.Database),
	}
	if d.User != "" {
		kv = append(kv, "user="+quoteValue(d.User))
	}
	if d.Password != "" {
		kv = append(kv, "password="+quoteValue(d.Password))
	}
	lc := lockConfig{listen: true}
	var reap time.Duration
	for k, vs := range d.Params {
		if len(vs) != 1 {
			return nil, bad("parameter %s given %d times", k, len(vs))
		}
		v := vs[0]
		var err error
		switch {
		case passThrough[k]:
			kv = append(kv, k+"="+quoteValue(v))
		case k == "lock_lease":
			lc.lease, err = time.ParseDuration(v)
			if err == nil && lc.lease < minLockLease {
				err = fmt.Errorf("below the minimum %v", minLockLease)
			}
		case k == "lock_reap":
			reap, err = time.ParseDuration(v)
			if err == nil && reap <= 0 {
				err = fmt.Errorf("must be positive")
			}
		case k == "lock_owner":
			lc.identity = v
			if v == "" || len(v) > 255 {
				err = fmt.Errorf("must be 1 to 255 bytes")
			}
		case k == "lock_notify":
			lc.listen, err = strconv.ParseBool(v)
		default:
			return nil, bad("unknown parameter %q (have: %s)", k, knownParams())
		}
		if err != nil {
			return nil, bad("%s=%q: %v", k, v, err)
		}
	}
	if lc.lease == 0 {
		lc.lease = DefaultLockLease
	}
	lc.reap = reap
	if lc.reap == 0 {
		lc.reap = lc.lease / 2
	}
	if lc.identity == "" {
		host, _ := os.Hostname()
		lc.identity = fmt.Sprintf("%s:%d:%d", host, os.Getpid(), identitySeq.Add(1))
	}
	conn, err := pgx.ParseConfig(strings.Join(kv, " "))
	if err != nil {
		return nil, bad("%v", err)
	}
	return &config{conn: conn, locks: lc}, nil
}

func knownParams() string {
	names := []string{"lock_lease", "lock_notify", "lock_owner", "lock_reap"}
	for k := range passThrough {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// quoteValue quotes a libpq keyword/value connection string value.
func quoteValue(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}
