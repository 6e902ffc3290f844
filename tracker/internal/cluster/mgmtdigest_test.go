package cluster_test

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomogile/gomogile/mogstored"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// The side channel speaks mogstored's "<alg> <uri>[ <reason>]" command.
func TestNodes_MgmtDigest(t *testing.T) {
	root := t.TempDir()
	body := []byte("digest me on the node")
	p := filepath.Join(root, filepath.FromSlash(cluster.FidPath(1, 7)))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := mogstored.New(mogstored.Config{DocRoot: root, HTTPListen: "127.0.0.1:0", MgmtListen: "127.0.0.1:0",
		NoIOStat: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := srv.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	n := cluster.NewNodes(cluster.NodeConfig{}, nil)
	ctx := t.Context()

	sha, md := sha1.Sum(body), md5.Sum(body)
	for _, tc := range []struct {
		ht     store.HashType
		reason string
		want   []byte
	}{{store.HashSHA1, "fsck", sha[:]}, {store.HashSHA1, "", sha[:]}, {store.HashMD5, "fsck", md[:]}} {
		got, err := n.MgmtDigest(ctx, srv.MgmtAddr(), cluster.FidPath(1, 7), tc.ht, tc.reason, int64(len(body)))
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%v %q: %x, %v; want %x", tc.ht, tc.reason, got, err, tc.want)
		}
	}
	if _, err := n.MgmtDigest(ctx, srv.MgmtAddr(), cluster.FidPath(1, 8), store.HashSHA1, "fsck", 0); !errors.Is(err, cluster.ErrMissing) {
		t.Errorf("missing blob: %v; want ErrMissing", err)
	}
	if _, err := n.MgmtDigest(ctx, srv.MgmtAddr(), cluster.FidPath(1, 7), store.HashNone, "", 0); err == nil {
		t.Error("HashNone: no error")
	}
}

// A node that does not know the command (an old mogstored) answers
// "ERROR …": ErrNoSideChannel, so the caller reads over HTTP instead.
func TestNodes_MgmtDigestOldServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, "ERROR unknown command\r\n")
	}()
	_, err = cluster.NewNodes(cluster.NodeConfig{}, nil).MgmtDigest(t.Context(), ln.Addr().String(), cluster.FidPath(1, 7), store.HashSHA1, "fsck", 0)
	if !errors.Is(err, cluster.ErrNoSideChannel) {
		t.Errorf("old server: %v; want ErrNoSideChannel", err)
	}
}
