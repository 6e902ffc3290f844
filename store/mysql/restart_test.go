package mysql_test

import (
	"context"
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/store"
)

// restartHarness runs the conformance suite's restart cases on a private
// MariaDB, restarted the hard way: SIGKILL, then a start on the same data
// (crash recovery), which is the restart a fencing token must survive.
type restartHarness struct {
	*harness
	db *privateDB
}

func (h restartHarness) RestartServer(ctx context.Context) error {
	if err := h.db.m.Kill(); err != nil {
		return err
	}
	return h.db.m.Start(ctx)
}

func TestConformanceRestart(t *testing.T) {
	db := startPrivateMariaDB(t)
	d, err := store.ParseDSN(db.DSN())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{dsn: db.DSN(), database: d.Database, admin: openRaw(t, d)}
	conformance.RunRestart(t, restartHarness{harness: h, db: db})
}

// Origin: the suite ran on a private instance.
func (h *restartHarness) Origin() string { return "private instance " + h.db.m.Addr() }
