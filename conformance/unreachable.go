package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// A Store whose database server cannot be reached fails each write with
// store.ErrUnavailable, never store.ErrUnknownOutcome: no statement left
// the Store, so nothing can have applied, and the caller may simply call
// again. Two outages, one after the other: the server's port closed (the
// server is down: every connection refused), and a port that accepts and
// at once drops every connection (a load balancer whose server is gone, a
// server dying in the handshake). After each, the same Store works again
// and nothing the refused calls asked for is there; then each write, run
// once, applies once.
//
// The suite makes the faults itself, for any backend with a server: it
// puts a loopback TCP relay (portRelay) at the DSN's one host:port, opens
// the Store on the relay through store.ParseDSN and store.OpenDSN, and
// plays the outages on the relay, resetting every connection through it.
// The server keeps serving everyone else. An embedded backend
// (Capabilities.Embedded) has no port; the case then checks only that its
// DSN names no server.
func testServerUnreachable(t *testing.T, e *env) {
	ctx := t.Context()
	d, err := store.ParseDSN(e.h.DSN())
	ok(t, err, "store.ParseDSN of the harness's DSN")
	hosts := d.AllHosts()
	if e.caps.Embedded {
		if len(hosts) > 0 {
			t.Fatalf("Capabilities.Embedded is true, yet the DSN %s names a server %v", d.Redacted(), hosts)
		}
		t.Log("Capabilities.Embedded: the database lives in the Store's process, no server port to close")
		return
	}
	if len(hosts) != 1 || hosts[0].Host == "" || hosts[0].Port == 0 || strings.ContainsRune(hosts[0].Host, '/') {
		t.Fatalf("a backend with a server (Capabilities.Embedded false) must give this case a DSN naming one TCP host and port, where it puts its relay; %s names %v", d.Redacted(), hosts)
	}
	relay, err := startRelay(net.JoinHostPort(hosts[0].Host, strconv.Itoa(hosts[0].Port)))
	ok(t, err, "start a relay to %s", hosts[0])
	t.Cleanup(relay.refuse)
	lock, held := lockName(t, "/after"), lockName(t, "/held")
	e.expectFree(t, lock, held)

	_, port, _ := net.SplitHostPort(relay.addr)
	d.Host, d.Hosts = "127.0.0.1", nil
	d.Port, _ = strconv.Atoi(port)
	// At most one idle connection: the first Ping of an outage then meets
	// every connection the Store kept from before it, and each write needs
	// a new one. A statement written to an old, reset connection may be
	// read by a driver as sent (the outcome of an autocommit write is then
	// honestly unknown); connections that cannot be made are what this
	// case is about.
	d.MaxIdleConns = 1
	s, err := store.OpenDSN(ctx, d)
	ok(t, err, "store.OpenDSN through the relay")
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})

	fx := mkDownFixture(t, s)
	hl := mustLock(t, s, held, 0)
	fenced := store.WithFence(ctx, hl)
	writes := append(fx.writes(lock, 0),
		downWrite{"CreateTempFile under a fence", func(context.Context) error {
			_, err := s.CreateTempFile(fenced, store.TempFile{DomainID: fx.dom.ID, Key: "fenced"})
			return err
		}},
		downWrite{"SetServerSetting under a fence", func(context.Context) error {
			return s.SetServerSetting(fenced, "conformance.fenced", "x")
		}},
	)
	before := downSnapshot(t, s, fx)
	for _, outage := range []struct {
		what  string
		start func()
	}{
		{"the server's port closed", relay.refuse},
		{"every connection dropped as it is made", relay.drop},
	} {
		outage.start()
		if err := s.Ping(ctx); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Ping with %s: got error %v; want %v (does the Store connect elsewhere than the DSN's host:port?)", outage.what, err, store.ErrUnavailable)
		}
		if s2, err := store.OpenDSN(ctx, d); !errors.Is(err, store.ErrUnavailable) {
			if err == nil {
				s2.Close()
			}
			t.Errorf("store.OpenDSN with %s: got error %v; want %v", outage.what, err, store.ErrUnavailable)
		}
		for _, w := range writes {
			err := w.call(ctx)
			if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrUnknownOutcome) {
				t.Errorf("%s with %s: got error %v; want %v and not %v (nothing was sent)",
					w.name, outage.what, err, store.ErrUnavailable, store.ErrUnknownOutcome)
			}
		}
		ok(t, relay.restore(), "end the outage (%s)", outage.what)
		ok(t, s.Ping(ctx), "Ping after %s", outage.what)
		if after := downSnapshot(t, s, fx); after != before {
			t.Errorf("state after the writes refused with %s differs from the state before them:\nbefore:\n%s\nafter:\n%s", outage.what, before, after)
		}
	}
	// The same Store works again, and each write, run once now, applies
	// once: the refused attempts left nothing for them to collide with.
	// A lease-lock Store registers its owner again first: Lock may wait
	// for that as for a dead owner.
	for _, w := range fx.writes(lock, e.deadBound()) {
		if err := w.call(ctx); err != nil {
			t.Errorf("%s after the outages: got error %v; want nil", w.name, err)
		}
	}
	if v, err := s.ServerSetting(ctx, "conformance.count"); err != nil || v != "2" {
		t.Errorf("counter after one IncrServerSetting(+1) applied on 1: %q, %v; want \"2\"", v, err)
	}
	// Fids come from one counter, so a reservation any refused call made
	// would lie between the last fid before the outages and the one
	// reserved after them.
	for fid := fx.lastFid + 1; fid < fx.newFid; fid++ {
		if _, err := s.TempFile(ctx, fid); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("TempFile(%d), a fid between the last before the outages (%d) and the first after them (%d): got error %v; want %v",
				fid, fx.lastFid, fx.newFid, err, store.ErrNotFound)
		}
	}
	// The fence's lock may have been lost with its connection meanwhile.
	if err := hl.Release(ctx); err != nil && !errors.Is(err, store.ErrLockLost) {
		t.Errorf("Release of the lock held across the outages: got error %v; want nil or %v", err, store.ErrLockLost)
	}
}

