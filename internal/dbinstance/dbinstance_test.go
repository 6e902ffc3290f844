package dbinstance_test

import (
	"context"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/dbinstance"
	"github.com/gomogile/gomogile/internal/testdb"
)

// need ends the test when kind cannot run here: a skip on a developer's
// machine, a failure under CI=true.
func need(t *testing.T, kind string) {
	t.Helper()
	if err := dbinstance.Available(kind); err != nil {
		testdb.Unavailable(t, kind, err.Error())
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
