package tracker_test

// Reply formats derived from Query.pm's cmd_create_open, cmd_create_close,
// cmd_get_paths, cmd_file_info, cmd_file_debug, cmd_list_keys,
// cmd_list_fids, cmd_rename, cmd_delete and cmd_updateclass (source-derived,
// not recorded from a Perl tracker).

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker"
	model "github.com/gomogile/gomogile/tracker/internal/cluster"
)

type cluster struct {
	*testTracker
	nodes map[int]*node // by devid
}

// startCluster runs a tracker and one storage node per device, each on its
// own loopback IP (127.0.0.2, 127.0.0.3, …), registered through the
// protocol.
func startCluster(t *testing.T, cfg tracker.Config, ndev int) *cluster {
	tt := startTracker(t, cfg, nil, nil)
	c := tt.dial()
	cl := &cluster{testTracker: tt, nodes: map[int]*node{}}
	for i := 1; i <= ndev; i++ {
		n := startNode(t, fmt.Sprintf("127.0.0.%d", i+1), i)
		cl.nodes[i] = n
		c.want(fmt.Sprintf("create_host host=h%d&ip=%s&port=%s&status=alive", i, n.ip, n.port), fmt.Sprintf("OK hostid=%d&hostname=h%d", i, i))
		c.want(fmt.Sprintf("create_device devid=%d&hostid=%d", i, i), "OK ")
	}
	return cl
}

func (cl *cluster) devURL(devid int, fid int64) string {
	n := cl.nodes[devid]
	return "http://" + n.ip + ":" + n.port + model.FidPath(devid, fid)
}

func put(t *testing.T, u string, body []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT %s: %v", u, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT %s: %s", u, resp.Status)
	}
}

func parseOK(t *testing.T, line string) url.Values {
	t.Helper()
	if !strings.HasPrefix(line, "OK ") {
		t.Fatalf("want OK, got %q", line)
	}
	v, err := url.ParseQuery(strings.TrimPrefix(line, "OK "))
	if err != nil {
		t.Fatalf("parse %q: %v", line, err)
	}
	return v
}

