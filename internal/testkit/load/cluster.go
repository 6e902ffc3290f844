package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gomogile/gomogile/client"
	"github.com/gomogile/gomogile/mogstored"
	"github.com/gomogile/gomogile/tracker"
)

// The daemons run in this process, started as cmd/mogstored and
// cmd/mogilefsd start them (their Main types, with the flags scripts/run.sh
// gives the binaries), on loopback ports the kernel picks.

// daemon is one running daemon: stop ends it and returns how it ended.
type daemon struct {
	cancel context.CancelFunc
	done   chan error
}

func (d *daemon) stop() error {
	d.cancel()
	err := <-d.done
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// node is the storage node, with two devices under its docroot.
type node struct {
	daemon
	http, mgmt string // host:port
}

// startNode starts the node on httpAddr and mgmtAddr ("" = a port of
// loopback the kernel picks).
func startNode(ctx context.Context, dir, httpAddr, mgmtAddr string, log io.Writer) (*node, error) {
	if httpAddr == "" {
		httpAddr = "127.0.0.1:0"
	}
	if mgmtAddr == "" {
		mgmtAddr = "127.0.0.1:0"
	}
	docroot := filepath.Join(dir, "mogdata")
	for _, dev := range []string{"dev1", "dev2"} {
		if err := os.MkdirAll(filepath.Join(docroot, dev), 0o755); err != nil {
			return nil, fmt.Errorf("load: storage node: %w", err)
		}
	}
	m := mogstored.NewMain()
	m.Stdout, m.Stderr = io.Discard, log
	started := make(chan *mogstored.Server, 1)
	m.Started = func(s *mogstored.Server) { started <- s }
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n := &node{daemon: daemon{cancel: cancel, done: make(chan error, 1)}}
	go func() {
		n.done <- m.Run(runCtx, []string{"--skipconfig", "--docroot", docroot,
			"--httplisten", httpAddr, "--mgmtlisten", mgmtAddr})
	}()
	select {
	case s := <-started:
		n.http, n.mgmt = s.HTTPAddr(), s.MgmtAddr()
		return n, nil
	case err := <-n.done:
		cancel()
		return nil, fmt.Errorf("load: storage node: %w", err)
	case <-ctx.Done():
		_ = n.stop()
		return nil, ctx.Err()
	}
}

// startTracker runs a tracker on dsn with its background workers, as
// mogilefsd does, and returns it with its address once it listens.
func startTracker(ctx context.Context, dsn string, n *node, log io.Writer) (*daemon, string, error) {
	_, mgmtPort, err := net.SplitHostPort(n.mgmt)
	if err != nil {
		return nil, "", err
	}
	ready := make(chan string, 1)
	m := &tracker.Main{
		Stdout:  io.Discard,
		Stderr:  log,
		Environ: []string{}, // no MOGILEFSD_* of the caller's
		NewJobs: tracker.NewJobs,
		Ready:   func(t *tracker.Tracker) { ready <- t.Addrs()[0].String() },
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d := &daemon{cancel: cancel, done: make(chan error, 1)}
	go func() {
		d.done <- m.Run(runCtx, []string{"--skipconfig", "--dsn", dsn,
			"--listen", "127.0.0.1:0", "--mogstored_stream_port", mgmtPort})
	}()
	select {
	case addr := <-ready:
		return d, addr, nil
	case err := <-d.done:
		cancel()
		return nil, "", fmt.Errorf("load: tracker: %w", err)
	case <-ctx.Done():
		_ = d.stop()
		return nil, "", ctx.Err()
	}
}

// Names the workload registers on a tracker.
const (
	Domain = "load"
	Class  = "one" // one copy: the load measures uploads, not replication
	host   = "loadnode"
)

// register creates the domain, the class and the storage node's host and
// two devices on a tracker, keeping what a tracker had already (an
// external tracker's database from an earlier run) and moving the host to
// the node's port.
func register(ctx context.Context, c *client.Client, n *node) error {
	ip, p, err := net.SplitHostPort(n.http)
	if err != nil {
		return err
	}
	port, _ := strconv.Atoi(p)
	if err := c.CreateDomain(ctx, Domain); err != nil && !errors.Is(err, client.ErrDomainExists) {
		return fmt.Errorf("load: register: %w", err)
	}
	if err := c.CreateClass(ctx, Domain, client.Class{Name: Class, MinDevCount: 1}); err != nil && !errors.Is(err, client.ErrClassExists) {
		return fmt.Errorf("load: register: %w", err)
	}
	h := client.Host{Name: host, IP: ip, Port: port, Status: "alive"}
	if _, err := c.CreateHost(ctx, h); errors.Is(err, client.ErrHostExists) {
		err = c.UpdateHost(ctx, h)
		if err != nil {
			return fmt.Errorf("load: register: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("load: register: %w", err)
	}
	for dev := 1; dev <= 2; dev++ {
		if err := c.CreateDevice(ctx, client.NewDevice{HostName: host, DevID: dev}); err != nil && !errors.Is(err, client.ErrExistingDevid) {
			return fmt.Errorf("load: register: %w", err)
		}
	}
	return nil
}

// warmUp uploads through each tracker until one upload succeeds on it: a
// tracker takes devices only once its monitor has seen them writeable.
func warmUp(ctx context.Context, addrs []string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for i, addr := range addrs {
		c, err := client.New([]string{addr}, nil)
		if err != nil {
			return err
		}
		for {
			err = upload(ctx, c, fmt.Sprintf("warmup-%d", i))
			if err == nil || ctx.Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.Close()
		if err != nil {
			return fmt.Errorf("load: no upload through %s within a minute: %w", addr, err)
		}
	}
	return nil
}
