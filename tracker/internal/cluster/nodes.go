package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// ErrMissing is a storage node's 404 (HTTPFile's FILE_MISSING).
var ErrMissing = errors.New("blob missing on storage node")

// NodeConfig are the settings of the storage-node client.
type NodeConfig struct {
	// ConnTimeout bounds connecting to a node (conn_timeout).
	ConnTimeout time.Duration
	// NodeTimeout bounds each wait for a node's answer: the response
	// headers of any request, and the whole of a small request such as
	// HEAD, MKCOL or DELETE (node_timeout).
	NodeTimeout time.Duration
	// PoolSize is the idle connections kept per node (conn_pool_size).
	PoolSize int
}

// DefaultNodeConfig are the original's defaults: conn_timeout 2 s,
// node_timeout 2 s, conn_pool_size 20.
func DefaultNodeConfig() NodeConfig {
	return NodeConfig{ConnTimeout: 2 * time.Second, NodeTimeout: 2 * time.Second, PoolSize: 20}
}

func (c NodeConfig) withDefaults() NodeConfig {
	d := DefaultNodeConfig()
	if c.ConnTimeout <= 0 {
		c.ConnTimeout = d.ConnTimeout
	}
	if c.NodeTimeout <= 0 {
		c.NodeTimeout = d.NodeTimeout
	}
	if c.PoolSize <= 0 {
		c.PoolSize = d.PoolSize
	}
	return c
}

// NewHTTPClient is the HTTP client for storage nodes built from c. It has
// no overall timeout, since copying a large blob may take long; connecting
// and each response's headers are bounded instead. It never follows a
// redirect: storage nodes do not redirect, and following one could leave
// the cluster.
func NewHTTPClient(c NodeConfig) *http.Client {
	c = c.withDefaults()
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: c.ConnTimeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost:   c.PoolSize,
			ResponseHeaderTimeout: c.NodeTimeout,
			IdleConnTimeout:       90 * time.Second,
			DisableCompression:    true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Nodes speaks HTTP to storage nodes: the one client the tracker's
// commands and the workers share.
type Nodes struct {
	c     *http.Client
	conn  time.Duration // bound of a connect (conn_timeout)
	small time.Duration // bound of a small request: connect + answer
	idle  time.Duration // bound of each wait for a body's next bytes

	mu      sync.Mutex
	made    map[string]time.Time // collection URL -> when MKCOL succeeded
	cleaned time.Time
	noMkcol map[int]bool // devices whose node answered MKCOL with 400 or 501
}

// NewNodes builds the client; a nil hc gets NewHTTPClient(c).
func NewNodes(c NodeConfig, hc *http.Client) *Nodes {
	c = c.withDefaults()
	if hc == nil {
		hc = NewHTTPClient(c)
	}
	return &Nodes{c: hc, conn: c.ConnTimeout, small: c.ConnTimeout + c.NodeTimeout, idle: c.NodeTimeout}
}

// HTTPClient is the underlying client.
func (n *Nodes) HTTPClient() *http.Client { return n.c }

// CloseIdleConnections drops idle connections.
func (n *Nodes) CloseIdleConnections() { n.c.CloseIdleConnections() }

// Do sends one request; body with size sets Content-Length.
func (n *Nodes) Do(ctx context.Context, method, url string, body io.Reader, size int64, hdr http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
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
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	return resp, nil
}

// Stream sends a request whose response body may be long (a whole blob):
// no overall deadline, but the request is cancelled when the node sends
// nothing for node_timeout, before the headers or between two reads of the
// body, so a node that stalls mid-transfer does not hold the caller
// forever. The caller closes the body.
func (n *Nodes) Stream(ctx context.Context, method, url string, body io.Reader, size int64, hdr http.Header) (*http.Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	stall := time.AfterFunc(n.idle, cancel)
	resp, err := n.Do(ctx, method, url, body, size, hdr)
	if err != nil {
		fired := !stall.Stop()
		cancel()
		if fired {
			return nil, fmt.Errorf("%w (nothing from the node for node_timeout %v)", err, n.idle)
		}
		return nil, err
	}
	stall.Reset(n.idle)
	resp.Body = &idleBody{ReadCloser: resp.Body, stall: stall, idle: n.idle, cancel: cancel}
	return resp, nil
}

// idleBody restarts its stall timer on every read that brings bytes.
type idleBody struct {
	io.ReadCloser
	stall  *time.Timer
	idle   time.Duration
	cancel context.CancelFunc
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.stall.Reset(b.idle)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.stall.Stop()
	b.cancel()
	return b.ReadCloser.Close()
}

// Drain reads a little of a response body and closes it, so that the
// connection can be reused.
func Drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// Size HEADs url (HTTPFile::size): the blob's length, ErrMissing on 404,
// another error when the node cannot be reached or answers oddly. The whole
// request is bounded by conn_timeout + node_timeout.
func (n *Nodes) Size(ctx context.Context, url string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, n.small)
	defer cancel()
	resp, err := n.Do(ctx, http.MethodHead, url, nil, 0, nil)
	if err != nil {
		return 0, err
	}
	Drain(resp)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return 0, fmt.Errorf("HEAD %s: %w", url, ErrMissing)
	case resp.StatusCode/100 != 2:
		return 0, fmt.Errorf("HEAD %s: %s", url, resp.Status)
	case resp.ContentLength < 0:
		return 0, fmt.Errorf("HEAD %s: no Content-Length", url)
	}
	return resp.ContentLength, nil
}

