package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gomogile/gomogile/client"
)

// tracker is a line-protocol peer on a real socket: each request line is
// recorded and answered by the test's handler with one reply line.
type tracker struct {
	ln     net.Listener
	handle func(cmd string, line string) string
	mu     sync.Mutex
	lines  []string
	wg     sync.WaitGroup
}

func startTracker(t *testing.T, handle func(cmd, line string) string) *tracker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &tracker{ln: ln, handle: handle}
	var conns []net.Conn
	var cmu sync.Mutex
	tr.wg.Add(1)
	go func() {
		defer tr.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			cmu.Lock()
			conns = append(conns, c)
			cmu.Unlock()
			tr.wg.Add(1)
			go func() {
				defer tr.wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					tr.mu.Lock()
					tr.lines = append(tr.lines, line)
					tr.mu.Unlock()
					cmd, _, _ := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
					if _, err := io.WriteString(c, tr.handle(cmd, line)+"\r\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		cmu.Lock()
		for _, c := range conns {
			c.Close()
		}
		cmu.Unlock()
		tr.wg.Wait()
	})
	return tr
}

func (tr *tracker) Lines() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.lines...)
}

func fixed(m map[string]string) func(cmd, line string) string {
	return func(cmd, line string) string {
		if r, ok := m[cmd]; ok {
			return r
		}
		return "ERR unknown_command Unknown+server+command"
	}
}

// run calls Main.Run the way main does and returns stdout, stderr.
func run(t *testing.T, m *Main, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	if m == nil {
		m = &Main{Getenv: func(string) string { return "" }}
	}
	err := m.Run(t.Context(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestRun_UploadFetch(t *testing.T) {
	var mu sync.Mutex
	blobs := map[string][]byte{}
	storage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.Method {
		case http.MethodPut:
			b, _ := io.ReadAll(r.Body)
			blobs[r.URL.Path] = b
		case http.MethodGet:
			b, ok := blobs[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Write(b)
		}
	}))
	defer storage.Close()
	path := storage.URL + "/dev1/0/000/000/0000000012.fid"
	tr := startTracker(t, fixed(map[string]string{
		"create_open":  "OK fid=12&dev_count=1&devid_1=1&path_1=" + path,
		"create_close": "OK ",
		"get_paths":    "OK paths=1&path1=" + path,
	}))

	file := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(file, []byte("file body"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, nil, "--trackers="+tr.ln.Addr().String(), "upload", "--domain", "d", "--key", "k/1", file)
	if err != nil {
		t.Fatal(err)
	}
	if out != "stored k/1 (9 bytes)\n" {
		t.Fatalf("upload printed %q", out)
	}
	lines := tr.Lines()
	if want := "create_close devid=1&domain=d&fid=12&key=k/1&path=" + path + "&size=9\r\n"; lines[1] != want {
		t.Fatalf("create_close line = %q; want %q", lines[1], want)
	}

	// Upload from stdin, then fetch to stdout and to a file.
	m := &Main{Stdin: strings.NewReader("from stdin"), Getenv: func(k string) string {
		if k == "MOGTOOL_TRACKERS" {
			return tr.ln.Addr().String()
		}
		return ""
	}}
	if _, _, err := run(t, m, "upload", "--key=k2", "--domain=d", "-"); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, m, "fetch", "--domain", "d", "--key", "k2")
	if err != nil || out != "from stdin" {
		t.Fatalf("fetch = %q, %v; want %q", out, err, "from stdin")
	}
	dst := filepath.Join(t.TempDir(), "out")
	if _, _, err := run(t, m, "fetch", "--domain", "d", "--key", "k2", "-o", dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "from stdin" {
		t.Fatalf("fetched file = %q, %v", b, err)
	}
}

func TestRun_AdminCommands(t *testing.T) {
	tr := startTracker(t, fixed(map[string]string{
		"get_domains": "OK domains=1&domain1=testdom&domain1classes=1&domain1class1name=default&domain1class1mindevcount=2" +
			"&domain1class1replpolicy=MultipleHosts%28%29&domain1class1hashtype=NONE",
		"update_class":  "OK ",
		"create_domain": "OK domain=new",
		"set_state":     "OK ",
		"get_hosts":     "OK hosts=1&host1_hostid=1&host1_hostname=hostA&host1_hostip=10.0.0.1&host1_http_port=7500&host1_status=alive",
		"get_devices":   "OK devices=1&dev1_devid=4&dev1_hostid=1&dev1_status=alive&dev1_weight=100&dev1_mb_total=100&dev1_mb_used=40&dev1_mb_free=60&dev1_observed_state=writeable",
		"list_keys":     "OK key_count=2&next_after=a2&key_1=a1&key_2=a2",
	}))
	addr := "--trackers=" + tr.ln.Addr().String()

	out, _, err := run(t, nil, addr, "domain", "list")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "testdom") || !strings.Contains(out, "default") {
		t.Fatalf("domain list = %q", out)
	}
	if _, _, err := run(t, nil, addr, "domain", "add", "new"); err != nil {
		t.Fatal(err)
	}
	// Flags after the positional arguments, as mogadm takes them.
	if _, _, err := run(t, nil, addr, "class", "modify", "testdom", "default", "--hashtype=MD5"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, nil, addr, "device", "mark", "hostA", "4", "drain"); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, nil, addr, "device", "list")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "dev4") || !strings.Contains(out, "hostA") || !strings.Contains(out, "writeable") {
		t.Fatalf("device list = %q", out)
	}
	out, _, err = run(t, nil, addr, "list", "--domain", "d", "--prefix", "a")
	if err != nil || out != "a1\na2\n" {
		t.Fatalf("list = %q, %v", out, err)
	}

	want := map[string]bool{
		"create_domain domain=new\r\n": true,
		// mindevcount kept from get_domains: update_class requires it.
		"update_class class=default&domain=testdom&hashtype=MD5&mindevcount=2\r\n": true,
		"set_state device=4&host=hostA&state=drain\r\n":                            true,
		"list_keys domain=d&limit=1000&prefix=a\r\n":                               true,
	}
	for _, l := range tr.Lines() {
		delete(want, l)
	}
	for l := range want {
		t.Errorf("tracker never got %q", l)
	}
}

