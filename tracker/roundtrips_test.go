package tracker_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/faultproxy"
	"github.com/gomogile/gomogile/tracker"
)

// Round trips to the database per protocol command, counted on the wire
// by a proxy between the tracker's Store and the server (statements only:
// the counts do not depend on timing). Each is the least of a few runs, so
// that the Store's background work (PostgreSQL's lock renewal) cannot add
// to it.
var wantRoundTrips = map[string]map[string]int64{
	"create_open": {"mysql": 1, "postgres": 1}, // CreateTempFile: the fid and the INSERT at once; skip_mkcol is cached
	// CommitFile's transaction alone: the tempfile row is what this
	// tracker's create_open wrote (query/opened.go), so it is not read back.
	// PostgreSQL: BEGIN, DELETE tempfile, INSERT file (with its devcount,
	// unless the key has an owner), INSERT file_on, the replicate queue
	// (its nexttry on the server's clock), COMMIT. MySQL
	// (sqlstore.RowChainer): BEGIN, the DELETE and the INSERT in one
	// query, the rest with the COMMIT in a second.
	"create_close": {"mysql": 2, "postgres": 6},
	"get_paths":    {"mysql": 1, "postgres": 1}, // FileByKeyOn: the file and its devices at once
}

func TestCommands_RoundTrips(t *testing.T) {
	for _, backend := range []string{"mysql", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			p, dsn, err := faultproxy.Through(backends[backend](t), faultproxy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			tt := startTracker(t, testConfig(), openStore(t, dsn), nil)
			n := startNode(t, "127.0.0.2", 1)
			c := tt.dial()
			c.want("create_domain domain=d", "OK domain=d")
			c.want(fmt.Sprintf("create_host host=h1&ip=%s&port=%s&status=alive", n.ip, n.port), "OK hostid=1&hostname=h1")
			c.want("create_device devid=1&hostid=1", "OK ")
			got := map[string]int64{}
			count := func(cmd string, f func()) {
				before := p.Stats().RoundTrips
				f()
				rt := p.Stats().RoundTrips - before
				if old, ok := got[cmd]; !ok || rt < old {
					got[cmd] = rt
				}
			}
			for i := range 5 {
				key := "k" + strconv.Itoa(i)
				var r map[string][]string
				count("create_open", func() { r = parseOK(t, c.do("create_open domain=d&key="+key)) })
				path := r["path"][0]
				put(t, path, []byte("hello"))
				closeLine := fmt.Sprintf("create_close domain=d&key=%s&fid=%s&devid=%s&path=%s&size=5",
					key, r["fid"][0], r["devid"][0], tracker.Escape(path))
				count("create_close", func() { c.want(closeLine, "OK ") })
				count("get_paths", func() { parseOK(t, c.do("get_paths domain=d&key="+key+"&noverify=1")) })
			}
			for cmd, want := range wantRoundTrips {
				want := want[backend]
				if got[cmd] > want {
					t.Errorf("%s: %d round trips; want at most %d", cmd, got[cmd], want)
				}
				t.Logf("%s: %d round trips", cmd, got[cmd])
			}
		})
	}
}

// A create_close through another tracker than the create_open's reads the
// tempfile row (the first tracker's memory of it is its own): the upload
// commits, and a device the row does not offer is still refused.
func TestCreateClose_OtherTracker(t *testing.T) {
	st := openStore(t, testDSN(t))
	a := startTracker(t, testConfig(), st, nil)
	b := startTracker(t, testConfig(), st, nil)
	n := startNode(t, "127.0.0.2", 1, 2)
	ca, cb := a.dial(), b.dial()
	ca.want("create_domain domain=d", "OK domain=d")
	ca.want(fmt.Sprintf("create_host host=h1&ip=%s&port=%s&status=alive", n.ip, n.port), "OK hostid=1&hostname=h1")
	ca.want("create_device devid=1&hostid=1", "OK ")
	ca.want("create_device devid=2&hostid=1", "OK ")
	for i, offered := range []bool{true, false} {
		key := "k" + strconv.Itoa(i)
		r := parseOK(t, ca.do("create_open domain=d&key="+key))
		devid := r["devid"][0]
		if !offered {
			// The other device, and its path: only the row says it was
			// not offered.
			devid = map[string]string{"1": "2", "2": "1"}[devid]
		}
		path := strings.Replace(r["path"][0], "/dev"+r["devid"][0]+"/", "/dev"+devid+"/", 1)
		put(t, path, []byte("hello"))
		got := cb.do(fmt.Sprintf("create_close domain=d&key=%s&fid=%s&devid=%s&path=%s&size=5",
			key, r["fid"][0], devid, tracker.Escape(path)))
		switch {
		case !offered:
			if !strings.HasPrefix(got, "ERR invalid_destdev ") {
				t.Errorf("create_close on another tracker with a device not offered: %s; want invalid_destdev", got)
			}
		default:
			if got != "OK " {
				t.Errorf("create_close on another tracker: %s", got)
			}
			parseOK(t, cb.do("get_paths domain=d&key="+key+"&noverify=1"))
		}
	}
}
