package tracker_test

// MogileFS::Client's largefile mode uploads with ranged PUTs
// (MogileFS::ClientHTTPFile): an empty PUT, then one PUT per chunk with
// "Content-Range: bytes pos-end/*", then create_close with the total size,
// which the tracker checks against the node's HEAD.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/tracker"
)

func rangedPut(t *testing.T, url string, pos int, chunk []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(chunk))
	if err != nil {
		t.Fatal(err)
	}
	if chunk != nil {
		req.Header.Set("Content-Range", fmt.Sprintf("bytes %d-%d/*", pos, pos+len(chunk)-1))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// The Go side does what ClientHTTPFile does, byte for byte in the headers
// that matter; before mogstored wrote ranges, each chunk replaced the file
// and create_close failed with size_mismatch.
func TestE2E_LargefileRangedPuts(t *testing.T) {
	_, c, _ := oneNodeCluster(t, nil)
	body := bytes.Repeat([]byte("largefile chunk "), 5000) // 80000 bytes, 10 chunks of 8192 and a short one
	r := parseOK(t, c.do("create_open domain=d&key=big&class=c&multi_dest=1"))
	path := r.Get("path_1")
	if code := rangedPut(t, path, 0, nil); code != http.StatusOK {
		t.Fatalf("empty PUT: %d", code)
	}
	for pos := 0; pos < len(body); pos += 8192 {
		if code := rangedPut(t, path, pos, body[pos:min(pos+8192, len(body))]); code != http.StatusOK {
			t.Fatalf("chunk at %d: %d; want 200", pos, code)
		}
	}
	c.want(fmt.Sprintf("create_close domain=d&key=big&fid=%s&devid=%s&size=%d&path=%s", r.Get("fid"), r.Get("devid_1"), len(body), tracker.Escape(path)), "OK ")
	c.want("file_info domain=d&key=big", fmt.Sprintf("OK fid=%s&domain=d&class=c&key=big&length=%d&devcount=1", r.Get("fid"), len(body)))
	if got := fetch(t, path); !bytes.Equal(got, body) {
		t.Errorf("stored %d bytes differ from the %d uploaded", len(got), len(body))
	}
	// A chunk lost on the way shows at the next one, not as a hole.
	r = parseOK(t, c.do("create_open domain=d&key=holey&class=c&multi_dest=1"))
	path = r.Get("path_1")
	rangedPut(t, path, 0, nil)
	rangedPut(t, path, 0, body[:8192])
	if code := rangedPut(t, path, 16384, body[16384:24576]); code != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("chunk after a lost one: %d; want 416", code)
	}
	got := c.do(fmt.Sprintf("create_close domain=d&key=holey&fid=%s&devid=%s&size=24576&path=%s", r.Get("fid"), r.Get("devid_1"), tracker.Escape(path)))
	if !strings.HasPrefix(got, "ERR size_mismatch Expected:+24576%3B+actual:+8192%3B") {
		t.Errorf("create_close of the holey upload = %q; want size_mismatch, 24576 expected, 8192 actual", got)
	}
}

// The real MogileFS::Client 1.17 with largefile => 1. It needs perl, LWP
// and IO::WrapTie (Debian: libwww-perl, libio-stringy-perl) and
// MogileFS::Client on perl's @INC or PERL5LIB; scripts/test-servers.sh
// installs them.
func TestE2E_LargefilePerlClient(t *testing.T) {
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("perl not installed")
	}
	if out, err := exec.Command(perl, "-MMogileFS::Client", "-MLWP::UserAgent", "-e1").CombinedOutput(); err != nil {
		t.Skipf("MogileFS::Client not usable from perl (PERL5LIB=%q): %s", os.Getenv("PERL5LIB"), strings.TrimSpace(string(out)))
	}
	tt, c, _ := oneNodeCluster(t, nil)
	body := bytes.Repeat([]byte("perl largefile "), 7000) // 105000 bytes
	file := filepath.Join(t.TempDir(), "upload")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), perl, filepath.Join("testdata", "largefile.pl"), tt.addr, "d", "c", "perl/big", file, "16384")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != fmt.Sprint(len(body)) {
		t.Fatalf("largefile.pl: %v, output %q; want %d", err, out, len(body))
	}
	r := parseOK(t, c.do("file_info domain=d&key=perl/big"))
	if r.Get("length") != fmt.Sprint(len(body)) {
		t.Errorf("file_info length = %s; want %d", r.Get("length"), len(body))
	}
	p := parseOK(t, c.do("get_paths domain=d&key=perl/big"))
	if got := fetch(t, p.Get("path1")); !bytes.Equal(got, body) {
		t.Errorf("stored %d bytes differ from the %d uploaded", len(got), len(body))
	}
}