func TestRun_Raw(t *testing.T) {
	tr := startTracker(t, func(cmd, line string) string {
		if cmd == "file_debug" {
			return "OK fid_dkey=a+b&devids=1,2&checksum=NONE"
		}
		// cmd_delete on a missing key.
		return "ERR unknown_key unknown_key"
	})
	addr := "--trackers=" + tr.ln.Addr().String()
	out, _, err := run(t, nil, addr, "raw", "file_debug", "domain=my dom", "key=x&y")
	if err != nil {
		t.Fatal(err)
	}
	if want := "checksum=NONE\ndevids=1,2\nfid_dkey=a b\n"; out != want {
		t.Fatalf("raw printed %q; want %q", out, want)
	}
	if want := "file_debug domain=my+dom&key=x%26y\r\n"; tr.Lines()[0] != want {
		t.Fatalf("raw sent %q; want %q", tr.Lines()[0], want)
	}

	_, _, err = run(t, nil, addr, "raw", "delete", "domain=d", "key=k")
	if !errors.Is(err, client.ErrUnknownKey) {
		t.Fatalf("raw delete error = %v; want ErrUnknownKey", err)
	}
	var errb bytes.Buffer
	if code := exitCode(err, &errb); code != 1 || !strings.Contains(errb.String(), "unknown_key") {
		t.Fatalf("exitCode = %d, stderr %q; want 1 mentioning unknown_key", code, errb.String())
	}
}

