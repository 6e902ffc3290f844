package postgres

import (
	"context"
	"fmt"
	"os"

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
	cfg, err := parseDSN(d)
	if err != nil {
		return nil, err
	}
	db := openDB(cfg.conn)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	host, _ := os.Hostname()
	locks := newLockBackend(db, cfg.conn, cfg.locks, host, os.Getpid())
	s, err := sqlstore.New(ctx, sqlstore.Config{
		DB:           db,
		Dialect:      dialect{},
		Locks:        locks,
		Capabilities: capabilities(cfg.locks),
		OpTimeout:    d.OpTimeout,
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := locks.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func capabilities(c lockConfig) store.Capabilities {
	return store.Capabilities{
		LockMechanism:  "lease",
		CrossProcess:   true,
		DeadOwnerBound: c.deadOwnerBound(),
	}
}