// Digest GETs url into h (HTTPFile::digest_http). node_timeout bounds each
// wait for the node (Stream), not the whole transfer, so large blobs can
// be read.
func (n *Nodes) Digest(ctx context.Context, url string, h hash.Hash) ([]byte, error) {
	resp, err := n.Stream(ctx, http.MethodGet, url, nil, 0, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("GET %s: %w", url, ErrMissing)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if _, err := io.Copy(h, resp.Body); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return h.Sum(nil), nil
}

// Remove DELETEs url. With missingOK a 404 counts as done, as
// Worker::Delete::delete_devfid and DevFID::destroy(ignore_missing) have
// it; without, it is ErrMissing.
func (n *Nodes) Remove(ctx context.Context, url string, missingOK bool) error {
	ctx, cancel := context.WithTimeout(ctx, n.small)
	defer cancel()
	resp, err := n.Do(ctx, http.MethodDelete, url, nil, 0, nil)
	if err != nil {
		return err
	}
	Drain(resp)
	switch {
	case resp.StatusCode/100 == 2, resp.StatusCode == http.StatusNotFound && missingOK:
		return nil
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("DELETE %s: %w", url, ErrMissing)
	}
	return fmt.Errorf("DELETE %s: %s", url, resp.Status)
}

// Mkcol creates the collections of fid's path on device devid at base
// (Device::vivify_directories), remembering successes for an hour as the
// original does, and devices whose node answers MKCOL with 400 or 501
// (servers that need none). An error is worth a warning only: a node that
// creates directories on PUT needs no MKCOL, and the PUT tells.
func (n *Nodes) Mkcol(ctx context.Context, base string, devid int, fid int64) error {
	return n.MkcolDirs(ctx, base, devid, FidDirs(devid, fid))
}

// MkcolDirs creates the collections dirs (outermost first) on device devid
// at base, as Mkcol does for a blob's.
func (n *Nodes) MkcolDirs(ctx context.Context, base string, devid int, dirs []string) error {
	if n.skipMkcol(devid) {
		return nil
	}
	for _, dir := range dirs {
		url := base + dir + "/"
		if n.mkcolDone(url) {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, n.small)
		resp, err := n.Do(rctx, "MKCOL", url, bytes.NewReader(nil), 0, nil)
		if err != nil {
			cancel()
			return err
		}
		Drain(resp)
		cancel()
		switch {
		case resp.StatusCode/100 == 2, resp.StatusCode == http.StatusMethodNotAllowed:
			// 405: the collection exists already.
			n.markMkcol(url)
		case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotImplemented:
			n.mu.Lock()
			if n.noMkcol == nil {
				n.noMkcol = map[int]bool{}
			}
			n.noMkcol[devid] = true
			n.mu.Unlock()
			return nil
		default:
			return fmt.Errorf("MKCOL %s: %s", url, resp.Status)
		}
	}
	return nil
}

func (n *Nodes) skipMkcol(devid int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.noMkcol[devid]
}

func (n *Nodes) mkcolDone(url string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.made[url]
	return ok && time.Since(t) < time.Hour
}

func (n *Nodes) markMkcol(url string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.made == nil {
		n.made = map[string]time.Time{}
	}
	now := time.Now()
	n.made[url] = now
	if now.Sub(n.cleaned) > 5*time.Minute {
		n.cleaned = now
		for k, v := range n.made {
			if now.Sub(v) > time.Hour {
				delete(n.made, k)
			}
		}
	}
}
