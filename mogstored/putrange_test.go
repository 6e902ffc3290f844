package mogstored

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// MogileFS::Client's largefile mode (MogileFS::ClientHTTPFile) first PUTs an
// empty body, then each chunk with "Content-Range: bytes pos-end/*"; the
// chunks must land at their offsets.
func TestPut_ContentRangeChunks(t *testing.T) {
	s, docroot := startServer(t, nil)
	url := "http://" + s.HTTPAddr() + fidPath
	if res, _ := do(t, "PUT", url, bytes.NewReader(nil), nil); res.StatusCode != http.StatusOK {
		t.Fatalf("empty PUT: got %d; want 200", res.StatusCode)
	}
	want := strings.Repeat("0123456789abcdef", 1000) + "tail"
	for pos := 0; pos < len(want); pos += 4096 {
		end := min(pos+4096, len(want))
		res, body := do(t, "PUT", url, strings.NewReader(want[pos:end]),
			map[string]string{"Content-Range": fmt.Sprintf("bytes %d-%d/*", pos, end-1)})
		if res.StatusCode != http.StatusOK {
			t.Fatalf("chunk at %d: got %d %q; want 200", pos, res.StatusCode, body)
		}
	}
	// Rewriting a range inside the file (a seek back) keeps the rest.
	res, _ := do(t, "PUT", url, strings.NewReader("XY"), map[string]string{"Content-Range": "bytes 3-4/16004"})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("rewrite inside the file: got %d; want 200", res.StatusCode)
	}
	want = want[:3] + "XY" + want[5:]
	got, err := os.ReadFile(filepath.Join(docroot, filepath.FromSlash(fidPath)))
	if err != nil || string(got) != want {
		t.Fatalf("file after ranged PUTs: %d bytes, %v; want %d bytes as sent", len(got), err, len(want))
	}
	if res, _ := do(t, "HEAD", url, nil, nil); res.Header.Get("Content-Length") != fmt.Sprint(len(want)) {
		t.Errorf("HEAD Content-Length = %q; want %d", res.Header.Get("Content-Length"), len(want))
	}
	if left := listDir(t, filepath.Dir(filepath.Join(docroot, filepath.FromSlash(fidPath)))); len(left) != 1 {
		t.Errorf("directory holds %v; want only the file (no temporaries)", left)
	}
}

// A ranged PUT that cannot be written as asked answers 4xx and leaves the
// file as it was.
func TestPut_ContentRangeRefused(t *testing.T) {
	s, docroot := startServer(t, nil)
	url := "http://" + s.HTTPAddr() + fidPath
	const orig = "0123456789"
	if res, _ := do(t, "PUT", url, strings.NewReader(orig), nil); res.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d", res.StatusCode)
	}
	sum := md5.Sum([]byte("other"))
	for _, c := range []struct {
		name, rng, body string
		hdr             map[string]string
		want            int
	}{
		{"NotBytes", "items 0-1/*", "ab", nil, 400},
		{"NoTotal", "bytes 0-1", "ab", nil, 400},
		{"Backwards", "bytes 5-4/*", "", nil, 400},
		{"EmptyRangeOfClientEmptyPrint", "bytes 10-9/*", "", nil, 400},
		{"Negative", "bytes -1-1/*", "abc", nil, 400},
		{"Spaces", "bytes 0 -1/*", "ab", nil, 400},
		{"PastTotal", "bytes 0-9/5", "0123456789", nil, 400},
		{"Unsatisfied", "bytes */10", "", nil, 400},
		{"BodyLongerThanRange", "bytes 0-1/*", "abc", nil, 400},
		{"BodyShorterThanRange", "bytes 0-4/*", "ab", nil, 400},
		{"Hole", "bytes 11-12/*", "ab", nil, 416},
		{"MD5Mismatch", "bytes 0-1/*", "ab", map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(sum[:])}, 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			hdr := map[string]string{"Content-Range": c.rng}
			for k, v := range c.hdr {
				hdr[k] = v
			}
			res, body := do(t, "PUT", url, strings.NewReader(c.body), hdr)
			if res.StatusCode != c.want {
				t.Errorf("PUT Content-Range %q: got %d %q; want %d", c.rng, res.StatusCode, body, c.want)
			}
			got, err := os.ReadFile(filepath.Join(docroot, filepath.FromSlash(fidPath)))
			if err != nil || string(got) != orig {
				t.Errorf("file after refused PUT = %q, %v; want %q", got, err, orig)
			}
		})
	}
	// A chunk beyond the end of a missing file creates nothing.
	missing := "http://" + s.HTTPAddr() + "/dev2/0/000/000/0000000124.fid"
	if res, _ := do(t, "PUT", missing, strings.NewReader("ab"), map[string]string{"Content-Range": "bytes 5-6/*"}); res.StatusCode != http.StatusRequestedRangeNotSatisfiable || res.Header.Get("Content-Range") != "bytes */0" {
		t.Errorf("range into a missing file: got %d, Content-Range %q; want 416, bytes */0", res.StatusCode, res.Header.Get("Content-Range"))
	}
	if _, err := os.Stat(filepath.Join(docroot, "dev2", "0", "000", "000", "0000000124.fid")); !os.IsNotExist(err) {
		t.Errorf("refused range created the file: %v", err)
	}
	if left := listDir(t, filepath.Join(docroot, "dev1", "0", "000", "000")); len(left) != 1 {
		t.Errorf("directory holds %v; want only the file", left)
	}
}
