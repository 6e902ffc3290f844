package client

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
)

// StoreOptions are the optional parts of StoreFileWith.
type StoreOptions struct {
	// Checksum, as "MD5:<hex>", is passed to create_close; the tracker
	// saves it if the class has a hashtype.
	Checksum string
	// ChecksumVerify asks the tracker to read the stored blob back and
	// compare it with Checksum (create_close's checksumverify=1); a
	// difference fails with ErrChecksumMismatch.
	ChecksumVerify bool
	// ComputeMD5 computes the MD5 of the data while uploading and sends
	// it as Checksum with ChecksumVerify, as MogileFS::Client does for
	// classes with hashtype MD5.
	ComputeMD5 bool
}

// StoreFile stores r under key in domain with the given class ("" for the
// domain's default class) and returns the bytes written.
//
// size is the length of r, or -1 if unknown. Storage nodes are sent a
// Content-Length, so when size is -1 and r cannot seek, r is first spooled
// to a temporary file.
//
// The tracker is asked for several destinations (create_open with
// multi_dest=1); each is tried in order until one PUT succeeds, then the
// upload is committed with create_close (fid, devid, path, size). Trying a
// later destination needs r again: it is rewound if it is an io.Seeker
// (or spooled); otherwise only destinations that failed before reading any
// of r are skipped.
func (c *Client) StoreFile(ctx context.Context, domain, key, class string, r io.Reader, size int64) (int64, error) {
	return c.StoreFileWith(ctx, domain, key, class, r, size, nil)
}

