// Package portable is test tooling: a backend whose Stores run the shared
// SQL layer's portable path for every operation, the path a new backend's
// first Dialect takes. store/mysql and store/postgres register one each
// in their tests and run the conformance suite on it, beside their own
// fast paths, so both ways of running an operation are proven equal on
// both servers.
package portable

import (
	"context"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// Driver opens Stores from a backend's NewConfig with the fast paths taken
// away: a Dialect with only sqlstore.Dialect's methods (no Claimer,
// FidInserter, RowChainer) and no multi-statement pool.
type Driver struct {
	// Scheme is the name it is registered under, and its Info().Driver.
	Scheme    string
	NewConfig func(context.Context, *store.DSN) (sqlstore.Config, error)
}

// Open implements store.Driver.
func (d Driver) Open(ctx context.Context, dsn *store.DSN) (store.Backend, error) {
	cfg, err := d.NewConfig(ctx, dsn)
	if err != nil {
		return nil, err
	}
	cfg.Dialect = Dialect{Dialect: cfg.Dialect, Scheme: d.Scheme}
	if cfg.Batch != nil {
		cfg.Batch.Close()
		cfg.Batch = nil
	}
	s, err := sqlstore.New(ctx, cfg)
	if err != nil {
		return nil, err // New has closed what cfg held
	}
	return s, nil
}

// Dialect is a Dialect with only the methods of sqlstore.Dialect: no fast
// path. Collated is not a fast path but a meaning (how names compare: a
// mogdbsetup database's), so it is passed on.
type Dialect struct {
	sqlstore.Dialect
	Scheme string
}

func (p Dialect) Name() string { return p.Scheme }

func (p Dialect) Collated(col string) bool {
	c, ok := p.Dialect.(sqlstore.Collated)
	return ok && c.Collated(col)
}

// OffersFastPath reports whether d has any of the fast-path interfaces;
// a Dialect of this package must not.
func OffersFastPath(d sqlstore.Dialect) bool {
	_, claims := d.(sqlstore.Claimer)
	_, inserts := d.(sqlstore.FidInserter)
	_, chains := d.(sqlstore.RowChainer)
	return claims || inserts || chains
}
