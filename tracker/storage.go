package tracker

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"errors"
	"fmt"
	"github.com/gomogile/gomogile/tracker/jobs"
	"hash"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/store"
)

// errFileMissing is a storage node's 404 (HTTPFile's FILE_MISSING).
var errFileMissing = errors.New("file missing")

func newStorageClient(cfg Config) *http.Client {
	d := &net.Dialer{Timeout: cfg.ConnTimeout}
	return &http.Client{
		Transport: &http.Transport{
			DialContext:           d.DialContext,
			MaxIdleConnsPerHost:   cfg.ConnPoolSize,
			ResponseHeaderTimeout: cfg.NodeTimeout,
			IdleConnTimeout:       90 * time.Second,
			DisableCompression:    true,
		},
		// Storage nodes do not redirect; following one could leave the cluster.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// nodeTimeout bounds one small request to a storage node.
func (t *Tracker) nodeTimeout() time.Duration { return t.cfg.ConnTimeout + t.cfg.NodeTimeout }

// headSize is HTTPFile::size: the Content-Length of a HEAD, errFileMissing
// on 404, another error when the node cannot be reached or answers oddly.
func (t *Tracker) headSize(ctx context.Context, url string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, t.nodeTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return 0, errFileMissing
	case resp.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("HEAD %s: %s", url, resp.Status)
	}
	n, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("HEAD %s: bad Content-Length %q", url, resp.Header.Get("Content-Length"))
	}
	return n, nil
}

// digest fetches url and hashes it. The node timeout bounds each wait for
// data, not the whole transfer, so large files can be verified.
func (t *Tracker) digest(ctx context.Context, url string, ht store.HashType) ([]byte, error) {
	h := newHash(ht)
	if h == nil {
		return nil, fmt.Errorf("unknown hashtype %d", ht)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, errFileMissing
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if _, err := io.Copy(h, resp.Body); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return h.Sum(nil), nil
}

// mkcol creates the directories of fid on a device (Device::vivify_directories).
// It reports failure but create_open goes on regardless, as the original
// did: a storage node that creates directories on PUT needs no MKCOL.
func (t *Tracker) mkcol(ctx context.Context, base string, devid int, fid int64) error {
	if t.mkcols.skipDevice(devid) {
		return nil
	}
	for _, dir := range jobs.FidDirs(devid, fid) {
		url := base + dir + "/"
		if t.mkcols.done(url) {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, t.nodeTimeout())
		req, err := http.NewRequestWithContext(rctx, "MKCOL", url, nil)
		if err != nil {
			cancel()
			return err
		}
		req.ContentLength = 0
		resp, err := t.http.Do(req)
		cancel()
		if err != nil {
			return err
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300, resp.StatusCode == http.StatusMethodNotAllowed:
			// 405: the collection exists already.
			t.mkcols.mark(url)
		case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotImplemented:
			t.mkcols.setSkipDevice(devid)
			return nil
		default:
			return fmt.Errorf("MKCOL %s: %s", url, resp.Status)
		}
	}
	return nil
}

// Hash types by name, as MogileFS::Checksum numbers them.
var hashNames = map[string]store.HashType{"MD5": store.HashMD5, "SHA-1": 2}

func hashName(ht store.HashType) string {
	for n, v := range hashNames {
		if v == ht {
			return n
		}
	}
	return ""
}

func hashLen(ht store.HashType) int {
	switch ht {
	case store.HashMD5:
		return md5.Size
	case 2:
		return sha1.Size
	}
	return 0
}

func newHash(ht store.HashType) hash.Hash {
	switch ht {
	case store.HashMD5:
		return md5.New()
	case 2:
		return sha1.New()
	}
	return nil
}

// parseChecksum is Checksum::from_string: "MD5:<hex>".
func parseChecksum(s string) (store.HashType, []byte, error) {
	name, hexsum, ok := strings.Cut(s, ":")
	if !ok {
		return 0, nil, errors.New("invalid checksum string")
	}
	ht, ok := hashNames[name]
	if !ok {
		return 0, nil, fmt.Errorf("invalid checksum name (%s) from %s", name, s)
	}
	if len(hexsum) < 32 || len(hexsum) > 128 || len(hexsum)%2 != 0 {
		return 0, nil, errors.New("invalid checksum string")
	}
	sum := make([]byte, len(hexsum)/2)
	for i := range sum {
		a, b := hexsum[2*i], hexsum[2*i+1]
		if !isHex(a) || !isHex(b) {
			return 0, nil, errors.New("invalid checksum string")
		}
		sum[i] = unhex(a)<<4 | unhex(b)
	}
	if len(sum) != hashLen(ht) {
		return 0, nil, fmt.Errorf("invalid checksum length=%d (expected %d)", len(sum), hashLen(ht))
	}
	return ht, sum, nil
}

func checksumInfo(ht store.HashType, sum []byte) string {
	return hashName(ht) + ":" + fmt.Sprintf("%x", sum)
}