// StoreFileWith is StoreFile with checksum options (nil for none).
func (c *Client) StoreFileWith(ctx context.Context, domain, key, class string, r io.Reader, size int64, opts *StoreOptions) (int64, error) {
	domain = c.domain(domain)
	if opts == nil {
		opts = &StoreOptions{}
	}
	if key == "" {
		return 0, fmt.Errorf("mogilefs store: %w", ErrNoKey)
	}

	body, size, cleanup, err := prepareBody(r, size)
	if err != nil {
		return 0, fmt.Errorf("mogilefs store %q: %w", key, err)
	}
	defer cleanup()

	args := url.Values{"domain": {domain}, "key": {key}, "multi_dest": {"1"}}
	if class != "" {
		args.Set("class", class)
	}
	if size > 0 {
		// Lets the tracker skip devices without room (cmd_create_open).
		args.Set("size", strconv.FormatInt(size, 10))
	}
	reply, err := c.do(ctx, "create_open", args)
	if err != nil {
		return 0, fmt.Errorf("mogilefs store %q: %w", key, err)
	}
	fid := reply.Get("fid")
	dests := parseDests(reply)
	if fid == "" || len(dests) == 0 {
		return 0, fmt.Errorf("mogilefs store %q: %w: create_open reply without fid or path", key, ErrProtocol)
	}

	var errs []error
	for i, d := range dests {
		if i > 0 && !body.rewind() {
			errs = append(errs, errors.New("cannot rewind the data for the next destination"))
			break
		}
		var h hash.Hash
		if opts.ComputeMD5 {
			h = md5.New()
		}
		n, err := c.put(ctx, d.path, body, size, h)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.path, err))
			c.log.Warn("mogilefs PUT failed", "path", d.path, "err", err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		cargs := url.Values{
			"domain": {domain}, "key": {key}, "fid": {fid},
			"devid": {d.devid}, "path": {d.path},
			"size": {strconv.FormatInt(n, 10)},
		}
		sum, verify := opts.Checksum, opts.ChecksumVerify
		if h != nil {
			sum, verify = "MD5:"+hex.EncodeToString(h.Sum(nil)), true
		}
		if sum != "" {
			cargs.Set("checksum", sum)
			if verify {
				cargs.Set("checksumverify", "1")
			}
		}
		if _, err := c.do(ctx, "create_close", cargs); err != nil {
			return 0, fmt.Errorf("mogilefs store %q: %w", key, err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("mogilefs store %q: %w: %w", key, ErrAllPathsFailed, errors.Join(errs...))
}

type dest struct{ devid, path string }

// parseDests reads create_open's reply: dev_count, devid_N, path_N with
// multi_dest, else the single devid/path pair.
func parseDests(v url.Values) []dest {
	var out []dest
	if n, err := strconv.Atoi(v.Get("dev_count")); err == nil {
		// Each destination is a reply field: a larger count is a lie
		// that would loop for minutes (dev_count=2000000000).
		n = min(n, len(v))
		for i := 1; i <= n; i++ {
			p := v.Get("path_" + strconv.Itoa(i))
			if p == "" {
				continue
			}
			out = append(out, dest{devid: v.Get("devid_" + strconv.Itoa(i)), path: p})
		}
	}
	if len(out) == 0 && v.Get("path") != "" {
		out = append(out, dest{devid: v.Get("devid"), path: v.Get("path")})
	}
	return out
}

// body is the upload source, counting what was read so a failed PUT can
// tell whether a retry needs a rewind.
type body struct {
	r      io.Reader
	seeker io.Seeker
	start  int64
	read   int64
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

func (b *body) rewind() bool {
	if b.read == 0 {
		return true
	}
	if b.seeker == nil {
		return false
	}
	if _, err := b.seeker.Seek(b.start, io.SeekStart); err != nil {
		return false
	}
	b.read = 0
	return true
}

// prepareBody makes sure the size is known and, where possible, that the
// data can be read again.
func prepareBody(r io.Reader, size int64) (*body, int64, func(), error) {
	noop := func() {}
	if s, ok := r.(io.Seeker); ok {
		start, err := s.Seek(0, io.SeekCurrent)
		if err == nil {
			if size < 0 {
				end, err := s.Seek(0, io.SeekEnd)
				if err != nil {
					return nil, 0, noop, err
				}
				if _, err := s.Seek(start, io.SeekStart); err != nil {
					return nil, 0, noop, err
				}
				size = end - start
			}
			return &body{r: r, seeker: s, start: start}, size, noop, nil
		}
	}
	if size >= 0 {
		return &body{r: r}, size, noop, nil
	}
	f, err := os.CreateTemp("", "mogilefs-upload-*")
	if err != nil {
		return nil, 0, noop, fmt.Errorf("spool: %w", err)
	}
	cleanup := func() {
		f.Close()
		os.Remove(f.Name())
	}
	n, err := io.Copy(f, r)
	if err != nil {
		cleanup()
		return nil, 0, noop, fmt.Errorf("spool: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		cleanup()
		return nil, 0, noop, fmt.Errorf("spool: %w", err)
	}
	return &body{r: f, seeker: f}, n, cleanup, nil
}

func (c *Client) put(ctx context.Context, path string, b *body, size int64, h hash.Hash) (int64, error) {
	var r io.Reader = io.LimitReader(b, size)
	if h != nil {
		r = io.TeeReader(r, h)
	}
	pb := &putBody{r: r, done: make(chan struct{})}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, path, pb)
	if err != nil {
		return 0, err
	}
	req.ContentLength = size
	if size == 0 {
		// A zero-length reader body would go out chunked; NoBody
		// sends "Content-Length: 0".
		req.Body = http.NoBody
		pb.Close()
	}
	resp, err := c.http.Do(req)
	if err == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}
	// The transport may still be reading the body after Do returns (a
	// storage node that answered early); wait until it lets go, so the
	// data can be rewound for the next destination without a race.
	select {
	case <-pb.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if err != nil {
		return 0, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, fmt.Errorf("PUT: HTTP %s", resp.Status)
	}
	if pb.n != size {
		return 0, fmt.Errorf("PUT: sent %d of %d bytes", pb.n, size)
	}
	return pb.n, nil
}

// putBody counts what the transport read and reports when it is done
// with the body (RoundTrip always closes it, on errors too).
type putBody struct {
	r    io.Reader
	n    int64
	once sync.Once
	done chan struct{}
}

func (p *putBody) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	return n, err
}

func (p *putBody) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

// PathOptions tune GetPaths. A nil *PathOptions asks for the defaults.
type PathOptions struct {
	// Verify asks the tracker to check the first path's size on the
	// storage node (noverify=0). MogileFS::Client skips that by default,
	// and so does this client.
	Verify bool
	// PathCount is how many paths to ask for (tracker default 2).
	PathCount int
}

// GetPaths returns the URLs holding key, best first (cmd_get_paths:
// paths, path1..pathN). An unknown key fails with ErrUnknownKey.
func (c *Client) GetPaths(ctx context.Context, domain, key string, opts *PathOptions) ([]string, error) {
	args := url.Values{"domain": {c.domain(domain)}, "key": {key}, "noverify": {"1"}}
	if opts != nil {
		if opts.Verify {
			args.Set("noverify", "0")
		}
		if opts.PathCount > 0 {
			args.Set("pathcount", strconv.Itoa(opts.PathCount))
		}
	}
	reply, err := c.do(ctx, "get_paths", args)
	if err != nil {
		return nil, fmt.Errorf("mogilefs get_paths %q: %w", key, err)
	}
	n, err := count(reply, "paths")
	if err != nil {
		return nil, fmt.Errorf("mogilefs get_paths %q: %w", key, err)
	}
	paths := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		if p := reply.Get("path" + strconv.Itoa(i)); p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// FetchFile returns the content of key, read from the first path that
// answers 200 OK; the others are tried in turn. The caller must close the
// reader. ctx governs the whole read, so do not cancel it before reading
// to the end.
func (c *Client) FetchFile(ctx context.Context, domain, key string) (io.ReadCloser, error) {
	paths, err := c.GetPaths(ctx, domain, key, nil)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, p := range paths {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resp, err := c.http.Do(req)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			errs = append(errs, fmt.Errorf("%s: HTTP %s", p, resp.Status))
			continue
		}
		return resp.Body, nil
	}
	if len(paths) == 0 {
		errs = append(errs, errors.New("tracker returned no paths"))
	}
	return nil, fmt.Errorf("mogilefs fetch %q: %w: %w", key, ErrAllPathsFailed, errors.Join(errs...))
}

// Delete removes key (cmd_delete); the tracker queues its blobs for
// deletion. An unknown key fails with ErrUnknownKey.
func (c *Client) Delete(ctx context.Context, domain, key string) error {
	_, err := c.do(ctx, "delete", url.Values{"domain": {c.domain(domain)}, "key": {key}})
	if err != nil {
		return fmt.Errorf("mogilefs delete %q: %w", key, err)
	}
	return nil
}

// Rename moves fromKey to toKey (cmd_rename: from_key, to_key). It fails
// with ErrUnknownKey or ErrKeyExists.
func (c *Client) Rename(ctx context.Context, domain, fromKey, toKey string) error {
	_, err := c.do(ctx, "rename", url.Values{"domain": {c.domain(domain)}, "from_key": {fromKey}, "to_key": {toKey}})
	if err != nil {
		return fmt.Errorf("mogilefs rename %q to %q: %w", fromKey, toKey, err)
	}
	return nil
}

// UpdateFileClass moves key to another class of its domain
// (cmd_updateclass), which queues it for replication.
func (c *Client) UpdateFileClass(ctx context.Context, domain, key, class string) error {
	_, err := c.do(ctx, "updateclass", url.Values{"domain": {c.domain(domain)}, "key": {key}, "class": {class}})
	if err != nil {
		return fmt.Errorf("mogilefs updateclass %q: %w", key, err)
	}
	return nil
}

// ListKeys lists up to limit keys starting with prefix, after the key
// after, in the tracker's order (cmd_list_keys: key_count, key_N,
// next_after; the tracker caps limit at 1000, 0 means 1000). It returns
// the keys and the value to pass as after for the next page; no keys (the
// tracker's none_match) is not an error.
func (c *Client) ListKeys(ctx context.Context, domain, prefix, after string, limit int) ([]string, string, error) {
	args := url.Values{"domain": {c.domain(domain)}}
	if prefix != "" {
		args.Set("prefix", prefix)
	}
	if after != "" {
		args.Set("after", after)
	}
	if limit > 0 {
		args.Set("limit", strconv.Itoa(limit))
	}
	reply, err := c.do(ctx, "list_keys", args)
	if errors.Is(err, ErrNoneMatch) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("mogilefs list_keys: %w", err)
	}
	n, err := count(reply, "key_count")
	if err != nil {
		return nil, "", fmt.Errorf("mogilefs list_keys: %w", err)
	}
	keys := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		k, ok := reply["key_"+strconv.Itoa(i)]
		if !ok {
			return nil, "", fmt.Errorf("mogilefs list_keys: %w: key_%d missing", ErrProtocol, i)
		}
		keys = append(keys, k[0])
	}
	return keys, reply.Get("next_after"), nil
}

