package leaselock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store/sqlstore/leaselock"
)

func TestConfig_SetParam(t *testing.T) {
	var c leaselock.Config
	for k, v := range map[string]string{"lock_lease": "2s", "lock_owner": "h:7001", "lock_notify": "false"} {
		if known, err := c.SetParam(k, v); !known || err != nil {
			t.Fatalf("SetParam(%s, %s) = %v, %v; want known, nil", k, v, known, err)
		}
	}
	c = c.WithDefaults()
	if c.Lease != 2*time.Second || c.Reap != time.Second || c.Identity != "h:7001" || !c.NoListen || c.DeadOwnerBound() != 3*time.Second {
		t.Errorf("config = %+v, bound %v; want lease 2s, reap 1s, identity h:7001, no listen, bound 3s", c, c.DeadOwnerBound())
	}
	for k, v := range map[string]string{"lock_lease": "100ms", "lock_reap": "0s", "lock_owner": strings.Repeat("x", 256), "lock_notify": "perhaps"} {
		if known, err := c.SetParam(k, v); !known || err == nil {
			t.Errorf("SetParam(%s, %s) = %v, %v; want known and an error", k, v, known, err)
		}
	}
	if known, _ := c.SetParam("sslmode", "disable"); known {
		t.Error("SetParam(sslmode) known; want it left to the backend")
	}
}

func TestConfig_DefaultIdentitiesDiffer(t *testing.T) {
	a, b := leaselock.Config{}.WithDefaults(), leaselock.Config{}.WithDefaults()
	if a.Identity == b.Identity || a.Lease != leaselock.DefaultLease {
		t.Errorf("identities %q, %q, lease %v; want two identities and the default lease", a.Identity, b.Identity, a.Lease)
	}
}
