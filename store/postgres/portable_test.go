package postgres_test

import (
	"strings"
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/testkit/portable"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/postgres"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// TestConformancePortable runs the suite with PostgreSQL's Dialect stripped
// of its fast paths (Claimer: Lease in one statement; FidInserter:
// CreateTempFile in one round trip), so that the portable path is proven
// equal to them on this server (issue 26; package internal/testkit/portable).
const portableScheme = "postgres-portable"

func init() {
	store.Register(portableScheme, portable.Driver{Scheme: portableScheme, NewConfig: postgres.NewConfig})
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
	if portable.OffersFastPath(portable.Dialect{Dialect: postgres.Dialect{}}) {
		t.Fatal("the portable Dialect still offers a fast path")
	}
	conformance.Run(t, portableHarness{newHarness(t)})
}
