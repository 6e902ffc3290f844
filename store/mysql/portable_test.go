package mysql_test

import (
	"strings"
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/testkit/portable"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// TestConformancePortable runs the suite with MySQL's Dialect stripped of
// its fast paths and without the multi-statement pool (FidInserter,
// RowChainer, Lease's batched transaction), so that the portable path is
// proven equal to them on this server (issue 26; package internal/testkit/portable).
// Collated stays: it is how mogdbsetup's names compare.
const portableScheme = "mysql-portable"

func init() {
	store.Register(portableScheme, portable.Driver{Scheme: portableScheme, NewConfig: mysql.NewConfig})
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
	var _ sqlstore.RowChainer = mysql.Dialect{} // what this run leaves out, with the Batch pool
	if portable.OffersFastPath(portable.Dialect{Dialect: mysql.Dialect{}}) {
		t.Fatal("the portable Dialect still offers a fast path")
	}
	conformance.Run(t, portableHarness{newHarness(t)})
}
