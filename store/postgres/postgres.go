package postgres

import (
	"context"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
	"github.com/gomogile/gomogile/store/sqlstore/leaselock"
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
func (Driver) Open(ctx context.Context, d *store.DSN) (store.Backend, error) {
	cfg, err := NewConfig(ctx, d)
	if err != nil {
		return nil, err
	}
	s, err := sqlstore.New(ctx, cfg)
	if err != nil {
		return nil, err // New has closed what cfg held
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
	// Down, unreachable, starting up, or behind a pooler, which answers
	// every failed server login with SQLSTATE 08P01 (PgBouncer's "server
	// login has been failing"): store.ErrUnavailable, worth retrying, unlike
	// a refused login or a missing database the server itself reports.
	if err := sqlstore.Connect(ctx, db, Dialect{}); err != nil {
		return sqlstore.Config{}, err
	}
	c := sqlstore.Config{
		DB:           db,
		Dialect:      Dialect{},
		Capabilities: capabilities(cfg.locks),
		Existing:     d.Existing,
		MaxIdleConns: d.MaxIdleConns,
		MaxOpenConns: d.MaxOpenConns,
		Replicas:     replicas(d),
	}
	if d.Locks != nil {
		c.LockDSN = d.Locks // an outside lock service: no lease locks
	} else {
		c.Locks = newLockBackend(db, cfg.conn, cfg.locks)
	}
	return c, nil
}

func capabilities(c leaselock.Config) store.Capabilities {
	return store.Capabilities{
		LockMechanism:  "lease",
		CrossProcess:   true,
		DeadOwnerBound: c.DeadOwnerBound(),
	}
}
