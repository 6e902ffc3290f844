package leaselock_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore/leaselock"
)

func TestConfig_Params(t *testing.T) {
	var c leaselock.Config
	d := &store.DSN{Params: url.Values{"lock_lease": {"2s"}, "lock_owner": {"h:7001"}, "lock_notify": {"false"}}}
	if err := d.ApplyParams("test", c.Params()...); err != nil {
		t.Fatal(err)
	}
	c = c.WithDefaults()
	if c.Lease != 2*time.Second || c.Reap != time.Second || c.Identity != "h:7001" || !c.NoListen || c.DeadOwnerBound() != 3*time.Second {
		t.Errorf("config = %+v, bound %v; want lease 2s, reap 1s, identity h:7001, no listen, bound 3s", c, c.DeadOwnerBound())
	}
	for k, v := range map[string]string{"lock_lease": "100ms", "lock_reap": "0s", "lock_owner": strings.Repeat("x", 256), "lock_notify": "perhaps", "sslmode": "disable"} {
		d := &store.DSN{Params: url.Values{k: {v}}}
		if err := d.ApplyParams("test", c.Params()...); !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("ApplyParams(%s=%s) = %v; want ErrBadDSN", k, v, err)
		}
	}
}

func TestConfig_DefaultIdentitiesDiffer(t *testing.T) {
	a, b := leaselock.Config{}.WithDefaults(), leaselock.Config{}.WithDefaults()
	if a.Identity == b.Identity || a.Lease != leaselock.DefaultLease {
		t.Errorf("identities %q, %q, lease %v; want two identities and the default lease", a.Identity, b.Identity, a.Lease)
	}
}
