// Package pglike is an example of a gomogile metadata backend in a module of
// its own, built only from gomogile's exported pieces: it stands for a
// "PostgreSQL-like" database (CockroachDB, YugabyteDB, …) and runs on
// PostgreSQL itself. It takes postgres.NewConfig's pool and lease locks,
// overrides the Dialect's name and spells its schema as postgres.Schema17
// plus postgres.LockSchema, and lets sqlstore.New own the lifecycle. Its
// test runs conformance.Run, the suite every backend must pass.
//
// A real backend for another database replaces the Dialect methods whose
// SQL differs (embedding postgres.Dialect or mysql.Dialect keeps the rest)
// and, where the database has no session locks, keeps the lease locks: on
// a database whose SQL differs from PostgreSQL's, it implements
// leaselock.DB with its own statements (store/postgres/locks.go and
// locksql.go are the pattern) and passes leaselock.New's result as
// sqlstore.Config.Locks.
package pglike

import (
	"context"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/postgres"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// Scheme is the DSN scheme this backend registers: pglike://user@host/db.
const Scheme = "pglike"

func init() { store.Register(Scheme, Driver{}) }

// Driver opens pglike Stores.
type Driver struct {
	// WrapLocks, if set, replaces the lock mechanism New would use, e.g.
	// to instrument it; nil keeps PostgreSQL's lease locks.
	WrapLocks func(store.LockService) store.LockService
}

// Dialect is PostgreSQL's, under this backend's name.
type Dialect struct{ postgres.Dialect }

// Schema is schema 17 in PostgreSQL DDL and the lease-lock tables.
func (Dialect) Schema() []string { return append(postgres.Schema17(), postgres.LockSchema()...) }

// Open connects and returns a ready Backend (store.Open puts the portable
// Store in front of it).
func (dr Driver) Open(ctx context.Context, d *store.DSN) (store.Backend, error) {
	cfg, err := postgres.NewConfig(ctx, d)
	if err != nil {
		return nil, err
	}
	cfg.Dialect = Dialect{postgres.Dialect{BackendName: Scheme}}
	if dr.WrapLocks != nil {
		cfg.Locks = dr.WrapLocks(cfg.Locks)
	}
	s, err := sqlstore.New(ctx, cfg)
	if err != nil {
		return nil, err // New has closed what cfg held
	}
	return s, nil
}
