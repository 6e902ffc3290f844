package tracker_test

// Access control (issue 21): admin_networks guards every command that
// changes the cluster's shape or its files' placement, client_networks an
// application's commands, and each command of the table has a category.

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker"
)

// A command added to the table without a category fails here.
func TestCommandTable_EveryCommandHasACategory(t *testing.T) {
	cats := tracker.CommandCategories()
	if len(cats) == 0 {
		t.Fatal("no commands")
	}
	for name, cat := range cats {
		if cat != "client" && cat != "admin" {
			t.Errorf("%s: category %q; every command needs client or admin", name, cat)
		}
	}
}

// The package doc and the README's Security table name each command's
// category as the table decides it.
func TestCommandTable_Documented(t *testing.T) {
	want := map[string][]string{}
	for name, cat := range tracker.CommandCategories() {
		want[cat] = append(want[cat], name)
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for cat, names := range want {
		slices.Sort(names)
		// doc.go: a paragraph "// Admin commands ...: a, b, ..." up to a blank "//".
		head := "// " + strings.ToUpper(cat[:1]) + cat[1:] + " commands"
		para := paragraph(string(doc), head)
		if para == "" {
			t.Errorf("doc.go: no paragraph starting %q", head)
		}
		_, list, _ := strings.Cut(para, ":")
		if got := knownCommands(list, `[a-z_]+`); !slices.Equal(got, names) {
			t.Errorf("doc.go %q lists\n%v\nwant\n%v", head, got, names)
		}
		// README: the row of the key, commands in backticks.
		key := map[string]string{"admin": "admin_networks", "client": "client_networks"}[cat]
		row := ""
		for _, l := range strings.Split(string(readme), "\n") {
			if strings.HasPrefix(l, "| `"+key+"` |") {
				row = l
			}
		}
		if row == "" {
			t.Errorf("README: no Security table row for %s", key)
		}
		if got := knownCommands(row, "`[a-z_]+`"); !slices.Equal(got, names) {
			t.Errorf("README %s row lists\n%v\nwant\n%v", key, got, names)
		}
	}
}

// paragraph returns the comment lines of text from the one starting with
// head up to the next blank comment line, joined.
func paragraph(text, head string) string {
	var out []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, head) {
			in = true
		}
		if in {
			if strings.TrimSpace(l) == "//" || !strings.HasPrefix(l, "//") {
				break
			}
			out = append(out, strings.TrimPrefix(l, "//"))
		}
	}
	return strings.Join(out, " ")
}

