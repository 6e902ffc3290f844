package cluster

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gomogile/gomogile/store"
)

// ErrNoSideChannel is a storage node whose management port does not
// digest (an old mogstored answering "ERROR …"): read the blob over HTTP.
var ErrNoSideChannel = errors.New("storage node cannot digest on its management port")

// MgmtDigest asks a storage node's management port (addr is host ip and
// mogstored_stream_port) for the digest of the blob at uri, as
// HTTPFile::digest_mgmt does: it sends "<alg> <uri>[ <reason>]" and reads
// "<uri> <alg>=<hex>" back; "<uri> <alg>=-1" is ErrMissing, an "ERROR"
// line ErrNoSideChannel. Connecting is bounded by conn_timeout; the answer
// as in the original by 1 s per 2 MB of the blob's size plus node_timeout,
// or plus an hour for reason "fsck", whose digests mogstored queues one
// at a time per device; both by ctx.
func (n *Nodes) MgmtDigest(ctx context.Context, addr, uri string, ht store.HashType, reason string, size int64) ([]byte, error) {
	if ht.New() == nil {
		return nil, fmt.Errorf("digest %s: unknown hashtype %d", uri, ht)
	}
	alg := ht.String()
	d := net.Dialer{Timeout: n.conn}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", alg, uri, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	wait := time.Duration(size/(2<<20)) * time.Second
	if reason == "fsck" {
		wait += time.Hour
	} else {
		wait += n.idle
	}
	c.SetDeadline(time.Now().Add(n.conn + wait))
	req := alg + " " + uri
	if reason != "" {
		req += " " + reason
	}
	if _, err := fmt.Fprintf(c, "%s\r\n", req); err != nil {
		return nil, fmt.Errorf("%s %s: %w", alg, uri, ctxOr(ctx, err))
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading answer: %w", alg, uri, ctxOr(ctx, err))
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "ERROR ") {
		return nil, fmt.Errorf("%s %s: %q: %w", alg, uri, line, ErrNoSideChannel)
	}
	val, ok := strings.CutPrefix(line, uri+" "+alg+"=")
	if !ok {
		return nil, fmt.Errorf("mogstored failed to handle (%s %s): %s", alg, uri, line)
	}
	if val == "-1" {
		return nil, fmt.Errorf("%s %s: %w", alg, uri, ErrMissing)
	}
	sum, err := hex.DecodeString(val)
	if err != nil || len(sum) != ht.Size() {
		return nil, fmt.Errorf("%s failed for %s: invalid digest %q", alg, uri, val)
	}
	return sum, nil
}

// ctxOr is ctx's error when ctx ended the wait, else err.
func ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