func TestCommands_FileLifecycle(t *testing.T) {
	cl := startCluster(t, testConfig(), 2)
	c := cl.dial()
	ctx := t.Context()
	c.want("create_domain domain=d", "OK domain=d")
	c.want("create_class domain=d&class=one&mindevcount=1", "OK class=one&mindevcount=1&domain=d")
	c.want("create_class domain=d&class=sum&mindevcount=1&hashtype=MD5", "OK class=sum&mindevcount=1&domain=d")

	c.want("create_open key=k", "ERR no_domain No+domain+provided")
	c.want("create_open domain=zz&key=k", "ERR unreg_domain Domain+name+invalid/not+found")
	c.want("create_open domain=d&key=k&class=nope", "ERR unreg_class unreg_class")

	// cmd_create_open: fid, devid, path.
	r := parseOK(t, c.do("create_open domain=d&key=k1&class=one"))
	fid, _ := strconv.ParseInt(r.Get("fid"), 10, 64)
	devid, _ := strconv.Atoi(r.Get("devid"))
	if fid <= 0 || (devid != 1 && devid != 2) {
		t.Fatalf("create_open reply %v", r)
	}
	path := cl.devURL(devid, fid)
	wantOpen := fmt.Sprintf("OK fid=%d&devid=%d&path=%s", fid, devid, path)
	if got := fmt.Sprintf("OK fid=%s&devid=%s&path=%s", r.Get("fid"), r.Get("devid"), r.Get("path")); got != wantOpen {
		t.Errorf("create_open: got %s; want %s", got, wantOpen)
	}
	// MKCOL made the directories the PUT needs.
	dir := cl.nodes[devid].blobPath(devid, fid)
	if _, err := os.Stat(dir[:strings.LastIndex(dir, "/")]); err != nil {
		t.Errorf("MKCOL did not create the fid directory: %v", err)
	}
	body := []byte("hello, tracker")
	put(t, path, body)

	closeLine := func(extra string) string {
		return fmt.Sprintf("create_close domain=d&key=k1&fid=%d&devid=%d&path=%s%s", fid, devid, tracker.Escape(path), extra)
	}
	c.want(fmt.Sprintf("create_close domain=d&key=k1&devid=%d&path=x", devid), "ERR no_fid no_fid")
	c.want(fmt.Sprintf("create_close domain=d&key=k1&fid=%d&path=x", fid), "ERR no_devid no_devid")
	c.want(fmt.Sprintf("create_close domain=d&key=k1&fid=%d&devid=%d", fid, devid), "ERR no_path no_path")
	c.want(fmt.Sprintf("create_close domain=d&key=k1&fid=%d&devid=%d&path=http://elsewhere/x", fid, devid), "ERR bogus_args bogus_args")
	c.want(closeLine("&checksum=MD5:zz"), "ERR invalid_checksum_format invalid_checksum_format")
	c.want(fmt.Sprintf("create_close domain=d&key=k1&fid=999&devid=%d&path=%s", devid, tracker.Escape(cl.devURL(devid, 999))),
		"ERR no_temp_file No+tempfile+or+file+already+closed")
	c.want(closeLine("&size=3"), fmt.Sprintf("ERR size_mismatch Expected:+3%%3B+actual:+%d%%3B+path:+%s", len(body), tracker.Escape(path)))
	// A failed close backs the upload out: the fid is queued for deletion.
	if _, err := cl.st.QueueItem(ctx, store.QueueDelete, fid); err != nil {
		t.Errorf("size_mismatch did not queue fid %d for deletion: %v", fid, err)
	}
	if _, err := cl.st.TempFile(ctx, fid); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("tempfile of a failed close survives: %v", err)
	}
	c.want(closeLine(""), "ERR no_temp_file No+tempfile+or+file+already+closed")

	// Again, properly.
	up := func(key, class string, body []byte) (int64, int) {
		t.Helper()
		r := parseOK(t, c.do("create_open domain=d&key="+key+"&class="+class))
		fid, _ := strconv.ParseInt(r.Get("fid"), 10, 64)
		devid, _ := strconv.Atoi(r.Get("devid"))
		put(t, r.Get("path"), body)
		c.want(fmt.Sprintf("create_close domain=d&key=%s&fid=%d&devid=%d&path=%s&size=%d", key, fid, devid, tracker.Escape(r.Get("path")), len(body)), "OK ")
		return fid, devid
	}
	fid, devid = up("k1", "one", body)
	path = cl.devURL(devid, fid)

	// cmd_file_info.
	c.want("file_info domain=d", "ERR no_key no_key")
	c.want("file_info domain=d&key=nope", "ERR unknown_key unknown_key")
	c.want("file_info domain=d&key=k1", fmt.Sprintf("OK fid=%d&domain=d&class=one&key=k1&length=%d&devcount=1", fid, len(body)))
	c.want("file_info domain=d&key=k1&devices=1", fmt.Sprintf("OK fid=%d&domain=d&class=one&key=k1&length=%d&devcount=1&devids=%d", fid, len(body), devid))

	// cmd_get_paths: verified path on the get port.
	c.want("get_paths domain=d", "ERR no_key no_key")
	c.want("get_paths domain=d&key=nope", "ERR unknown_key unknown_key")
	c.want("get_paths domain=d&key=k1", "OK paths=1&path1="+path)
	c.want("get_paths domain=d&key=k1&noverify=1&pathcount=5", "OK paths=1&path1="+path)
	// An operator's direct edit of file_on is seen at once (no caching).
	other := 3 - devid
	if _, err := cl.st.AddFileOn(ctx, fid, other); err != nil {
		t.Fatal(err)
	}
	got := c.do("get_paths domain=d&key=k1&noverify=1")
	if got != "OK paths=2&path1="+path+"&path2="+cl.devURL(other, fid) && got != "OK paths=2&path1="+cl.devURL(other, fid)+"&path2="+path {
		t.Errorf("get_paths after adding file_on: %s", got)
	}
	// Verification skips the copy that is not really there.
	// Only the first path is verified (cmd_get_paths): the missing copy is
	// skipped when it comes first, and listed second unverified otherwise.
	for i := 0; i < 10; i++ {
		got := c.do("get_paths domain=d&key=k1")
		if got != "OK paths=1&path1="+path && got != "OK paths=2&path1="+path+"&path2="+cl.devURL(other, fid) {
			t.Fatalf("get_paths with one missing copy: %s", got)
		}
	}
	if _, err := cl.st.RemoveFileOn(ctx, fid, other); err != nil {
		t.Fatal(err)
	}
	// A dead device is only a last-resort path.
	c.want(fmt.Sprintf("set_state host=h%d&device=%d&state=down", devid, devid), "OK ")
	c.want("get_paths domain=d&key=k1", "OK paths=1&path1="+path)
	c.want(fmt.Sprintf("set_state host=h%d&device=%d&state=alive", devid, devid), "OK ")

	// cmd_create_close with a checksum: verified, stored for an MD5 class.
	sumBody := []byte("checksummed")
	sum := md5.Sum(sumBody)
	r = parseOK(t, c.do("create_open domain=d&key=s1&class=sum"))
	sfid, _ := strconv.ParseInt(r.Get("fid"), 10, 64)
	put(t, r.Get("path"), sumBody)
	bad := md5.Sum([]byte("other"))
	c.want(fmt.Sprintf("create_close domain=d&key=s1&fid=%d&devid=%s&path=%s&checksum=MD5:%x&checksumverify=1", sfid, r.Get("devid"), tracker.Escape(r.Get("path")), bad),
		fmt.Sprintf("ERR checksum_mismatch Expected:+Checksum%%5Bf%%3D%d%%3BMD5%%3D%x%%5D%%3B+actual:+MD5:%x%%3B+path:+%s", sfid, bad, sum, tracker.Escape(r.Get("path"))))
	r = parseOK(t, c.do("create_open domain=d&key=s1&class=sum"))
	sfid, _ = strconv.ParseInt(r.Get("fid"), 10, 64)
	put(t, r.Get("path"), sumBody)
	c.want(fmt.Sprintf("create_close domain=d&key=s1&fid=%d&devid=%s&path=%s&checksum=MD5:%x", sfid, r.Get("devid"), tracker.Escape(r.Get("path")), sum), "OK ")
	c.want("file_info domain=d&key=s1", fmt.Sprintf("OK fid=%d&domain=d&class=sum&checksum=MD5:%x&key=s1&length=%d&devcount=1", sfid, sum, len(sumBody)))

	// cmd_file_debug.
	got = c.do(fmt.Sprintf("file_debug fid=%d", sfid))
	wantDbg := fmt.Sprintf("OK fid_fid=%d&fid_dmid=1&fid_dkey=s1&fid_length=%d&fid_classid=2&fid_devcount=1&fid_domain=d&fid_class=sum&devpath_%s=%s&devids=%s&checksum=MD5:%x",
		sfid, len(sumBody), r.Get("devid"), r.Get("path"), r.Get("devid"), sum)
	if got != wantDbg {
		t.Errorf("file_debug\n got: %s\nwant: %s", got, wantDbg)
	}
	c.want("file_debug domain=d&key=nope", "ERR unknown_key unknown_key")

	// cmd_list_keys.
	up("k2", "one", []byte("2"))
	up("k3", "one", []byte("3"))
	c.want("list_keys domain=d&prefix=k", "OK key_count=3&next_after=k3&key_1=k1&key_2=k2&key_3=k3")
	c.want("list_keys domain=d&prefix=k&limit=2", "OK key_count=2&next_after=k2&key_1=k1&key_2=k2")
	c.want("list_keys domain=d&prefix=k&after=k2", "OK key_count=1&next_after=k3&key_1=k3")
	c.want("list_keys domain=d&prefix=k&after=s1", "ERR after_mismatch Pattern+does+not+match+the+after-value%3F")
	c.want("list_keys domain=d&prefix=zz", "ERR none_match No+keys+match+that+pattern+and+after-value+%28if+any%29.")

	// cmd_rename.
	c.want("rename domain=d&from_key=k2", "ERR no_key no_key")
	c.want("rename domain=d&from_key=nope&to_key=x", "ERR unknown_key unknown_key")
	c.want("rename domain=d&from_key=k2&to_key=k3", "ERR key_exists Target+key+name+already+exists%3B+can%27t+overwrite.")
	c.want("rename domain=d&from_key=k2&to_key=k4", "OK ")
	c.want("list_keys domain=d&prefix=k", "OK key_count=3&next_after=k4&key_1=k1&key_2=k3&key_3=k4")

	// cmd_updateclass.
	c.want("updateclass domain=d&key=k1&class=nope", "ERR class_not_found Class+not+found")
	c.want("updateclass domain=d&key=zz&class=sum", "ERR invalid_key invalid_key")
	c.want("updateclass domain=d&key=k1&class=sum", "OK ")
	f, err := cl.st.FileByKey(ctx, 1, "k1")
	if err != nil || f.ClassID != 2 {
		t.Errorf("updateclass: file %+v, %v; want class 2", f, err)
	}
	if _, err := cl.st.QueueItem(ctx, store.QueueReplicate, f.Fid); err != nil {
		t.Errorf("updateclass did not queue replication: %v", err)
	}

	// cmd_list_fids: fid > from, at most "to" rows.
	got = c.do(fmt.Sprintf("list_fids from=%d&to=1", fid-1))
	if got != fmt.Sprintf("OK fid_1_fid=%d&fid_1_domain=d&fid_1_class=sum&fid_1_key=k1&fid_1_length=%d&fid_1_devcount=1&fid_count=1", fid, len(body)) {
		t.Errorf("list_fids: %s", got)
	}
	c.want("list_fids from=100000", "OK fid_count=0")

	// cmd_replicate_now: counts the rows it made due (future ones only).
	c.want("replicate_now", "OK count=0")
	if err := cl.st.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: 424242, After: time.Hour}); err != nil {
		t.Fatal(err)
	}
	c.want("replicate_now", "OK count=1")

	// cmd_delete.
	c.want("delete domain=d", "ERR no_key no_key")
	c.want("delete domain=d&key=nope", "ERR unknown_key unknown_key")
	c.want("delete domain=d&key=k1", "OK ")
	c.want("file_info domain=d&key=k1", "ERR unknown_key unknown_key")
	if _, err := cl.st.QueueItem(ctx, store.QueueDelete, fid); err != nil {
		t.Errorf("delete did not queue fid %d: %v", fid, err)
	}
	c.want("delete_domain domain=d", "ERR domain_has_files Domain+still+has+files,+unable+to+delete")
}