// FileInfo describes one stored file (cmd_file_info, cmd_list_fids).
type FileInfo struct {
	FID      int64
	Domain   string
	Class    string
	Key      string
	Length   int64
	DevCount int
	// Checksum is "MD5:<hex>", "MISSING", or "" when the class keeps none.
	Checksum string
	// DevIDs is filled by FileInfo only (devices=1).
	DevIDs []int
}

// FileInfo returns the tracker's record of key, including the devices
// that hold it (cmd_file_info with devices=1).
func (c *Client) FileInfo(ctx context.Context, domain, key string) (*FileInfo, error) {
	reply, err := c.do(ctx, "file_info", url.Values{"domain": {c.domain(domain)}, "key": {key}, "devices": {"1"}})
	if err != nil {
		return nil, fmt.Errorf("mogilefs file_info %q: %w", key, err)
	}
	fi := &FileInfo{Domain: reply.Get("domain"), Class: reply.Get("class"), Key: reply.Get("key"), Checksum: reply.Get("checksum")}
	var p numParser
	fi.FID = p.int64(reply, "fid")
	fi.Length = p.int64(reply, "length")
	fi.DevCount = p.int(reply, "devcount")
	if s := reply.Get("devids"); s != "" {
		for f := range strings.SplitSeq(s, ",") {
			id, err := strconv.Atoi(f)
			if err != nil {
				p.fail("devids", s)
				break
			}
			fi.DevIDs = append(fi.DevIDs, id)
		}
	}
	if p.err != nil {
		return nil, fmt.Errorf("mogilefs file_info %q: %w", key, p.err)
	}
	return fi, nil
}

