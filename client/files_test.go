package client_test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gomogile/gomogile/client"
)

// storeTracker answers create_open with the given destinations in
// cmd_create_open's multi_dest format and records create_close's
// arguments.
type storeTracker struct {
	mu     sync.Mutex
	closes []url.Values
}

func (st *storeTracker) handler(fid int, paths ...string) func(request) answer {
	return func(r request) answer {
		switch r.Cmd {
		case "create_open":
			if r.Args.Get("multi_dest") != "1" {
				// Single-destination reply, as the original
				// tracker gives without multi_dest.
				return answer{Line: "OK fid=" + strconv.Itoa(fid) + "&devid=1&path=" + paths[0]}
			}
			parts := []string{"fid=" + strconv.Itoa(fid), "dev_count=" + strconv.Itoa(len(paths))}
			for i, p := range paths {
				n := strconv.Itoa(i + 1)
				parts = append(parts, "devid_"+n+"="+strconv.Itoa(10+i), "path_"+n+"="+p)
			}
			return answer{Line: "OK " + strings.Join(parts, "&")}
		case "create_close":
			st.mu.Lock()
			st.closes = append(st.closes, r.Args)
			st.mu.Unlock()
			return answer{Line: "OK "}
		}
		return answer{Line: "ERR unknown_command Unknown+server+command"}
	}
}

func (st *storeTracker) lastClose(t *testing.T) url.Values {
	t.Helper()
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.closes) != 1 {
		t.Fatalf("tracker got %d create_close; want 1", len(st.closes))
	}
	return st.closes[0]
}

func TestClient_StoreFile(t *testing.T) {
	data := []byte("hello, mogile\n")
	for _, tc := range []struct {
		name string
		r    func() io.Reader
		size int64
	}{
		{"Seeker", func() io.Reader { return bytes.NewReader(data) }, int64(len(data))},
		{"SeekerUnknownSize", func() io.Reader { return bytes.NewReader(data) }, -1},
		// Neither seekable nor sized: spooled, so it can be sent twice.
		{"StreamUnknownSize", func() io.Reader { return struct{ io.Reader }{bytes.NewReader(data)} }, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startStorage(t)
			bad := s.URL + "/fail/dev10/0/000/000/0000000042.fid"
			good := s.URL + "/dev11/0/000/000/0000000042.fid"
			st := &storeTracker{}
			p := startPeer(t, st.handler(42, bad, good))
			c := newClient(t, []string{p.Addr()}, nil)

			n, err := c.StoreFile(t.Context(), "testdom", "my key", "2copies", tc.r(), tc.size)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(data)) {
				t.Fatalf("StoreFile wrote %d; want %d", n, len(data))
			}
			if got, _ := s.blob("/dev11/0/000/000/0000000042.fid"); !bytes.Equal(got, data) {
				t.Fatalf("stored %q; want %q", got, data)
			}
			open := p.Requests()[0]
			wantOpen := "create_open class=2copies&domain=testdom&key=my+key&multi_dest=1&size=14\r\n"
			if open.Raw != wantOpen {
				t.Fatalf("create_open line = %q; want %q", open.Raw, wantOpen)
			}
			got := st.lastClose(t)
			want := url.Values{
				"domain": {"testdom"}, "key": {"my key"}, "fid": {"42"},
				"devid": {"11"}, "path": {good}, "size": {"14"},
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("create_close args = %v; want %v", got, want)
			}
		})
	}
}