// downWrite is one write of the contract, as the case calls it.
type downWrite struct {
	name string
	call func(ctx context.Context) error
}

// downFixture is what testServerPortClosed's writes work on: each row is
// there for one write to change, so that the writes can be run in order
// once the port is open again and each applies.
type downFixture struct {
	s               *store.Store
	dom, spare      store.Domain
	cls, clsDel     store.Class
	host, spareHost store.Host
	f, g            store.File
	tDel, tCommit   int64
	devs            []int // 1, 2 hold f; 3 is AddFileOn's; 4 is DeleteDevice's
	lastFid         int64 // the largest fid before the outage
	newFid          int64 // the fid CreateTempFile reserved after it
	namedFid        int64 // the fid CreateTempFile names
	checksum        store.Checksum
}

func mkDownFixture(t *testing.T, s *store.Store) *downFixture {
	t.Helper()
	ctx := t.Context()
	fx := &downFixture{s: s}
	fx.dom = mkDomain(t, s, "conformance-down")
	fx.spare = mkDomain(t, s, "conformance-spare")
	var err error
	fx.cls, err = s.CreateClass(ctx, store.Class{DomainID: fx.dom.ID, Name: "kept", MinDevCount: 2})
	ok(t, err, "CreateClass")
	fx.clsDel, err = s.CreateClass(ctx, store.Class{DomainID: fx.dom.ID, Name: "doomed", MinDevCount: 1})
	ok(t, err, "CreateClass")
	fx.devs = mkDevices(t, s, 4)
	hosts, err := s.Hosts(ctx)
	ok(t, err, "Hosts")
	fx.host = hosts[0]
	fx.spareHost, err = s.CreateHost(ctx, store.Host{Name: "spare", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.1.1"})
	ok(t, err, "CreateHost")
	fx.f = mkFile(t, s, fx.dom.ID, "f", fx.devs[0], fx.devs[1])
	fx.g = mkFile(t, s, fx.dom.ID, "g", fx.devs[0])
	fx.tDel, err = s.CreateTempFile(ctx, store.TempFile{DomainID: fx.dom.ID, Key: "dropped"})
	ok(t, err, "CreateTempFile")
	fx.tCommit, err = s.CreateTempFile(ctx, store.TempFile{DomainID: fx.dom.ID, Key: "t", DevIDs: fx.devs[:1]})
	ok(t, err, "CreateTempFile")
	fx.lastFid = max(fx.f.Fid, fx.g.Fid, fx.tDel, fx.tCommit)
	fx.namedFid = fx.lastFid + 100
	ok(t, s.Enqueue(ctx, store.QueueFsck, store.QueueEntry{Fid: fx.f.Fid, DevID: fx.devs[0]}), "Enqueue fsck")
	ok(t, s.Enqueue(ctx, store.QueueRebalance, store.QueueEntry{Fid: fx.g.Fid, DevID: fx.devs[0], After: time.Hour}), "Enqueue rebalance")
	ok(t, s.SetServerSetting(ctx, "conformance.down", "before"), "SetServerSetting")
	ok(t, s.SetServerSetting(ctx, "conformance.gone", "x"), "SetServerSetting")
	_, err = s.IncrServerSetting(ctx, "conformance.count", 1)
	ok(t, err, "IncrServerSetting")
	ok(t, s.SetChecksum(ctx, store.Checksum{Fid: fx.f.Fid, HashType: store.HashMD5, Sum: make([]byte, 16)}), "SetChecksum")
	ok(t, s.SetChecksum(ctx, store.Checksum{Fid: fx.g.Fid, HashType: store.HashMD5, Sum: make([]byte, 16)}), "SetChecksum")
	ok(t, s.AppendFsckLog(ctx, store.FsckEvent{Fid: fx.f.Fid, Code: "NOPA"}), "AppendFsckLog")
	fx.checksum = store.Checksum{Fid: fx.f.Fid, HashType: store.HashSHA1, Sum: []byte("0123456789abcdefghij")}
	return fx
}

// writes is every write method of the contract, each changing a row of
// fx, in an order in which all of them apply when run once: lock is a
// name for Lock to take (and release) within wait.
func (fx *downFixture) writes(lock string, wait time.Duration) []downWrite {
	s, dom, f := fx.s, fx.dom.ID, fx.f.Fid
	host := fx.host
	host.AltIP = "10.9.9.9"
	return []downWrite{
		{"CreateDomain", func(ctx context.Context) error { _, err := s.CreateDomain(ctx, "conformance-new"); return err }},
		{"DeleteDomain", func(ctx context.Context) error { return s.DeleteDomain(ctx, fx.spare.ID) }},
		{"CreateClass", func(ctx context.Context) error {
			_, err := s.CreateClass(ctx, store.Class{DomainID: dom, Name: "new", MinDevCount: 1})
			return err
		}},
		{"UpdateClass", func(ctx context.Context) error {
			c := fx.cls
			c.MinDevCount = 3
			return s.UpdateClass(ctx, c)
		}},
		{"DeleteClass", func(ctx context.Context) error { return s.DeleteClass(ctx, dom, fx.clsDel.ID) }},
		{"CreateHost", func(ctx context.Context) error {
			_, err := s.CreateHost(ctx, store.Host{Name: "new", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.2.1"})
			return err
		}},
		{"UpdateHost", func(ctx context.Context) error { return s.UpdateHost(ctx, host) }},
		{"DeleteHost", func(ctx context.Context) error { return s.DeleteHost(ctx, fx.spareHost.ID) }},
		{"CreateDevice", func(ctx context.Context) error {
			_, err := s.CreateDevice(ctx, store.Device{ID: 9, HostID: fx.host.ID, Status: store.DeviceAlive, Weight: 100})
			return err
		}},
		{"SetDeviceState", func(ctx context.Context) error { return s.SetDeviceState(ctx, fx.devs[0], store.DeviceDrain) }},
		{"SetDeviceWeight", func(ctx context.Context) error { return s.SetDeviceWeight(ctx, fx.devs[0], 5) }},
		{"SetDeviceUsage", func(ctx context.Context) error { return s.SetDeviceUsage(ctx, fx.devs[0], 1000, 10) }},
		{"DeleteDevice", func(ctx context.Context) error { return s.DeleteDevice(ctx, fx.devs[3]) }},
		{"CreateTempFile", func(ctx context.Context) error {
			fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: dom, Key: "new"})
			fx.newFid = fid
			return err
		}},
		{"CreateTempFile of a named fid", func(ctx context.Context) error {
			_, err := s.CreateTempFile(ctx, store.TempFile{Fid: fx.namedFid, DomainID: dom, Key: "named"})
			return err
		}},
		{"DeleteTempFile", func(ctx context.Context) error { return s.DeleteTempFile(ctx, fx.tDel) }},
		{"CommitFile", func(ctx context.Context) error {
			_, err := s.CommitFile(ctx, store.Commit{Fid: fx.tCommit, DomainID: dom, Key: "t", Length: 1,
				DevIDs: fx.devs[:1], Checksum: &store.Checksum{HashType: store.HashMD5, Sum: make([]byte, 16)}, Replicate: true})
			return err
		}},
		{"RenameFile", func(ctx context.Context) error { return s.RenameFile(ctx, dom, "f", "f2") }},
		{"SetFileClass", func(ctx context.Context) error { return s.SetFileClass(ctx, f, fx.cls.ID) }},
		{"DeleteFile", func(ctx context.Context) error { return s.DeleteFile(ctx, fx.g.Fid) }},
		{"AddFileOn", func(ctx context.Context) error { _, err := s.AddFileOn(ctx, f, fx.devs[2]); return err }},
		{"RemoveFileOn", func(ctx context.Context) error { _, err := s.RemoveFileOn(ctx, f, fx.devs[1]); return err }},
		{"SyncDevCount", func(ctx context.Context) error { _, err := s.SyncDevCount(ctx, f); return err }},
		{"Enqueue", func(ctx context.Context) error {
			return s.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: f, DevID: fx.devs[0]})
		}},
		{"Lease", func(ctx context.Context) error { _, err := s.Lease(ctx, store.QueueFsck, 10, time.Minute); return err }},
		{"Reschedule", func(ctx context.Context) error { return s.Reschedule(ctx, store.QueueFsck, f, time.Hour, true) }},
		{"Finish", func(ctx context.Context) error { return s.Finish(ctx, store.QueueFsck, f) }},
		{"Expedite", func(ctx context.Context) error { _, err := s.Expedite(ctx, store.QueueRebalance); return err }},
		{"ClearQueue", func(ctx context.Context) error { return s.ClearQueue(ctx, store.QueueRebalance) }},
		{"SetServerSetting", func(ctx context.Context) error { return s.SetServerSetting(ctx, "conformance.down", "after") }},
		{"DeleteServerSetting", func(ctx context.Context) error { return s.DeleteServerSetting(ctx, "conformance.gone") }},
		{"IncrServerSetting", func(ctx context.Context) error {
			_, err := s.IncrServerSetting(ctx, "conformance.count", 1)
			return err
		}},
		{"SetChecksum", func(ctx context.Context) error { return s.SetChecksum(ctx, fx.checksum) }},
		{"DeleteChecksum", func(ctx context.Context) error { return s.DeleteChecksum(ctx, fx.g.Fid) }},
		{"AppendFsckLog", func(ctx context.Context) error {
			return s.AppendFsckLog(ctx, store.FsckEvent{Fid: f, Code: "MISS", DevID: fx.devs[1]})
		}},
		{"ClearFsckLog", func(ctx context.Context) error { return s.ClearFsckLog(ctx) }},
		{"Lock", func(ctx context.Context) error {
			l, err := s.Lock(ctx, lock, wait)
			if err == nil {
				err = l.Release(ctx)
			}
			return err
		}},
	}
}

