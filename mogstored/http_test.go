package mogstored

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const fidPath = "/dev1/0/000/000/0000000123.fid"

func TestPutGetHeadDelete(t *testing.T) {
	s, docroot := startServer(t, nil)
	base := "http://" + s.HTTPAddr()

	// No MKCOL first: the tracker may skip it (skip_mkcol).
	res, _ := do(t, "PUT", base+fidPath, strings.NewReader("hello world"), nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT: got %d, want 200", res.StatusCode)
	}
	onDisk, err := os.ReadFile(filepath.Join(docroot, filepath.FromSlash(fidPath)))
	if err != nil || string(onDisk) != "hello world" {
		t.Fatalf("file on disk = %q, %v; want %q", onDisk, err, "hello world")
	}
	res, body := do(t, "GET", base+fidPath, nil, nil)
	if res.StatusCode != 200 || body != "hello world" {
		t.Fatalf("GET: %d %q", res.StatusCode, body)
	}
	res, body = do(t, "HEAD", base+fidPath, nil, nil)
	if res.StatusCode != 200 || res.Header.Get("Content-Length") != "11" || body != "" {
		t.Fatalf("HEAD: %d Content-Length %q body %q", res.StatusCode, res.Header.Get("Content-Length"), body)
	}

	// Overwrite replaces the whole content.
	do(t, "PUT", base+fidPath, strings.NewReader("bye"), nil)
	if _, body = do(t, "GET", base+fidPath, nil, nil); body != "bye" {
		t.Fatalf("after overwrite GET = %q", body)
	}

	res, _ = do(t, "DELETE", base+fidPath, nil, nil)
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: got %d, want 204", res.StatusCode)
	}
	for _, m := range []string{"GET", "HEAD", "DELETE"} {
		if res, _ := do(t, m, base+fidPath, nil, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s after delete: got %d, want 404", m, res.StatusCode)
		}
	}
	if left := listDir(t, filepath.Join(docroot, "dev1", "0")); len(left) != 2 {
		t.Errorf("dev1/0 holds %v, want only the directories 000 and 000/000", left)
	}
}

func TestPutZeroLengthAndChunked(t *testing.T) {
	s, docroot := startServer(t, nil)
	base := "http://" + s.HTTPAddr()

	res, _ := do(t, "PUT", base+"/dev1/empty.fid", bytes.NewReader(nil), nil)
	if res.StatusCode != 200 {
		t.Fatalf("zero-length PUT: %d", res.StatusCode)
	}
	res, _ = do(t, "HEAD", base+"/dev1/empty.fid", nil, nil)
	if res.StatusCode != 200 || res.Header.Get("Content-Length") != "0" {
		t.Fatalf("HEAD empty: %d Content-Length %q", res.StatusCode, res.Header.Get("Content-Length"))
	}

	// An io.Reader of unknown length makes the client send chunked.
	payload := strings.Repeat("chunk", 50000)
	res, _ = do(t, "PUT", base+"/dev2/a/b/c.fid", io.MultiReader(strings.NewReader(payload)), nil)
	if res.StatusCode != 200 {
		t.Fatalf("chunked PUT: %d", res.StatusCode)
	}
	got, err := os.ReadFile(filepath.Join(docroot, "dev2", "a", "b", "c.fid"))
	if err != nil || string(got) != payload {
		t.Fatalf("chunked PUT stored %d bytes, %v; want %d", len(got), err, len(payload))
	}
}

func TestRange(t *testing.T) {
	s, _ := startServer(t, nil)
	base := "http://" + s.HTTPAddr()
	do(t, "PUT", base+fidPath, strings.NewReader("0123456789"), nil)

	res, body := do(t, "GET", base+fidPath, nil, map[string]string{"Range": "bytes=2-4"})
	if res.StatusCode != http.StatusPartialContent || body != "234" || res.Header.Get("Content-Range") != "bytes 2-4/10" {
		t.Fatalf("Range 2-4: %d %q %q", res.StatusCode, body, res.Header.Get("Content-Range"))
	}
	res, body = do(t, "GET", base+fidPath, nil, map[string]string{"Range": "bytes=-3"})
	if res.StatusCode != http.StatusPartialContent || body != "789" {
		t.Fatalf("suffix range: %d %q", res.StatusCode, body)
	}
	res, _ = do(t, "GET", base+fidPath, nil, map[string]string{"Range": "bytes=50-"})
	if res.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Fatalf("range past the end: %d, want 416", res.StatusCode)
	}
}

