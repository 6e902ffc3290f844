package jobs

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
	"hash"
	"io"
	"net/http"
	"strconv"
)

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

// copyBlob streams fid from src to dst (Replicate::http_copy): GET (from
// the source's get port with repl_use_get_port, else its http port, as the
// original), check
// Content-Length against the file's length, PUT with Content-Length (and
// Content-MD5 when the checksum is known), then HEAD the copy to check its
// length. It returns the MD5 of the bytes it moved when wantMD5 is set or
// sum is known; a known sum that does not match is a source error.
func (m *Manager) copyBlob(ctx context.Context, src, dst *device, fid, length int64, sum []byte, wantMD5 bool) ([]byte, error) {
	n := m.nodes
	surl := src.FidURL(fid, m.opts.ReplUseGetPort)
	// A source that stalls mid-body fails after node_timeout, not after
	// the item's lease.
	resp, err := n.Stream(ctx, http.MethodGet, surl, nil, 0, nil)
	if err != nil {
		return nil, &copyError{src: true, err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		cluster.Drain(resp)
		return nil, &copyError{src: true, err: fmt.Errorf("GET %s: HTTP %d", surl, resp.StatusCode)}
	}
	if resp.ContentLength != length {
		return nil, &copyError{src: true, err: fmt.Errorf("GET %s: Content-Length %d, want %d", surl, resp.ContentLength, length)}
	}

	n.Mkcol(ctx, dst.BaseURL(false), dst.ID, fid)
	sr := &srcReader{r: io.LimitReader(resp.Body, length)}
	if sum != nil || wantMD5 {
		sr.h = md5.New()
	}
	var hdr http.Header
	if len(sum) == md5.Size {
		hdr = http.Header{"Content-Md5": {base64.StdEncoding.EncodeToString(sum)}}
	}
	durl := dst.FidURL(fid, false)
	presp, err := n.Do(ctx, http.MethodPut, durl, sr, length, hdr)
	if sr.err != nil {
		return nil, &copyError{src: true, err: fmt.Errorf("GET %s: reading body: %w", surl, sr.err)}
	}
	if err != nil {
		return nil, &copyError{err: err}
	}
	cluster.Drain(presp)
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
	sz, err := n.Size(ctx, durl)
	if err != nil {
		return nil, &copyError{err: err}
	}
	if sz != length {
		return nil, &copyError{err: fmt.Errorf("PUT %s: stored %s bytes, want %d", durl, strconv.FormatInt(sz, 10), length)}
	}
	return got, nil
}