func TestRun_UsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nosuch"},
		{"--nosuchflag", "list"},
		{"upload", "--domain", "d"},            // no key, no file
		{"upload", "--key", "k", "a", "b"},     // two files
		{"delete", "--domain", "d"},            // no key
		{"device", "mark", "hostA", "x", "up"}, // devid not a number
		{"class", "frobnicate"},
		{"raw"},
		{"raw", "noop", "novalue"},
		{"list", "--limit", "many"},
		{"drain"},                 // no devid
		{"drain", "dev1"},         // devid not a number
		{"drain", "--watch", "1"}, // nothing to watch without --move
		{"drain", "--move", "--interval=0", "1"},
		{"rebalance"},
		{"rebalance", "frob"},
		{"rebalance", "policy"},
		{"rebalance", "policy", "set"}, // no policy
		{"rebalance", "policy", "--options"},
		{"rebalance", "policy", "--verbose"},
		{"rebalance", "stop", "now"},
		{"rebalance", "status", "--watch", "--interval=-1s"},
		{"fsck", "status", "--watch", "--interval=0"},
		{"fsck", "taillog", "--interval=0"},
		{"fsck", "printlog", "extra"},
	} {
		_, _, err := run(t, nil, append([]string{"--trackers=127.0.0.1:1"}, args...)...)
		var u *usageError
		if !errors.As(err, &u) {
			t.Errorf("Run(%q) error = %v; want a usage error", args, err)
			continue
		}
		if code := exitCode(err, io.Discard); code != 2 {
			t.Errorf("Run(%q) exit code %d; want 2", args, code)
		}
	}
	if _, _, err := run(t, nil, "upload", "-h"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("upload -h error = %v; want flag.ErrHelp", err)
	}
	out, _, err := run(t, nil, "help")
	if err != nil || !strings.Contains(out, "replicate-now") {
		t.Errorf("help = %q, %v", out, err)
	}
}

func TestTrackerList(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "MOGTOOL_TRACKERS" {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct{ flag, env, want string }{
		{"", "", DefaultTrackers},
		{"", "t1:7001,t2:7001", "t1:7001,t2:7001"},
		{"t3:7001", "t1:7001", "t3:7001"},
	} {
		if got := trackerList(c.flag, env(c.env)); got != c.want {
			t.Errorf("trackerList(%q, env %q) = %q; want %q", c.flag, c.env, got, c.want)
		}
	}
}

func TestRun_FlagBeatsEnv(t *testing.T) {
	tr := startTracker(t, fixed(map[string]string{"noop": "OK "}))
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	m := &Main{Getenv: func(string) string { return deadAddr }}
	if out, _, err := run(t, m, "--trackers="+tr.ln.Addr().String(), "raw", "noop"); err != nil || out != "OK\n" {
		t.Fatalf("raw noop = %q, %v; want OK", out, err)
	}
	if _, _, err := run(t, m, "raw", "noop"); !errors.Is(err, client.ErrNoTracker) || !strings.Contains(err.Error(), deadAddr) {
		t.Fatalf("with only the env tracker: %v; want ErrNoTracker naming %s", err, deadAddr)
	}
}

func TestRun_HostFsckSettings(t *testing.T) {
	tr := startTracker(t, fixed(map[string]string{
		// cmd_create_host replies through cmd_clear_cache.
		"create_host": "OK hostid=7&hostname=hostC",
		// cmd_fsck_status and cmd_server_settings.
		"fsck_status":     "OK running=0&host=&max_fid_checked=50&policy_only=1&end_fid=80&start_time=1700000000&stop_time=1700000090&current_time=1700000100&max_logid=3&num_MISS=4",
		"server_settings": "OK key_count=2&key_1=schema_version&value_1=17&key_2=memcache_ttl&value_2=60",
	}))
	addr := "--trackers=" + tr.ln.Addr().String()
	out, _, err := run(t, nil, addr, "host", "add", "hostC", "--ip=10.0.0.3")
	if err != nil || out != "host hostC has id 7\n" {
		t.Fatalf("host add = %q, %v", out, err)
	}
	// mogstored's port is filled in; the tracker needs one.
	if want := "create_host host=hostC&ip=10.0.0.3&port=7500\r\n"; tr.Lines()[0] != want {
		t.Fatalf("host add sent %q; want %q", tr.Lines()[0], want)
	}
	out, _, err = run(t, nil, addr, "fsck", "status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"running:", "no", "50 of 80", "elapsed:", "1m30s", "MISS:", "4", "policy only:", "true"} {
		if !strings.Contains(out, want) {
			t.Errorf("fsck status output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = run(t, nil, addr, "settings", "list")
	if err != nil {
		t.Fatal(err)
	}
	if want := "memcache_ttl    60\nschema_version  17\n"; out != want {
		t.Fatalf("settings list = %q; want %q", out, want)
	}
}
