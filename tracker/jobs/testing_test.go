package jobs_test

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// putFails fails every PUT of a blob and counts them.
type putFails struct {
	base http.RoundTripper
	n    atomic.Int64
}

func (p *putFails) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, ".fid") {
		p.n.Add(1)
		return nil, errors.New("refused (test)")
	}
	return p.base.RoundTrip(r)
}

// Issue 9, point 5: under TESTING a failed replication is retried after
// 1 s, not after the 15 s first step of the back-off; T_FAKE_IO_DEV<N>
// overrides a device's utilisation.
func TestTesting_RetryAfterOneSecondAndFakeIO(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("two", 2, store.HashNone)
	c.putFile("k", cls, []byte("retry me"), 1)
	pf := &putFails{base: http.DefaultTransport.(*http.Transport).Clone()}
	o := fastOptions(t)
	o.HTTPClient = &http.Client{Transport: pf}
	o.Testing = true
	o.FakeIOUtil = map[int]string{2: "95.00"}
	m := start(t, c.st, o)
	waitFor(t, 8*time.Second, "a second copy attempt", func() bool { return pf.n.Load() >= 2 })
	if ob := m.Observe(2); !ob.UtilizationOK || ob.Utilization != "95.00" {
		t.Errorf("dev2 utilisation %q (%v); want the fake 95.00", ob.Utilization, ob.UtilizationOK)
	}
	if ob := m.Observe(1); ob.Utilization == "95.00" {
		t.Errorf("dev1 got dev2's fake utilisation")
	}
}