func TestMkcol(t *testing.T) {
	s, docroot := startServer(t, nil)
	base := "http://" + s.HTTPAddr()

	res, _ := do(t, "MKCOL", base+"/dev1/0/000/148/", nil, nil)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("MKCOL new: %d, want 201", res.StatusCode)
	}
	if fi, err := os.Stat(filepath.Join(docroot, "dev1", "0", "000", "148")); err != nil || !fi.IsDir() {
		t.Fatalf("directory not created: %v", err)
	}
	for _, p := range []string{"/dev1/0/000/148/", "/dev1/0/000/148", "/dev1/"} {
		if res, _ := do(t, "MKCOL", base+p, nil, nil); res.StatusCode != http.StatusOK {
			t.Errorf("MKCOL existing %s: %d, want 200", p, res.StatusCode)
		}
	}
	do(t, "PUT", base+"/dev1/file", strings.NewReader("x"), nil)
	if res, _ := do(t, "MKCOL", base+"/dev1/file", nil, nil); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("MKCOL on a file: %d, want 405", res.StatusCode)
	}
	if res, _ := do(t, "MKCOL", base+"/dev1/file/sub", nil, nil); res.StatusCode != http.StatusConflict {
		t.Errorf("MKCOL below a file: %d, want 409", res.StatusCode)
	}
	if res, _ := do(t, "MKCOL", base+"/dev9/x/", nil, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("MKCOL on a missing device: %d, want 404", res.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(docroot, "dev9")); !os.IsNotExist(err) {
		t.Errorf("MKCOL created a device directory: %v", err)
	}
}

func TestMissingDeviceAndOddRequests(t *testing.T) {
	s, docroot := startServer(t, nil)
	base := "http://" + s.HTTPAddr()

	if res, _ := do(t, "PUT", base+"/dev9/0/000/000/0000000001.fid", strings.NewReader("x"), nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("PUT to a missing device: %d, want 404", res.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(docroot, "dev9")); !os.IsNotExist(err) {
		t.Errorf("PUT created a device directory: %v", err)
	}
	os.Mkdir(filepath.Join(docroot, "dev1", "dir"), 0o755)
	cases := []struct {
		method, path string
		want         int
	}{
		{"GET", "/dev1/dir", http.StatusForbidden},
		{"HEAD", "/dev1/dir", http.StatusForbidden},
		{"DELETE", "/dev1/dir", http.StatusBadRequest},
		{"DELETE", "/dev1", http.StatusForbidden},
		{"PUT", "/dev1/", http.StatusBadRequest},
		{"PUT", "/dev1/dir", http.StatusConflict},
		{"POST", "/dev1/x", http.StatusMethodNotAllowed},
		{"GET", "/", http.StatusOK}, // mogadm check's "is the node up" probe
		{"HEAD", "/", http.StatusOK},
		{"PUT", "/", http.StatusForbidden},
		{"GET", "/usage", http.StatusForbidden},
		{"GET", "/devx/usage", http.StatusForbidden},
	}
	for _, c := range cases {
		res, _ := do(t, c.method, base+c.path, strings.NewReader(""), nil)
		if res.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, res.StatusCode, c.want)
		}
	}
	// mogadm check appends "/dev<N>/usage" to "http://host:port/"; Perlbal
	// served that double slash as one.
	if err := os.WriteFile(filepath.Join(docroot, "dev1", "f.fid"), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, body := do(t, "GET", base+"//dev1/f.fid", nil, nil); res.StatusCode != http.StatusOK || body != "content" {
		t.Errorf("GET //dev1/f.fid: %d %q, want 200 \"content\"", res.StatusCode, body)
	}
	if fi, err := os.Stat(filepath.Join(docroot, "dev1", "dir")); err != nil || !fi.IsDir() {
		t.Errorf("dev1/dir was changed: %v", err)
	}
}