func TestClient_StoreFile_EarlyRefusal(t *testing.T) {
	// The first node refuses before reading the body, while the client is
	// still sending it; the second must still get every byte, in order.
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	s := startStorage(t)
	st := &storeTracker{}
	p := startPeer(t, st.handler(8, s.URL+"/early/a.fid", s.URL+"/dev2/b.fid"))
	c := newClient(t, []string{p.Addr()}, nil)
	n, err := c.StoreFile(t.Context(), "d", "big", "", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.blob("/dev2/b.fid")
	if n != int64(len(data)) || !bytes.Equal(got, data) {
		t.Fatalf("stored %d bytes (reported %d); want the %d bytes sent", len(got), n, len(data))
	}
}

func TestClient_StoreFile_AllFail(t *testing.T) {
	s := startStorage(t)
	st := &storeTracker{}
	p := startPeer(t, st.handler(7, s.URL+"/fail/a", "http://"+deadAddr(t)+"/b"))
	c := newClient(t, []string{p.Addr()}, nil)
	_, err := c.StoreFile(t.Context(), "d", "k", "", strings.NewReader("x"), 1)
	if !errors.Is(err, client.ErrAllPathsFailed) {
		t.Fatalf("StoreFile error = %v; want ErrAllPathsFailed", err)
	}
	if n := countCmd(p.Requests(), "create_close"); n != 0 {
		t.Fatalf("tracker got %d create_close after failed uploads; want 0", n)
	}
}

func TestClient_StoreFile_NonSeekerFirstDestUnreachable(t *testing.T) {
	// Nothing of r was read before the first destination failed, so the
	// second one can still get all of it.
	s := startStorage(t)
	good := s.URL + "/dev11/x.fid"
	st := &storeTracker{}
	p := startPeer(t, st.handler(5, "http://"+deadAddr(t)+"/dev10/x.fid", good))
	c := newClient(t, []string{p.Addr()}, nil)
	data := "streamed"
	r := struct{ io.Reader }{strings.NewReader(data)}
	if _, err := c.StoreFile(t.Context(), "d", "k", "", r, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.blob("/dev11/x.fid"); string(got) != data {
		t.Fatalf("stored %q; want %q", got, data)
	}
}

func TestClient_StoreFile_ComputeMD5(t *testing.T) {
	s := startStorage(t)
	st := &storeTracker{}
	p := startPeer(t, st.handler(9, s.URL+"/fail/x", s.URL+"/dev2/y.fid"))
	c := newClient(t, []string{p.Addr()}, nil)
	data := strings.Repeat("blah", 1000)
	_, err := c.StoreFileWith(t.Context(), "d", "k", "md5class", strings.NewReader(data), int64(len(data)), &client.StoreOptions{ComputeMD5: true})
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum([]byte(data))
	got := st.lastClose(t)
	// t/50-checksum.t sends checksum=MD5:<hex> with checksumverify=1.
	if want := "MD5:" + hex.EncodeToString(sum[:]); got.Get("checksum") != want {
		t.Fatalf("checksum = %q; want %q (hash must restart for the second destination)", got.Get("checksum"), want)
	}
	if got.Get("checksumverify") != "1" {
		t.Fatalf("checksumverify = %q; want 1", got.Get("checksumverify"))
	}
}

func TestClient_StoreFile_EmptyFile(t *testing.T) {
	s := startStorage(t)
	st := &storeTracker{}
	p := startPeer(t, st.handler(3, s.URL+"/dev1/z.fid"))
	c := newClient(t, []string{p.Addr()}, nil)
	n, err := c.StoreFile(t.Context(), "d", "empty", "", bytes.NewReader(nil), 0)
	if err != nil || n != 0 {
		t.Fatalf("StoreFile = %d, %v; want 0, nil", n, err)
	}
	if b, ok := s.blob("/dev1/z.fid"); !ok || len(b) != 0 {
		t.Fatalf("empty blob stored = %q, %v", b, ok)
	}
	if got := st.lastClose(t).Get("size"); got != "0" {
		t.Fatalf("create_close size = %q; want 0", got)
	}
}

func TestClient_FetchFile(t *testing.T) {
	s := startStorage(t)
	s.blobs["/dev3/0/000/000/0000000042.fid"] = []byte("payload")
	// cmd_get_paths: paths=N, path1..pathN; the first one is gone.
	p := startPeer(t, replies(map[string]string{
		"get_paths": "OK path2=" + s.URL + "/dev3/0/000/000/0000000042.fid&paths=2&path1=" + s.URL + "/dev1/0/000/000/0000000042.fid",
	}))
	c := newClient(t, []string{p.Addr()}, &client.Options{Domain: "testdom"})
	rc, err := c.FetchFile(t.Context(), "", "k")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil || string(b) != "payload" {
		t.Fatalf("FetchFile read %q, %v; want payload", b, err)
	}
	if want := "get_paths domain=testdom&key=k&noverify=1\r\n"; p.Requests()[0].Raw != want {
		t.Fatalf("get_paths line = %q; want %q", p.Requests()[0].Raw, want)
	}
	if len(s.gets) != 2 || s.gets[0] != "/dev1/0/000/000/0000000042.fid" {
		t.Fatalf("storage GETs = %v; want dev1 then dev3", s.gets)
	}
}

func TestClient_FetchFile_AllFail(t *testing.T) {
	s := startStorage(t)
	p := startPeer(t, replies(map[string]string{
		"get_paths": "OK paths=1&path1=" + s.URL + "/dev1/missing.fid",
	}))
	c := newClient(t, []string{p.Addr()}, nil)
	_, err := c.FetchFile(t.Context(), "d", "k")
	if !errors.Is(err, client.ErrAllPathsFailed) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("FetchFile error = %v; want ErrAllPathsFailed mentioning 404", err)
	}
}

func TestClient_ListKeys(t *testing.T) {
	p := startPeer(t, func(r request) answer {
		if r.Args.Get("after") == "" {
			// cmd_list_keys: key_count, next_after, key_N.
			return answer{Line: "OK key_2=foo%2F2&next_after=foo%2F2&key_count=2&key_1=foo+1"}
		}
		return answer{Line: "ERR none_match No+keys+match+that+pattern+and+after-value+%28if+any%29."}
	})
	c := newClient(t, []string{p.Addr()}, nil)
	keys, next, err := c.ListKeys(t.Context(), "d", "foo", "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(keys, []string{"foo 1", "foo/2"}) || next != "foo/2" {
		t.Fatalf("ListKeys = %q, %q", keys, next)
	}
	keys, next, err = c.ListKeys(t.Context(), "d", "foo", next, 2)
	if err != nil || len(keys) != 0 || next != "" {
		t.Fatalf("ListKeys past the end = %q, %q, %v; want empty, no error", keys, next, err)
	}
	if want := "list_keys after=foo/2&domain=d&limit=2&prefix=foo\r\n"; p.Requests()[1].Raw != want {
		t.Fatalf("second list_keys = %q; want %q", p.Requests()[1].Raw, want)
	}
}

func TestClient_ListKeys_LyingCount(t *testing.T) {
	p := startPeer(t, replies(map[string]string{"list_keys": "OK key_count=999999999&key_1=a"}))
	c := newClient(t, []string{p.Addr()}, nil)
	if _, _, err := c.ListKeys(t.Context(), "d", "", "", 0); !errors.Is(err, client.ErrProtocol) {
		t.Fatalf("ListKeys error = %v; want ErrProtocol", err)
	}
}

func TestClient_FileInfo(t *testing.T) {
	p := startPeer(t, replies(map[string]string{
		// cmd_file_info with devices=1, class with a hashtype.
		"file_info": "OK devcount=2&class=2copies&fid=42&key=a+b&length=4&domain=testdom&devids=1,3&checksum=MD5:6f1ed002ab5595859014ebf0951522d9",
	}))
	c := newClient(t, []string{p.Addr()}, nil)
	fi, err := c.FileInfo(t.Context(), "testdom", "a b")
	if err != nil {
		t.Fatal(err)
	}
	want := &client.FileInfo{FID: 42, Domain: "testdom", Class: "2copies", Key: "a b", Length: 4, DevCount: 2,
		Checksum: "MD5:6f1ed002ab5595859014ebf0951522d9", DevIDs: []int{1, 3}}
	if !reflect.DeepEqual(fi, want) {
		t.Fatalf("FileInfo = %+v; want %+v", fi, want)
	}
	if want := "file_info devices=1&domain=testdom&key=a+b\r\n"; p.Requests()[0].Raw != want {
		t.Fatalf("file_info line = %q; want %q", p.Requests()[0].Raw, want)
	}
}

func TestClient_ListFids(t *testing.T) {
	p := startPeer(t, replies(map[string]string{
		"list_fids": "OK fid_count=2&fid_1_fid=5&fid_1_domain=d&fid_1_class=default&fid_1_key=k1&fid_1_length=10&fid_1_devcount=2" +
			"&fid_2_fid=9&fid_2_domain=d&fid_2_class=big&fid_2_key=k+2&fid_2_length=0&fid_2_devcount=1",
	}))
	c := newClient(t, []string{p.Addr()}, nil)
	got, err := c.ListFids(t.Context(), 4, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []client.FileInfo{
		{FID: 5, Domain: "d", Class: "default", Key: "k1", Length: 10, DevCount: 2},
		{FID: 9, Domain: "d", Class: "big", Key: "k 2", Length: 0, DevCount: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ListFids = %+v; want %+v", got, want)
	}
	if want := "list_fids from=4&to=100\r\n"; p.Requests()[0].Raw != want {
		t.Fatalf("list_fids line = %q; want %q", p.Requests()[0].Raw, want)
	}
}

func TestClient_FileDebugByFid(t *testing.T) {
	p := startPeer(t, replies(map[string]string{
		"file_debug": "OK fid_fid=42&fid_dkey=k&devids=1,2&devpath_1=http://h/dev1/x.fid&checksum=NONE",
	}))
	c := newClient(t, []string{p.Addr()}, nil)
	v, err := c.FileDebug(t.Context(), "", "", 42)
	if err != nil {
		t.Fatal(err)
	}
	if v.Get("devpath_1") != "http://h/dev1/x.fid" || v.Get("checksum") != "NONE" {
		t.Fatalf("FileDebug = %v", v)
	}
	if want := "file_debug fid=42\r\n"; p.Requests()[0].Raw != want {
		t.Fatalf("file_debug line = %q; want %q", p.Requests()[0].Raw, want)
	}
}