// downSnapshot reads everything the writes of fx could change, as text.
func downSnapshot(t *testing.T, s *store.Store, fx *downFixture) string {
	t.Helper()
	ctx := t.Context()
	var b strings.Builder
	add := func(what string, v any, err error) {
		t.Helper()
		if errors.Is(err, store.ErrNotFound) {
			v = "not found"
		} else {
			ok(t, err, "%s", what)
		}
		fmt.Fprintf(&b, "%s: %+v\n", what, v)
	}
	v, err := s.Domains(ctx)
	add("Domains", v, err)
	cl, err := s.Classes(ctx)
	add("Classes", cl, err)
	h, err := s.Hosts(ctx)
	add("Hosts", h, err)
	dv, err := s.Devices(ctx)
	add("Devices", dv, err)
	fl, err := s.Files(ctx, 1, math.MaxInt64, 1000)
	add("Files", fl, err)
	ks, err := s.ListKeys(ctx, fx.dom.ID, "", "", 1000)
	add("ListKeys", ks, err)
	for _, fid := range []int64{fx.f.Fid, fx.g.Fid, fx.tDel, fx.tCommit, fx.namedFid} {
		tf, err := s.TempFile(ctx, fid)
		add(fmt.Sprintf("TempFile(%d)", fid), tf, err)
		on, err := s.FileOn(ctx, fid)
		add(fmt.Sprintf("FileOn(%d)", fid), on, err)
		cs, err := s.Checksum(ctx, fid)
		add(fmt.Sprintf("Checksum(%d)", fid), cs, err)
		for _, q := range []store.Queue{store.QueueReplicate, store.QueueDelete, store.QueueFsck, store.QueueRebalance} {
			it, err := s.QueueItem(ctx, q, fid)
			add(fmt.Sprintf("QueueItem(%s, %d)", q, fid), it, err)
		}
	}
	for _, q := range []store.Queue{store.QueueReplicate, store.QueueDelete, store.QueueFsck, store.QueueRebalance} {
		n, err := s.QueueLength(ctx, q)
		add(fmt.Sprintf("QueueLength(%s)", q), n, err)
	}
	st, err := s.ServerSettings(ctx)
	add("ServerSettings", st, err)
	ev, err := s.FsckEvents(ctx, 0, 1000)
	add("FsckEvents", ev, err)
	return b.String()
}