// knownCommands returns the distinct matches of pattern in s that name a
// command (backticks trimmed), sorted.
func knownCommands(s, pattern string) []string {
	cats := tracker.CommandCategories()
	var out []string
	for _, m := range regexp.MustCompile(pattern).FindAllString(s, -1) {
		if m = strings.Trim(m, "`"); cats[m] != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// accessCluster is a tracker whose admin_networks and client_networks
// the test chooses, with one storage node (127.0.0.2, devices 1 and 2 on
// host h1), a spare host h2 without devices, domain d with classes one
// and spare, an empty domain spare, a file k in class one, a replication
// of it queued for an hour from now, an fsck log entry, fsck progress and
// a rebalance policy: something for every admin command to change.
type accessCluster struct {
	*testTracker
	log   *syncBuffer
	reg   *prometheus.Registry
	admin *lineConn // from 127.0.0.1
	fid   int64     // of k
}

func startAccessCluster(t *testing.T, adminNets, clientNets string) *accessCluster {
	t.Helper()
	cfg := testConfig()
	var err error
	if cfg.AdminNetworks, err = tracker.ParseNetworks(adminNets); err != nil {
		t.Fatal(err)
	}
	if cfg.ClientNetworks, err = tracker.ParseNetworks(clientNets); err != nil {
		t.Fatal(err)
	}
	ac := &accessCluster{log: &syncBuffer{}, reg: tracker.NewRegistry()}
	ac.testTracker = startTracker(t, cfg, nil, &tracker.Options{Logger: slog.New(slog.NewTextHandler(ac.log, nil)), Registry: ac.reg})
	n := startNode(t, "127.0.0.2", 1, 2)
	ac.admin = connFrom(t, "127.0.0.1", ac.addr)
	for _, l := range []string{
		"create_host host=h1&ip=127.0.0.2&port=" + n.port + "&status=alive",
		"create_host host=h2&ip=127.0.0.8&port=7500&status=alive",
		"create_device devid=1&hostid=1",
		"create_device devid=2&hostid=1",
		"create_domain domain=d",
		"create_domain domain=spare",
		"create_class domain=d&class=one&mindevcount=1",
		"create_class domain=d&class=spare&mindevcount=1",
		"rebalance_set_policy policy=" + esc("from_devices=1 to_devices=2"),
	} {
		if got := ac.admin.do(l); !strings.HasPrefix(got, "OK ") {
			t.Fatalf("setup: %s: %s", l, got)
		}
	}
	ac.fid = ac.upload(t, ac.admin, "k")
	ctx := t.Context()
	if err := ac.st.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: ac.fid, After: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := ac.st.AppendFsckLog(ctx, store.FsckEvent{Fid: ac.fid, Code: "NOPA"}); err != nil {
		t.Fatal(err)
	}
	if err := ac.st.SetServerSetting(ctx, "fsck_highest_fid_checked", "1"); err != nil {
		t.Fatal(err)
	}
	return ac
}

// upload stores a small body under key in class one through c.
func (ac *accessCluster) upload(t *testing.T, c *lineConn, key string) int64 {
	t.Helper()
	r := parseOK(t, c.do("create_open domain=d&class=one&key="+esc(key)))
	fid := mustInt(t, r.Get("fid"))
	put(t, r.Get("path"), []byte("a file"))
	c.want(fmt.Sprintf("create_close domain=d&key=%s&fid=%d&devid=%s&path=%s&size=6", esc(key), fid, r.Get("devid"), esc(r.Get("path"))), "OK ")
	return fid
}

// state reads back everything a command could change: the namespace,
// device states and weights, settings (fsck and rebalance progress and
// policy included), the queues, the fsck log, files, copies and tempfiles.
func (ac *accessCluster) state(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	var b strings.Builder
	add := func(what string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("read back %s: %v", what, err)
		}
		fmt.Fprintf(&b, "%s: %+v\n", what, v)
	}
	doms, err := ac.st.Domains(ctx)
	add("domains", doms, err)
	classes, err := ac.st.Classes(ctx)
	add("classes", classes, err)
	hosts, err := ac.st.Hosts(ctx)
	add("hosts", hosts, err)
	devs, err := ac.st.Devices(ctx)
	add("devices", devs, err)
	settings, err := ac.st.ServerSettings(ctx)
	add("settings", settings, err) // fmt prints a map sorted by key
	for _, q := range []store.Queue{store.QueueReplicate, store.QueueDelete, store.QueueFsck, store.QueueRebalance} {
		n, err := ac.st.QueueLength(ctx, q)
		add(q.String()+" queue length", n, err)
	}
	item, err := ac.st.QueueItem(ctx, store.QueueReplicate, ac.fid)
	add("replication of k", item, err)
	evs, err := ac.st.FsckEvents(ctx, 0, 1000)
	add("fsck log", evs, err)
	files, err := ac.st.Files(ctx, 0, store.MaxNamedFid, 1000)
	add("files", files, err)
	for _, f := range files {
		on, err := ac.st.FileOn(ctx, f.Fid)
		add(fmt.Sprintf("copies of %d", f.Fid), on, err)
	}
	tmp, err := ac.st.ExpiredTempFiles(ctx, 0, 1000)
	add("tempfiles", tmp, err)
	return b.String()
}

// unchanged checks that the cluster's state is still before.
func (ac *accessCluster) unchanged(t *testing.T, before string) {
	t.Helper()
	if after := ac.state(t); after != before {
		t.Errorf("refused commands changed the cluster:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// metric is the value of a counter of the tracker's registry.
func (ac *accessCluster) metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := ac.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	mfs := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		mfs[f.GetName()] = f
	}
	return sum(mfs, name, labels)
}

// connFrom is a protocol connection from the local address local.
func connFrom(t *testing.T, local, addr string) *lineConn {
	nc := dialFrom(t, local, addr)
	return &lineConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// withCallid adds a callid argument to a request line.
func withCallid(line, callid string) string {
	if strings.Contains(line, " ") {
		return line + "&callid=" + callid
	}
	return line + " callid=" + callid
}

// refusesAll sends each line, with a callid, through c (a peer at from)
// and checks that it is refused as a command of category cat, naming the
// configuration keys that shut the peer out, with the callid echoed.
func refusesAll(t *testing.T, c *lineConn, lines []string, cat, from, keys string) {
	t.Helper()
	for i, line := range lines {
		cmd, _, _ := strings.Cut(line, " ")
		callid := fmt.Sprint(cat, i)
		want := "ERR access_denied " + esc(fmt.Sprintf("%s: %s commands are not allowed from %s (%s)", cmd, cat, from, keys)) + " " + callid
		if got := c.do(withCallid(line, callid)); got != want {
			t.Errorf("%s from %s:\n got %s\nwant %s", line, from, got, want)
		}
	}
}

// shapeLines send every admin command, each as it would do harm from
// outside (the reported attack: every device set dead). In this order
// each one succeeds from admin_networks on an accessCluster.
var shapeLines = []string{
	"create_domain domain=evil",
	"delete_domain domain=spare",
	"create_class domain=d&class=evil&mindevcount=1",
	"update_class domain=d&class=one&mindevcount=5",
	"delete_class domain=d&class=spare",
	"create_host host=evil&ip=127.0.0.9&port=7500",
	"delete_host host=h2",
	"create_device devid=9&hostid=1",
	"set_weight host=h1&device=1&weight=0",
	"set_server_setting key=skip_devcount&value=1",
	"replicate_now",
	"fsck_reset",
	"fsck_clearlog",
	"fsck_start",
	"fsck_stop",
	"rebalance_set_policy policy=" + esc("from_devices=2 to_devices=1"),
	"rebalance_reset",
	"rebalance_start",
	"rebalance_stop",
	"clear_cache",
	"do_monitor_round",
	"sleep duration=0.5", // Perl's sleep(0.5) returns at once
	"update_host host=h1&status=down",
	"set_state host=h1&device=1&state=dead",
	"set_state host=h1&device=2&state=dead",
}

// appLines send every client command, about file k of an
// accessCluster; delete comes last.
var appLines = []string{
	"create_open domain=d&class=one&key=new",
	"create_close domain=d&key=new&fid=999&devid=1&path=" + esc("http://127.0.0.2:1/dev1/0/000/000/0000000999.fid") + "&size=1",
	"get_paths domain=d&key=k",
	"file_info domain=d&key=k",
	"file_debug domain=d&key=k",
	"list_keys domain=d",
	"list_fids from=1&to=100",
	"updateclass domain=d&key=k&class=spare",
	"get_domains",
	"get_hosts",
	"get_devices",
	"server_setting key=rebal_policy",
	"server_settings",
	"fsck_status",
	"fsck_getlog",
	"rebalance_status",
	"rebalance_test",
	"noop",
	"test",
	"rename domain=d&from_key=k&to_key=k2",
	"delete domain=d&key=k2",
}

// shapeLines and appLines send every command of its category, so a new
// command gets its access tested.
func TestAccess_LinesCoverEveryCommand(t *testing.T) {
	sent := map[string]string{}
	for cat, lines := range map[string][]string{"admin": shapeLines, "client": appLines} {
		for _, l := range lines {
			cmd, _, _ := strings.Cut(l, " ")
			sent[cmd] = cat
		}
	}
	for cmd, cat := range tracker.CommandCategories() {
		if sent[cmd] != cat {
			t.Errorf("%s (%s): not among the access tests' %s lines", cmd, cat, cat)
		}
	}
}

// allowsAll sends each line through c (a peer at from) and checks that
// none is refused; whether it succeeds depends on the lines before it.
func allowsAll(t *testing.T, c *lineConn, lines []string, from string) {
	t.Helper()
	for _, line := range lines {
		if got := c.do(line); strings.HasPrefix(got, "ERR access_denied") {
			t.Errorf("%s from %s: %s", line, from, got)
		}
	}
}

// wasRefused checks that the log has a warning naming the refused
// command and the peer.
func (ac *accessCluster) wasRefused(t *testing.T, cmd, from string) {
	t.Helper()
	for _, l := range strings.Split(ac.log.String(), "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "command refused") &&
			strings.Contains(l, " cmd="+cmd+" ") && strings.Contains(l, " remote="+from+":") {
			return
		}
	}
	t.Errorf("no warning logged for %s from %s:\n%s", cmd, from, ac.log.String())
}

// From outside admin_networks, with every security setting on, set_state
// state=dead on each device, create_domain, set_weight and the rest were
// accepted (issue 21). Every admin command is refused there and changes
// nothing; the same peer's application commands work while
// client_networks is empty; from admin_networks everything works.
func TestAccess_AdminCommandsOnlyFromAdminNetworks(t *testing.T) {
	ac := startAccessCluster(t, "127.0.0.1/32", "")
	before := ac.state(t)
	outsider := connFrom(t, "127.0.0.3", ac.addr)
	refusesAll(t, outsider, shapeLines, "admin", "127.0.0.3", "admin_networks")
	ac.unchanged(t, before)
	for _, cmd := range []string{"set_state", "create_domain", "set_weight"} {
		ac.wasRefused(t, cmd, "127.0.0.3")
	}
	if got := ac.metric(t, "gomogile_requests_total", map[string]string{"cmd": "set_state", "result": "error"}); got != 2 {
		t.Errorf("gomogile_requests_total{cmd=set_state,result=error} = %v; want 2, one per refusal", got)
	}

	// The "!" commands too, in their own reply shape.
	if got := outsider.admin("!version"); len(got) != 1 || got[0] != "ERROR: access denied: !version is not allowed from 127.0.0.3 (admin_networks)" {
		t.Errorf("!version from outside admin_networks: %q", got)
	}

	// client_networks is empty: the outsider is a client like any other.
	allowsAll(t, outsider, appLines, "127.0.0.3")
	ac.upload(t, outsider, "from-outside")

	// From admin_networks every admin command does what it says.
	for _, line := range shapeLines {
		if got := ac.admin.do(line); !strings.HasPrefix(got, "OK ") {
			t.Errorf("%s from admin_networks: %s", line, got)
		}
	}
	devs, err := ac.st.Devices(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.ID <= 2 && d.Status != store.DeviceDead {
			t.Errorf("device %d after set_state dead from admin_networks: %s", d.ID, d.Status)
		}
	}
}

// client_networks bounds an application's commands: a peer outside it
// (and outside admin_networks) is refused every one and changes nothing; a
// peer inside it may use them but not the admin commands; admin_networks
// may use everything.
func TestAccess_ClientNetworks(t *testing.T) {
	ac := startAccessCluster(t, "127.0.0.1/32", "127.0.0.4/32")
	before := ac.state(t)
	outsider := connFrom(t, "127.0.0.3", ac.addr)
	refusesAll(t, outsider, appLines, "client", "127.0.0.3", "client_networks, admin_networks")
	refusesAll(t, outsider, shapeLines, "admin", "127.0.0.3", "admin_networks")
	ac.unchanged(t, before)
	ac.wasRefused(t, "delete", "127.0.0.3")
	if got := ac.metric(t, "gomogile_requests_total", map[string]string{"cmd": "delete", "result": "error"}); got != 1 {
		t.Errorf("gomogile_requests_total{cmd=delete,result=error} = %v; want 1", got)
	}

	// Inside client_networks: the application's commands, not the admin ones.
	app := connFrom(t, "127.0.0.4", ac.addr)
	if got := app.do("get_paths domain=d&key=k"); !strings.HasPrefix(got, "OK paths=1&path1=http") {
		t.Errorf("get_paths from client_networks: %s", got)
	}
	allowsAll(t, app, appLines, "127.0.0.4")
	for _, key := range []string{"k", "k2"} {
		if _, err := ac.st.FileByKey(t.Context(), 1, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s after rename and delete from client_networks: %v; want ErrNotFound", key, err)
		}
	}
	ac.upload(t, app, "from-app")
	refusesAll(t, app, shapeLines, "admin", "127.0.0.4", "admin_networks")
	if got := app.admin("!version"); len(got) != 1 || !strings.HasPrefix(got[0], "ERROR: access denied: !version") {
		t.Errorf("!version from client_networks: %q", got)
	}

	// admin_networks is allowed everything, client commands included.
	ac.upload(t, ac.admin, "from-admin")
	allowsAll(t, ac.admin, appLines, "127.0.0.1")
	ac.admin.want("set_weight host=h1&device=1&weight=7", "OK ")
}

// With client_networks set and admin_networks empty, the admin commands
// follow client_networks: setting client_networks alone never leaves them
// open to the peers it shuts out.
func TestAccess_ClientNetworksAloneBoundsAdminCommands(t *testing.T) {
	ac := startAccessCluster(t, "", "127.0.0.1/32, 127.0.0.4/32")
	before := ac.state(t)
	outsider := connFrom(t, "127.0.0.3", ac.addr)
	refusesAll(t, outsider, shapeLines, "admin", "127.0.0.3", "client_networks")
	refusesAll(t, outsider, appLines, "client", "127.0.0.3", "client_networks")
	if got := outsider.admin("!version"); len(got) != 1 || got[0] != "ERROR: access denied: !version is not allowed from 127.0.0.3 (client_networks)" {
		t.Errorf("!version from outside client_networks: %q", got)
	}
	ac.unchanged(t, before)
	app := connFrom(t, "127.0.0.4", ac.addr)
	app.want("set_weight host=h1&device=1&weight=7", "OK ")
	if got := app.admin("!version"); len(got) != 1 || got[0] != tracker.Version {
		t.Errorf("!version from client_networks with admin_networks empty: %q", got)
	}
}
