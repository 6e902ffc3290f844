package jobs

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
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
// original), check Content-Length against the file's length, PUT with
// Content-Length (and Content-MD5 when the known checksum is an MD5), then
// HEAD the copy to check its length. The bytes moved are digested with
// the known checksum's algorithm, else with ht (the class's; HashNone:
// not at all): a known checksum that does not match is a source error,
// and the copy is digested again on the destination (unless it is an MD5
// the destination checked against Content-MD5 already), a mismatch there
// being a destination error. It returns the digest of the bytes moved, nil
// when nothing was digested.
func (m *Manager) copyBlob(ctx context.Context, src, dst *device, fid, length int64, known *store.Checksum, ht store.HashType) ([]byte, error) {
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
	alg := ht
	if known != nil {
		alg = known.HashType
	}
	sr := &srcReader{r: io.LimitReader(resp.Body, length), h: alg.New()}
	var hdr http.Header
	if known != nil && known.HashType == store.HashMD5 {
		hdr = http.Header{"Content-Md5": {base64.StdEncoding.EncodeToString(known.Sum)}}
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
		if known != nil && !bytes.Equal(got, known.Sum) {
			return nil, &copyError{src: true, err: fmt.Errorf("GET %s: checksum mismatch: got %s:%x, want %s:%x", surl, alg, got, alg, known.Sum)}
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
	if got != nil && !(alg == store.HashMD5 && hdr != nil && dst.Obs.RejectBadMD5OK && dst.Obs.RejectBadMD5) {
		stored, err := m.digest(ctx, dst, fid, length, alg, false, "")
		if err != nil {
			return nil, &copyError{err: fmt.Errorf("PUT %s: digest of the copy: %w", durl, err)}
		}
		if !bytes.Equal(stored, got) {
			return nil, &copyError{err: fmt.Errorf("PUT %s: checksum mismatch: stored %s:%x, sent %s:%x", durl, alg, stored, alg, got)}
		}
	}
	return got, nil
}

// digest is HTTPFile::digest: the digest of fid's copy on d, asked of the
// storage node's management port (mogstored_stream_port) first, then read
// over HTTP (from the get port when get is set) when the side channel
// fails or reports the blob missing, as the original falls back. reason
// is what the node is told ("fsck" queues the digest behind the device's
// other fsck digests).
func (m *Manager) digest(ctx context.Context, d *device, fid, length int64, ht store.HashType, get bool, reason string) ([]byte, error) {
	h := ht.New()
	if h == nil {
		return nil, fmt.Errorf("jobs: digest fid %d: unknown hashtype %d", fid, ht)
	}
	if m.opts.StreamPort > 0 {
		addr := net.JoinHostPort(d.Host.IP, strconv.Itoa(m.opts.StreamPort))
		sum, err := m.nodes.MgmtDigest(ctx, addr, cluster.FidPath(d.ID, fid), ht, reason, length)
		if err == nil {
			return sum, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, cluster.ErrMissing) {
			m.log.Debug("side-channel digest failed; reading over HTTP", "fid", fid, "dev", d.ID, "err", err)
		}
	}
	return m.nodes.Digest(ctx, d.FidURL(fid, get), h)
}
