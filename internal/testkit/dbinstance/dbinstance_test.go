package dbinstance_test

import (
	"context"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
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

// freePort never hands one port out twice in a process, though none of
// them is bound meanwhile: servers are given their ports before any of
// them starts (a Galera cluster's nodes), and two with one port failed a
// CI run ("gcomm://127.0.0.1:26199,127.0.0.1:26199": a node found its own
// address among its peers and aborted).
func TestFreePort_NeverTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 2000 {
		p, err := dbinstance.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