func TestContentMD5(t *testing.T) {
	s, docroot := startServer(t, nil)
	base := "http://" + s.HTTPAddr()
	good := md5.Sum([]byte("payload"))
	res, _ := do(t, "PUT", base+"/dev1/good", strings.NewReader("payload"),
		map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(good[:])})
	if res.StatusCode != 200 {
		t.Fatalf("PUT with matching Content-MD5: %d", res.StatusCode)
	}
	// The tracker's monitor probes exactly this: md5("!") for a body ".".
	bad := md5.Sum([]byte("!"))
	res, _ = do(t, "PUT", base+"/dev1/test-write/test-md5", strings.NewReader("."),
		map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(bad[:])})
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("PUT with wrong Content-MD5: %d, want 400", res.StatusCode)
	}
	if left := listDir(t, filepath.Join(docroot, "dev1", "test-write")); len(left) != 0 {
		t.Fatalf("rejected upload left %v", left)
	}
}

// waitTemp waits until an upload temporary exists in dir and returns its name.
func waitTemp(t *testing.T, dir string) string {
	t.Helper()
	var name string
	waitFor(t, "the upload's temporary file", func() bool {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp-") {
				name = e.Name()
				return true
			}
		}
		return false
	})
	return name
}

func TestShortPutLeavesNothing(t *testing.T) {
	// Whole and ranged (largefile) bodies alike.
	for _, extra := range []string{"", "Content-Range: bytes 0-99999/*\r\n"} {
		s, docroot := startServer(t, nil)
		base := "http://" + s.HTTPAddr()
		do(t, "PUT", base+fidPath, strings.NewReader("version one"), nil)
		dir := filepath.Join(docroot, "dev1", "0", "000", "000")

		c, err := net.Dial("tcp", s.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: 100000\r\n\r\n", fidPath, extra)
		c.Write(bytes.Repeat([]byte("z"), 5000))
		tmp := waitTemp(t, dir)
		c.Close() // 95000 bytes short

		waitFor(t, "the temporary file to go", func() bool {
			_, err := os.Stat(filepath.Join(dir, tmp))
			return os.IsNotExist(err)
		})
		if left := listDir(t, dir); len(left) != 1 || left[0] != "0000000123.fid" {
			t.Fatalf("after the short upload (%q) dir holds %v", extra, left)
		}
		if _, body := do(t, "GET", base+fidPath, nil, nil); body != "version one" {
			t.Fatalf("short upload (%q) damaged the previous version: %q", extra, body)
		}
	}
}

func TestTraversalRefused(t *testing.T) {
	s, docroot := startServer(t, nil)
	addr := s.HTTPAddr()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("top secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev1 := filepath.Join(docroot, "dev1")
	os.MkdirAll(filepath.Join(dev1, "inside"), 0o755)
	os.WriteFile(filepath.Join(dev1, "inside", "ok"), []byte("fine"), 0o644)
	mustSymlink(t, outside, filepath.Join(dev1, "out"))                          // absolute, outside
	mustSymlink(t, "../../"+filepath.Base(outside), filepath.Join(dev1, "rel"))  // relative, outside
	mustSymlink(t, secret, filepath.Join(dev1, "secretlink"))                    // file outside
	mustSymlink(t, "inside", filepath.Join(dev1, "alias"))                       // stays inside
	mustSymlink(t, filepath.Join(docroot, "dev2"), filepath.Join(dev1, "other")) // another device

	raw := []struct {
		req  string
		want []string
	}{
		{"GET /dev1/../../etc/passwd HTTP/1.0\r\n\r\n", []string{"400"}},
		{"GET /dev1/%2e%2e/%2e%2e/etc/passwd HTTP/1.0\r\n\r\n", []string{"400"}},
		{"GET /dev1/%2E%2E%2Fsecret HTTP/1.0\r\n\r\n", []string{"400"}},
		{"GET /dev1/..%2f..%2fetc HTTP/1.0\r\n\r\n", []string{"400"}},
		{"GET //etc/passwd HTTP/1.0\r\n\r\n", []string{"403"}},
		{"GET /etc/passwd HTTP/1.0\r\n\r\n", []string{"403"}},
		{"GET /dev1/./inside/ok HTTP/1.0\r\n\r\n", []string{"400"}},
		{"GET /dev1/inside\\..\\..\\x HTTP/1.0\r\n\r\n", []string{"400"}},
		{"PUT /dev1/../escape HTTP/1.0\r\nContent-Length: 1\r\n\r\nx", []string{"400"}},
		{"PUT /dev1/%2e%2e/escape HTTP/1.0\r\nContent-Length: 1\r\n\r\nx", []string{"400"}},
		{"DELETE /dev1/../dev2/x HTTP/1.0\r\n\r\n", []string{"400"}},
		{"MKCOL /dev1/../../made HTTP/1.0\r\n\r\n", []string{"400"}},
		{"GET http://x/dev1/../../etc/passwd HTTP/1.0\r\n\r\n", []string{"400"}},
	}
	for _, c := range raw {
		line := rawRequest(t, addr, c.req)
		ok := false
		for _, w := range c.want {
			ok = ok || strings.HasPrefix(line, "HTTP/1.0 "+w) || strings.HasPrefix(line, "HTTP/1.1 "+w)
		}
		if !ok {
			t.Errorf("%q answered %q, want %v", strings.SplitN(c.req, "\r\n", 2)[0], line, c.want)
		}
	}

	base := "http://" + addr
	sym := []struct {
		method, path string
		body         string
		want         int
	}{
		{"GET", "/dev1/out/secret", "", 403},
		{"HEAD", "/dev1/out/secret", "", 403},
		{"GET", "/dev1/rel/secret", "", 403},
		{"GET", "/dev1/secretlink", "", 403},
		{"GET", "/dev1/other/usage", "", 403},
		{"PUT", "/dev1/out/new", "pwned", 403},
		{"PUT", "/dev1/out/sub/dir/new", "pwned", 403},
		{"PUT", "/dev1/rel/new", "pwned", 403},
		{"MKCOL", "/dev1/out/newdir/", "", 403},
		{"DELETE", "/dev1/out/secret", "", 403},
		{"GET", "/dev1/alias/ok", "", 200},
	}
	for _, c := range sym {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		res, got := do(t, c.method, base+c.path, body, nil)
		if res.StatusCode != c.want {
			t.Errorf("%s %s: %d %q, want %d", c.method, c.path, res.StatusCode, got, c.want)
		}
		if strings.Contains(got, "top secret") {
			t.Errorf("%s %s served the outside file", c.method, c.path)
		}
	}
	// Replacing a symlink by PUT swaps the link for a file inside the
	// device; the outside file must stay untouched.
	if res, _ := do(t, "PUT", base+"/dev1/secretlink", strings.NewReader("inside now"), nil); res.StatusCode != 200 {
		t.Errorf("PUT over a symlink: %d", res.StatusCode)
	}

	if got := listDir(t, outside); len(got) != 1 || got[0] != "secret" {
		t.Errorf("something was written outside the docroot: %v", got)
	}
	if b, _ := os.ReadFile(secret); string(b) != "top secret" {
		t.Errorf("outside file changed to %q", b)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(docroot), "made")); err == nil {
		t.Errorf("MKCOL created a directory above the docroot")
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentClients(t *testing.T) {
	s, docroot := startServer(t, nil)
	base := "http://" + s.HTTPAddr()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("/dev%d/0/000/%03d/%010d.fid", i%2+1, i, i)
			want := strings.Repeat(strconv.Itoa(i), 10000+i)
			for range 5 {
				req, _ := http.NewRequest("PUT", base+p, strings.NewReader(want))
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					return
				}
				res.Body.Close()
				res, err = http.Get(base + p)
				if err != nil {
					errs <- err
					return
				}
				got, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if string(got) != want {
					errs <- fmt.Errorf("%s: read back %d bytes, want %d", p, len(got), len(want))
					return
				}
			}
		}()
	}
	// Many writers of one path: the survivor is one complete version.
	versions := make([]string, 8)
	for i := range versions {
		versions[i] = strings.Repeat(string(rune('a'+i)), 200000)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("PUT", base+"/dev1/shared.fid", strings.NewReader(versions[i]))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				errs <- fmt.Errorf("shared PUT: %d", res.StatusCode)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := os.ReadFile(filepath.Join(docroot, "dev1", "shared.fid"))
	if err != nil {
		t.Fatal(err)
	}
	whole := false
	for _, v := range versions {
		whole = whole || string(got) == v
	}
	if !whole {
		t.Fatalf("concurrent PUTs left a mixed file of %d bytes", len(got))
	}
	for _, n := range listDir(t, docroot) {
		if strings.Contains(n, ".tmp-") {
			t.Errorf("temporary left behind: %s", n)
		}
	}
}

func TestMaxConnsHoldsExcessClients(t *testing.T) {
	s, _ := startServer(t, func(c *Config) { c.MaxConns = 1 })
	hog, err := net.Dial("tcp", s.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	// Make sure the hog's connection was accepted before the next client.
	fmt.Fprintf(hog, "GET /dev1/usage HTTP/1.1\r\nHost: x\r\n\r\n")
	hog.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := hog.Read(make([]byte, 1)); err != nil {
		t.Fatalf("first client got no answer: %v", err)
	}

	got := make(chan int, 1)
	go func() {
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		res, err := client.Get("http://" + s.HTTPAddr() + "/dev1/usage")
		if err != nil {
			got <- -1
			return
		}
		res.Body.Close()
		got <- res.StatusCode
	}()
	select {
	case code := <-got:
		t.Fatalf("second client served (%d) while the only slot was taken", code)
	case <-time.After(300 * time.Millisecond):
	}
	hog.Close()
	select {
	case code := <-got:
		if code != 200 {
			t.Fatalf("second client got %d after the slot freed", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second client still waiting after the first left")
	}
}

func TestCloseDuringUpload(t *testing.T) {
	t.Run("cut", func(t *testing.T) {
		s, docroot := startServer(t, func(c *Config) { c.ShutdownTimeout = 200 * time.Millisecond })
		c, err := net.Dial("tcp", s.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n", fidPath)
		c.Write(bytes.Repeat([]byte("z"), 1000))
		dir := filepath.Join(docroot, "dev1", "0", "000", "000")
		waitTemp(t, dir)
		start := time.Now()
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Close took %v", d)
		}
		if left := listDir(t, dir); len(left) != 0 {
			t.Fatalf("cut upload left %v", left)
		}
		if _, err := net.DialTimeout("tcp", s.HTTPAddr(), time.Second); err == nil {
			t.Fatal("HTTP port still accepting after Close")
		}
	})
	t.Run("finishes within the grace period", func(t *testing.T) {
		s, docroot := startServer(t, func(c *Config) { c.ShutdownTimeout = 10 * time.Second })
		c, err := net.Dial("tcp", s.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345", fidPath)
		waitTemp(t, filepath.Join(docroot, "dev1", "0", "000", "000"))
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		time.Sleep(100 * time.Millisecond)
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) with an upload in flight", err)
		default:
		}
		io.WriteString(c, "67890")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 12)
		io.ReadFull(c, buf)
		if !strings.HasPrefix(string(buf), "HTTP/1.1 200") {
			t.Fatalf("upload during shutdown answered %q", buf)
		}
		if err := <-closed; err != nil {
			t.Fatalf("Close: %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(docroot, filepath.FromSlash(fidPath))); string(b) != "1234567890" {
			t.Fatalf("stored %q", b)
		}
	})
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.HTTPListen, cfg.MgmtListen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DocRoot = filepath.Join(t.TempDir(), "missing")
	if err := New(cfg).Open(ctx); err == nil || !strings.Contains(err.Error(), "docroot") {
		t.Errorf("Open with a missing docroot: %v", err)
	}
	cfg.DocRoot = t.TempDir()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg.MgmtListen = taken.Addr().String()
	s := New(cfg)
	if err := s.Open(ctx); err == nil || !strings.Contains(err.Error(), "mgmt listener") {
		t.Errorf("Open with the mgmt port taken: %v", err)
	}
	if s.Close() != nil {
		t.Error("Close after a failed Open should be a no-op")
	}
	cfg.MgmtListen = "127.0.0.1:0"
	s = New(cfg)
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Open(ctx); err == nil {
		t.Error("second Open succeeded")
	}
	s.Close()
}

// TestReplicateStyleKeepAlive speaks like MogileFS::Worker::Replicate:
// HTTP/1.0 with "Connection: keep-alive", a PUT then a GET on one connection.
func TestReplicateStyleKeepAlive(t *testing.T) {
	s, _ := startServer(t, nil)
	c, err := net.Dial("tcp", s.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	body := strings.Repeat("r", 100000)
	fmt.Fprintf(c, "PUT %s HTTP/1.0\r\nConnection: keep-alive\r\nContent-length: %d\r\n\r\n%s", fidPath, len(body), body)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("PUT: %v %v", res, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", fidPath)
	res, err = http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != 200 || res.ContentLength != int64(len(body)) {
		t.Fatalf("GET on the same connection: %v %v", res, err)
	}
	got, _ := io.ReadAll(res.Body)
	if string(got) != body {
		t.Fatalf("GET returned %d bytes", len(got))
	}
}
