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
// destination makes the policy suggest another. disagree marks a source
// read that a second, independent read (or the recorded checksum)
// contradicted: one bad read, which earns the source one more try.
type copyError struct {
	src      bool
	disagree bool
	err      error
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
	s.h.Write(p[:n])
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// copyBlob streams fid from src to dst (Replicate::http_copy) and returns
// only once the copy is proved, so that no single read decides what the
// file's bytes are (the package doc's "Copies and checksums"):
//
//   - GET the source (from its get port with repl_use_get_port, else its
//     http port, as the original), check Content-Length against the
//     file's length, and PUT the bytes with Content-Length (and
//     Content-MD5 when the known checksum is an MD5), digesting them on the
//     way with the known checksum's algorithm, else the class's (ht), else
//     MD5 (used only to check this copy, never recorded);
//   - bytes that do not match the known checksum are a bad source read;
//   - the destination proves it holds the bytes: HEAD gives the length and
//     a digest of the stored copy (its management port, else a GET) gives
//     the same sum, else it is a destination error;
//   - with no known checksum, the source is read a second time
//     independently (its management port digests the blob on its own disk,
//     else a second GET) and must agree with the bytes moved, else the
//     first read was bad.
//
// A copy refused after its PUT is deleted from the destination. The
// returned digest is the one to record as the file's checksum: the class's
// algorithm's, established by the two agreeing reads, and nil when a
// checksum was known already or the class keeps none.
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
	if alg.New() == nil {
		alg = store.HashMD5
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
	got := sr.h.Sum(nil)
	if known != nil && !bytes.Equal(got, known.Sum) {
		if presp.StatusCode/100 == 2 {
			m.discardCopy(ctx, dst, fid)
		}
		return nil, &copyError{src: true, disagree: true, err: fmt.Errorf("GET %s: checksum mismatch: got %s:%x, want %s:%x", surl, alg, got, alg, known.Sum)}
	}
	if presp.StatusCode/100 != 2 {
		return nil, &copyError{err: fmt.Errorf("PUT %s: HTTP %d", durl, presp.StatusCode)}
	}
	if err := m.proveCopy(ctx, dst, fid, length, alg, got); err != nil {
		if ctx.Err() == nil {
			m.discardCopy(ctx, dst, fid)
		}
		return nil, &copyError{err: fmt.Errorf("PUT %s: %w", durl, err)}
	}
	if known != nil {
		return nil, nil
	}
	again, err := m.digest(ctx, src, fid, length, alg, m.opts.ReplUseGetPort, "")
	if err == nil && !bytes.Equal(again, got) {
		err = fmt.Errorf("a second read gives %s:%x, the bytes copied %s:%x", alg, again, alg, got)
	}
	if err != nil {
		if ctx.Err() == nil {
			m.discardCopy(ctx, dst, fid)
		}
		return nil, &copyError{src: true, disagree: true, err: fmt.Errorf("GET %s: not confirmed: %w", surl, err)}
	}
	if ht == store.HashNone || ht != alg {
		return nil, nil
	}
	return got, nil
}

// proveCopy checks that dst holds fid's bytes: the length by HEAD, then the
// digest of what it stored. A node that acknowledged a PUT and answers
// HEAD with the right length proves nothing by that alone.
func (m *Manager) proveCopy(ctx context.Context, dst *device, fid, length int64, alg store.HashType, want []byte) error {
	sz, err := m.nodes.Size(ctx, dst.FidURL(fid, false))
	if err != nil {
		return err
	}
	if sz != length {
		return fmt.Errorf("stored %s bytes, want %d", strconv.FormatInt(sz, 10), length)
	}
	stored, err := m.digest(ctx, dst, fid, length, alg, false, "")
	if err != nil {
		return fmt.Errorf("digest of the copy: %w", err)
	}
	if !bytes.Equal(stored, want) {
		return fmt.Errorf("checksum mismatch: stored %s:%x, sent %s:%x", alg, stored, alg, want)
	}
	return nil
}

// discardCopy deletes a refused copy from its destination, so that no
// unproved bytes stay where a later search (fsck's) could take them for
// the file. The device is in no file_on row for fid: the policy never
// picks a device that holds the file.
func (m *Manager) discardCopy(ctx context.Context, dst *device, fid int64) {
	if err := m.nodes.Remove(ctx, dst.FidURL(fid, false), true); err != nil {
		m.log.Warn("could not delete a refused copy", "job", JobReplicate, "fid", fid, "dev", dst.ID, "err", err)
	}
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