// FileDebug returns everything the tracker knows about a file, by fid if
// fid > 0, else by domain and key (cmd_file_debug). The reply is returned
// raw: fid_*, tempfile_*, replqueue_*, delqueue_*, rebqueue_*, fsckqueue_*,
// devpath_<devid>, devids and checksum, each present only when known.
func (c *Client) FileDebug(ctx context.Context, domain, key string, fid int64) (url.Values, error) {
	args := url.Values{}
	if fid > 0 {
		args.Set("fid", strconv.FormatInt(fid, 10))
	} else {
		args.Set("domain", c.domain(domain))
		args.Set("key", key)
	}
	reply, err := c.do(ctx, "file_debug", args)
	if err != nil {
		return nil, fmt.Errorf("mogilefs file_debug: %w", err)
	}
	return reply, nil
}

// ListFids lists up to limit files with fid above from, in fid order
// (cmd_list_fids: from, to — the tracker reads "to" as a count, default
// 100, at most 500; replies fid_count, fid_N_fid, fid_N_domain,
// fid_N_class, fid_N_key, fid_N_length, fid_N_devcount).
func (c *Client) ListFids(ctx context.Context, from int64, limit int) ([]FileInfo, error) {
	args := url.Values{"from": {strconv.FormatInt(from, 10)}}
	if limit > 0 {
		args.Set("to", strconv.Itoa(limit))
	}
	reply, err := c.do(ctx, "list_fids", args)
	if err != nil {
		return nil, fmt.Errorf("mogilefs list_fids: %w", err)
	}
	n, err := count(reply, "fid_count")
	if err != nil {
		return nil, fmt.Errorf("mogilefs list_fids: %w", err)
	}
	var p numParser
	out := make([]FileInfo, 0, n)
	for i := 1; i <= n && p.err == nil; i++ {
		pre := "fid_" + strconv.Itoa(i) + "_"
		out = append(out, FileInfo{
			FID:      p.int64(reply, pre+"fid"),
			Domain:   reply.Get(pre + "domain"),
			Class:    reply.Get(pre + "class"),
			Key:      reply.Get(pre + "key"),
			Length:   p.int64(reply, pre+"length"),
			DevCount: p.int(reply, pre+"devcount"),
		})
	}
	if p.err != nil {
		return nil, fmt.Errorf("mogilefs list_fids: %w", p.err)
	}
	return out, nil
}

// numParser reads numeric reply fields, keeping the first error so a
// struct can be filled without a check per field. An absent or empty
// field (Perl's undef) reads as 0.
type numParser struct{ err error }

func (p *numParser) fail(k, v string) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: %s=%q is not a number", ErrProtocol, k, truncate(v))
	}
}

func (p *numParser) int64(v url.Values, k string) int64 {
	s := v.Get(k)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// Perl may render an integer column as "12.0".
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			p.fail(k, s)
			return 0
		}
		return int64(f)
	}
	return n
}

func (p *numParser) int(v url.Values, k string) int { return int(p.int64(v, k)) }

func (p *numParser) float(v url.Values, k string) float64 {
	s := v.Get(k)
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		p.fail(k, s)
	}
	return f
}

// count reads a required item count. Every counted item is at least one
// more reply field, so a count above the number of fields is a lie that
// would otherwise cost a huge allocation or loop.
func count(v url.Values, k string) (int, error) {
	s, ok := v[k]
	if !ok || len(s) == 0 {
		return 0, fmt.Errorf("%w: reply lacks %s", ErrProtocol, k)
	}
	n, err := strconv.Atoi(s[0])
	if err != nil || n < 0 || n > len(v) {
		return 0, fmt.Errorf("%w: %s=%q is not a plausible count", ErrProtocol, k, truncate(s[0]))
	}
	return n, nil
}
