package tracker_test

// The hostile-client suite (issue 10): each test repeats an attack a client
// on the same network made against a running tracker and storage node, and
// checks the cluster neither stopped, nor ran out of memory, nor obeyed.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker"
)

// hostileCluster is a tracker on dsn with one storage node (device 1 on
// 127.0.0.2), domain d and class one (mindevcount 1).
func hostileCluster(t *testing.T, dsn string, cfg tracker.Config) *cluster {
	t.Helper()
	tt := startTracker(t, cfg, openStore(t, dsn), nil)
	cl := &cluster{testTracker: tt, nodes: map[int]*node{}}
	n := startNode(t, "127.0.0.2", 1)
	cl.nodes[1] = n
	c := tt.dial()
	c.want("create_host host=h1&ip="+n.ip+"&port="+n.port+"&status=alive", "OK hostid=1&hostname=h1")
	c.want("create_device devid=1&hostid=1", "OK ")
	c.want("create_domain domain=d", "OK domain=d")
	c.want("create_class domain=d&class=one&mindevcount=1", "OK class=one&mindevcount=1&domain=d")
	return cl
}

// upload stores body under key through the protocol and returns its fid.
func (cl *cluster) upload(t *testing.T, c *lineConn, key string, body []byte) int64 {
	t.Helper()
	r := parseOK(t, c.do("create_open domain=d&class=one&key="+esc(key)))
	fid := mustInt(t, r.Get("fid"))
	put(t, r.Get("path"), body)
	c.want(fmt.Sprintf("create_close domain=d&key=%s&fid=%d&devid=%s&path=%s&size=%d", esc(key), fid, r.Get("devid"), esc(r.Get("path")), len(body)), "OK ")
	return fid
}

// Attack 1: a client-named fid at MaxInt64 raised the fid counter to where
// every later allocation failed, on every backend, for good.
func TestHostile_HugeFidCannotStopUploads(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		cl := hostileCluster(t, dsn, testConfig())
		c := cl.dial()
		for _, fid := range []string{
			"9223372036854775807",  // MaxInt64
			"9223372036854775808",  // overflows int64
			"99999999999999999999", // overflows, once parsed as 0 (allocate)
			strconv.FormatInt(store.MaxNamedFid+1, 10),
		} {
			got := c.do("create_open domain=d&class=one&key=evil&fid=" + fid)
			want := "ERR bad_params " + esc(fmt.Sprintf("fid must be between 1 and %d", store.MaxNamedFid))
			if got != want {
				t.Errorf("create_open fid=%s:\n got %s\nwant %s", fid, got, want)
			}
		}
		// The bound itself is accepted, and raises the counter to it...
		r := parseOK(t, c.do(fmt.Sprintf("create_open domain=d&class=one&key=max&fid=%d", store.MaxNamedFid)))
		if got := mustInt(t, r.Get("fid")); got != store.MaxNamedFid {
			t.Fatalf("create_open fid=MaxNamedFid gave fid %d", got)
		}
		// ...and the next ordinary upload still succeeds, above it.
		fid := cl.upload(t, c, "after", []byte("still works"))
		if fid <= store.MaxNamedFid {
			t.Errorf("ordinary upload after the bound got fid %d; want above %d", fid, store.MaxNamedFid)
		}
		// The store refuses a named fid above the bound whoever calls it.
		doms, err := cl.st.Domains(t.Context())
		if err != nil || len(doms) != 1 {
			t.Fatalf("domains %v, %v", doms, err)
		}
		_, err = cl.st.CreateTempFile(t.Context(), store.TempFile{Fid: store.MaxNamedFid + 1, DomainID: doms[0].ID, Key: "direct"})
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateTempFile(fid MaxNamedFid+1): %v; want ErrInvalid", err)
		}
	})
}

// Attack 6: an overflowing weight was parsed as 0 and silently set, and
// store error texts reached clients.
func TestHostile_OverflowingNumbersRefused(t *testing.T) {
	cl := hostileCluster(t, testDSN(t), testConfig())
	c := cl.dial()
	for _, w := range []string{"99999999999999999999", "9223372036854775807", "8388608"} {
		c.want("set_weight host=h1&device=1&weight="+w, "ERR bad_params Invalid+parameters+to+command%3B+please+see+documentation")
	}
	devs, err := cl.st.Devices(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 || devs[0].Weight != 100 {
		t.Errorf("after refused set_weight, devices %+v; want weight 100 unchanged", devs)
	}
	c.want("set_weight host=h1&device=1&weight=8388607", "OK ")

	// A name the store refuses: the reply carries no store text.
	long := strings.Repeat("x", 300)
	for _, line := range []string{"create_domain domain=" + long, "create_class domain=d&class=" + long + "&mindevcount=1"} {
		got := c.do(line)
		if strings.Contains(got, "store") || strings.Contains(got, "xxxx") || !strings.HasPrefix(got, "ERR ") {
			t.Errorf("%.40s...: reply %q echoes internal text", line, got)
		}
	}
}
