package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/postgres"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// The shared layer takes a fast path for some operations when the Dialect
// offers one (Claimer: Lease in one statement; FidInserter: CreateTempFile
// in one round trip), and the portable path otherwise — the path a new
// backend's first Dialect takes. TestConformancePortable runs the suite with
// PostgreSQL's Dialect stripped of those interfaces, so both paths are
// proven equal on this server (issue 26).
const portableScheme = "postgres-portable"

func init() { store.Register(portableScheme, portableDriver{}) }

type portableDriver struct{}

func (portableDriver) Open(ctx context.Context, d *store.DSN) (store.Store, error) {
	cfg, err := postgres.NewConfig(ctx, d)
	if err != nil {
		return nil, err
	}
	cfg.Dialect = portableDialect{Dialect: cfg.Dialect, name: portableScheme}
	if cfg.Batch != nil {
		cfg.Batch.Close()
		cfg.Batch = nil
	}
	s, err := sqlstore.New(ctx, cfg)
	if err != nil {
		cfg.DB.Close()
		return nil, err
	}
	return s, nil
}

// portableDialect is a Dialect with only the methods of sqlstore.Dialect:
// no fast path. Collated is not a fast path but a meaning (how names
// compare), so it is passed on.
type portableDialect struct {
	sqlstore.Dialect
	name string
}

func (p portableDialect) Name() string { return p.name }
func (p portableDialect) Collated(col string) bool {
	c, ok := p.Dialect.(sqlstore.Collated)
	return ok && c.Collated(col)
}

type portableHarness struct{ *harness }

func (h portableHarness) Name() string { return portableScheme }
func (h portableHarness) DSN() string {
	return portableScheme + "://" + strings.SplitN(h.harness.DSN(), "://", 2)[1]
}

func TestConformancePortable(t *testing.T) {
	if testing.Short() {
		t.Skip("another full run of the suite")
	}
	var _ sqlstore.Claimer = postgres.Dialect{} // what this run leaves out
	var d any = portableDialect{Dialect: postgres.Dialect{}}
	_, claims := d.(sqlstore.Claimer)
	_, inserts := d.(sqlstore.FidInserter)
	_, chains := d.(sqlstore.RowChainer)
	if claims || inserts || chains {
		t.Fatal("the portable Dialect still offers a fast path")
	}
	conformance.Run(t, portableHarness{newHarness(t)})
}