// portRelay is a loopback TCP relay to a database server: a Store opened
// on its address reaches the server through it, and refuse and drop cut
// the Store off as a server that went down would (connections refused, or
// accepted and dropped; open ones reset), without touching the server.
type portRelay struct {
	target string
	addr   string // 127.0.0.1:port, kept across refuse and restore

	mu       sync.Mutex
	ln       net.Listener      // nil while the port is closed
	dropping bool              // reset each connection as it is accepted
	conns    map[net.Conn]bool // relayed connections; true on the Store's side
	wg       sync.WaitGroup
}

func startRelay(target string) (*portRelay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &portRelay{target: target, addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	r.mu.Lock()
	r.serveLocked(ln)
	r.mu.Unlock()
	return r, nil
}

// refuse closes the relay's port: connecting is refused, and every
// connection through the relay is reset. It returns once nothing relays.
func (r *portRelay) refuse() {
	r.mu.Lock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	r.resetLocked()
	r.mu.Unlock()
	r.wg.Wait()
}

// drop keeps the port open, but resets every connection through the relay
// and each new one as soon as it is accepted, before a byte of the server's.
func (r *portRelay) drop() {
	r.mu.Lock()
	r.dropping = true
	r.resetLocked()
	r.mu.Unlock()
}

// restore ends refuse or drop: new connections reach the server again.
func (r *portRelay) restore() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropping = false
	if r.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		return err
	}
	r.serveLocked(ln)
	return nil
}

