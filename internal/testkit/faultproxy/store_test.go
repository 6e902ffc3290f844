package faultproxy_test

import (
	"errors"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/faultproxy"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
)

// Issue 7: an IncrServerSetting whose COMMIT applied but whose reply was
// dropped must move the setting once. IncrServerSetting is not
// idempotent, so the Store must not run it again: it reports
// store.ErrUnknownOutcome, and the caller decides (by reading the value).
// The Store did not retry it at the commit the issue was filed on either
// (this test passes there): the second application was the caller's
// retry, which the contract did not yet forbid (store.go now says NOT
// idempotent).
func TestStoreIncrAmbiguousCommit(t *testing.T) {
	for _, b := range []struct {
		name  string
		dsn   func(testing.TB) string
		proto faultproxy.Protocol
	}{
		{"mysql", testdb.MySQL, faultproxy.MySQL},
		{"postgres", testdb.Postgres, faultproxy.Postgres},
	} {
		t.Run(b.name, func(t *testing.T) {
			ctx := ctxT(t, 60*time.Second)
			dsn := b.dsn(t)
			direct, err := store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			u, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			p := start(t, u.Host, faultproxy.Options{Protocol: b.proto, DenyTLS: true})
			u.Host = p.Addr()
			proxied, err := store.Open(ctx, u.String())
			if err != nil {
				t.Fatal(err)
			}
			defer proxied.Close()
			if err := direct.SetServerSetting(ctx, "n", "10"); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 5; i++ {
				before := p.Stats().DroppedCommitReplies
				p.DropCommitReplies(1)
				_, err := proxied.IncrServerSetting(ctx, "n", 1)
				if p.Stats().DroppedCommitReplies != before+1 {
					p.DropCommitReplies(0)
					t.Fatalf("the increment's COMMIT reply was not the one dropped (stats %+v; err %v)", p.Stats(), err)
				}
				v, verr := direct.ServerSetting(ctx, "n")
				if verr != nil {
					t.Fatal(verr)
				}
				if want := 11 + i; v != strconv.Itoa(want) {
					t.Fatalf("increment %d with its COMMIT reply dropped: setting %s, want %d (applied once); it returned %v", i, v, want, err)
				}
				if i == 0 {
					t.Logf("the increment returned: %v", err)
				}
				if !errors.Is(err, store.ErrUnknownOutcome) {
					t.Errorf("increment %d with its COMMIT reply dropped returned %v, want store.ErrUnknownOutcome", i, err)
				}
			}
		})
	}
}