// cmd_create_open with multi_dest: one device per host, dev_count last.
func TestCommands_CreateOpenMultiDest(t *testing.T) {
	cl := startCluster(t, testConfig(), 2)
	c := cl.dial()
	c.want("create_domain domain=d", "OK domain=d")
	r := parseOK(t, c.do("create_open domain=d&key=m&multi_dest=1"))
	fid, _ := strconv.ParseInt(r.Get("fid"), 10, 64)
	d1, _ := strconv.Atoi(r.Get("devid_1"))
	d2, _ := strconv.Atoi(r.Get("devid_2"))
	want := fmt.Sprintf("fid=%d&devid_1=%d&path_1=%s&devid_2=%d&path_2=%s&dev_count=2", fid, d1, cl.devURL(d1, fid), d2, cl.devURL(d2, fid))
	got := fmt.Sprintf("fid=%s&devid_1=%s&path_1=%s&devid_2=%s&path_2=%s&dev_count=%s", r.Get("fid"), r.Get("devid_1"), r.Get("path_1"), r.Get("devid_2"), r.Get("path_2"), r.Get("dev_count"))
	if got != want || d1 == d2 || len(r) != 6 {
		t.Errorf("create_open multi_dest: %v", r)
	}
	// A chosen fid that is taken is refused.
	c.want(fmt.Sprintf("create_open domain=d&key=m2&fid=%d", fid), "ERR fid_in_use fid_in_use")
	// No writable device: no_devices.
	c.want("set_state host=h1&device=1&state=readonly", "OK ")
	c.want("set_state host=h2&device=2&state=down", "OK ")
	c.want("create_open domain=d&key=m3", "ERR no_devices No+devices+found+to+store+file")
}

