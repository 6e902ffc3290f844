package sqlite_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gomogile/gomogile/conformance"
)

// restartHarness: SQLite has no server; its restart is every Store closed
// (which RunRestart does before RestartServer) and the file opened again.
// RestartServer checks the file really is free by opening it alone and
// reading the token table the way another program would.
type restartHarness struct{ *harness }

func (h restartHarness) RestartServer(ctx context.Context) error {
	db, err := rawDB(h.path)
	if err != nil {
		return err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM gomogile_fence").Scan(&n); err != nil {
		return fmt.Errorf("read the token table with every Store closed: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("token table empty with every Store closed")
	}
	return nil
}

func TestConformanceRestart(t *testing.T) {
	conformance.RunRestart(t, restartHarness{newHarness(t)})
}