func (r *portRelay) serveLocked(ln net.Listener) {
	r.ln = ln
	r.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.wg.Go(func() { r.pipe(ln, c) })
		}
	})
}

// cut reports whether a connection accepted on ln must not reach the
// server: the port closed or drop began since.
func (r *portRelay) cut(ln net.Listener) bool {
	return r.ln != ln || r.dropping
}

// pipe relays one connection accepted on ln until either side ends it or
// the relay resets it.
func (r *portRelay) pipe(ln net.Listener, c net.Conn) {
	r.mu.Lock()
	cut := r.cut(ln)
	r.mu.Unlock()
	if cut {
		reset(c)
		return
	}
	up, err := net.DialTimeout("tcp", r.target, 10*time.Second)
	if err != nil {
		reset(c)
		return
	}
	r.mu.Lock()
	if r.cut(ln) {
		r.mu.Unlock()
		reset(c)
		up.Close()
		return
	}
	r.conns[c], r.conns[up] = true, false
	r.mu.Unlock()
	var copies sync.WaitGroup
	for _, p := range [][2]net.Conn{{up, c}, {c, up}} {
		copies.Go(func() {
			io.Copy(p[0], p[1])
			// One side ended: end the other too, so both copies return.
			c.Close()
			up.Close()
		})
	}
	copies.Wait()
	r.mu.Lock()
	delete(r.conns, c)
	delete(r.conns, up)
	r.mu.Unlock()
}

// resetLocked resets every relayed connection on the Store's side and
// closes it on the server's, which ends its sessions.
func (r *portRelay) resetLocked() {
	for c, storeSide := range r.conns {
		if storeSide {
			reset(c)
		} else {
			c.Close()
		}
	}
}

// reset closes c with a TCP reset, as a host does for a connection whose
// process went away, so the peer's next read or write fails at once.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