// Host::ip: the alternate IP for clients inside altmask, or with zone=alt.
func TestCommands_AltIP(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	c := tt.dial()
	c.want("set_server_setting key=skip_mkcol&value=1", "OK ")
	c.want("create_domain domain=d", "OK domain=d")
	c.want("create_host host=h&ip=127.0.0.2&port=7500&status=alive&altip=10.1.1.1&altmask=10.0.0.0/8", "OK hostid=1&hostname=h")
	c.want("create_device devid=1&hostid=1", "OK ")
	r := parseOK(t, c.do("create_open domain=d&key=a"))
	if want := "http://127.0.0.2:7500" + model.FidPath(1, mustInt(t, r.Get("fid"))); r.Get("path") != want {
		t.Errorf("client outside altmask: path %s; want %s", r.Get("path"), want)
	}
	r = parseOK(t, c.do("create_open domain=d&key=b&zone=alt"))
	if want := "http://10.1.1.1:7500" + model.FidPath(1, mustInt(t, r.Get("fid"))); r.Get("path") != want {
		t.Errorf("zone=alt: path %s; want %s", r.Get("path"), want)
	}
	c.want("update_host host=h&altmask=127.0.0.0/8", "OK hostid=1&hostname=h")
	r = parseOK(t, c.do("create_open domain=d&key=c"))
	if want := "http://10.1.1.1:7500" + model.FidPath(1, mustInt(t, r.Get("fid"))); r.Get("path") != want {
		t.Errorf("client inside altmask: path %s; want %s", r.Get("path"), want)
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}
