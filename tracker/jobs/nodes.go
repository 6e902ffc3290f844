package jobs

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// newHTTPClient is the one client the workers share when the caller gives
// none. No overall Timeout: a copy of a large file may take long; instead
// connecting and waiting for response headers are bounded, like the
// original's conn_timeout and SOCK_TIMEOUT.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ResponseHeaderTimeout: 45 * time.Second,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
	}}
}

// copyError says which end of a copy failed, as http_copy's src_error and
// dest_error do: a failed source is not tried again this round, a failed
// destination makes the policy suggest another.
type copyError struct {
	src bool
	err error
}

func (e *copyError) Error() string {
	side := "destination"
	if e.src {
		side = "source"
	}
	return side + ": " + e.err.Error()
}
func (e *copyError) Unwrap() error { return e.err }

// errMissing: the storage node answered 404.
var errMissing = errors.New("jobs: blob missing on storage node")

// nodes speaks HTTP to storage nodes.
type nodes struct {
	c *http.Client

	mu  sync.Mutex
	dir map[string]time.Time // collection URL -> when MKCOL succeeded
}

func (n *nodes) do(ctx context.Context, method, url string, body io.Reader, size int64, hdr http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, fmt.Errorf("jobs: %s %s: %w", method, url, err)
	}
	if body != nil {
		req.ContentLength = size
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := n.c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jobs: %s %s: %w", method, url, err)
	}
	return resp, nil
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// mkcols creates the collections of a blob path, remembering successes for
// an hour as the original does. Failures are not fatal: servers that create
// directories on PUT answer MKCOL with an error the PUT then contradicts.
func (n *nodes) mkcols(ctx context.Context, base string, dirs []string) {
	for _, d := range dirs {
		u := base + d + "/"
		n.mu.Lock()
		if n.dir == nil {
			n.dir = map[string]time.Time{}
		}
		t, ok := n.dir[u]
		n.mu.Unlock()
		if ok && time.Since(t) < time.Hour {
			continue
		}
		resp, err := n.do(ctx, "MKCOL", u, bytes.NewReader(nil), 0, nil)
		if err != nil {
			return
		}
		drain(resp)
		// 405: it exists already.
		if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusMethodNotAllowed {
			n.mu.Lock()
			n.dir[u] = time.Now()
			n.mu.Unlock()
		}
	}
}

// size HEADs url: the blob's length, errMissing on 404, other errors on
// connectivity problems (HTTPFile::size).
func (n *nodes) size(ctx context.Context, url string) (int64, error) {
	resp, err := n.do(ctx, http.MethodHead, url, nil, 0, nil)
	if err != nil {
		return 0, err
	}
	drain(resp)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return 0, errMissing
	case resp.StatusCode/100 != 2:
		return 0, fmt.Errorf("jobs: HEAD %s: HTTP %d", url, resp.StatusCode)
	case resp.ContentLength < 0:
		return 0, fmt.Errorf("jobs: HEAD %s: no Content-Length", url)
	}
	return resp.ContentLength, nil
}

// md5sum GETs url and hashes it (HTTPFile::digest_http).
func (n *nodes) md5sum(ctx context.Context, url string) ([]byte, error) {
	resp, err := n.do(ctx, http.MethodGet, url, nil, 0, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, errMissing
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("jobs: GET %s: HTTP %d", url, resp.StatusCode)
	}
	h := md5.New()
	if _, err := io.Copy(h, resp.Body); err != nil {
		return nil, fmt.Errorf("jobs: GET %s: %w", url, err)
	}
	return h.Sum(nil), nil
}

// remove DELETEs url; 404 counts as done (Worker::Delete::delete_devfid).
func (n *nodes) remove(ctx context.Context, url string) error {
	resp, err := n.do(ctx, http.MethodDelete, url, nil, 0, nil)
	if err != nil {
		return err
	}
	drain(resp)
	if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusNotFound {
		return nil
	}
	return fmt.Errorf("jobs: DELETE %s: HTTP %d", url, resp.StatusCode)
}

// srcReader remembers whether reading the source failed, so that a failed
// PUT can be blamed on the right end.
type srcReader struct {
	r   io.Reader
	h   hash.Hash
	n   int64
	err error
}

func (s *srcReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n += int64(n)
	if s.h != nil {
		s.h.Write(p[:n])
	}
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// copyBlob streams fid from src to dst (Replicate::http_copy): GET, check
// Content-Length against the file's length, PUT with Content-Length (and
// Content-MD5 when the checksum is known), then HEAD the copy to check its
// length. It returns the MD5 of the bytes it moved when wantMD5 is set or
// sum is known; a known sum that does not match is a source error.
func (n *nodes) copyBlob(ctx context.Context, src, dst *device, fid, length int64, sum []byte, wantMD5 bool) ([]byte, error) {
	surl := src.fidURL(fid, true)
	resp, err := n.do(ctx, http.MethodGet, surl, nil, 0, nil)
	if err != nil {
		return nil, &copyError{src: true, err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		drain(resp)
		return nil, &copyError{src: true, err: fmt.Errorf("GET %s: HTTP %d", surl, resp.StatusCode)}
	}
	if resp.ContentLength != length {
		return nil, &copyError{src: true, err: fmt.Errorf("GET %s: Content-Length %d, want %d", surl, resp.ContentLength, length)}
	}

	n.mkcols(ctx, dst.baseURL(false), FidDirs(dst.ID, fid))
	sr := &srcReader{r: io.LimitReader(resp.Body, length)}
	if sum != nil || wantMD5 {
		sr.h = md5.New()
	}
	var hdr http.Header
	if len(sum) == md5.Size {
		hdr = http.Header{"Content-Md5": {base64.StdEncoding.EncodeToString(sum)}}
	}
	durl := dst.fidURL(fid, false)
	presp, err := n.do(ctx, http.MethodPut, durl, sr, length, hdr)
	if sr.err != nil {
		return nil, &copyError{src: true, err: fmt.Errorf("GET %s: reading body: %w", surl, sr.err)}
	}
	if err != nil {
		return nil, &copyError{err: err}
	}
	drain(presp)
	if sr.n != length {
		return nil, &copyError{src: true, err: fmt.Errorf("GET %s: body ended after %d of %d bytes", surl, sr.n, length)}
	}
	var got []byte
	if sr.h != nil {
		got = sr.h.Sum(nil)
		if sum != nil && !bytes.Equal(got, sum) {
			return nil, &copyError{src: true, err: fmt.Errorf("GET %s: checksum mismatch: got %x, want %x", surl, got, sum)}
		}
	}
	if presp.StatusCode/100 != 2 {
		return nil, &copyError{err: fmt.Errorf("PUT %s: HTTP %d", durl, presp.StatusCode)}
	}
	sz, err := n.size(ctx, durl)
	if err != nil {
		return nil, &copyError{err: err}
	}
	if sz != length {
		return nil, &copyError{err: fmt.Errorf("PUT %s: stored %s bytes, want %d", durl, strconv.FormatInt(sz, 10), length)}
	}
	return got, nil
}
