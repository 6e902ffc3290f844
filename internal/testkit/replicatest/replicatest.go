// Package replicatest is the one test of a backend's read replicas (see
// "Read replicas" in package store), run by each backend that offers them
// against a private primary and replica: reads go to a replica that keeps
// up; a lagging replica's reads fall back to the primary and return what
// it has; a killed replica fails no read; a write or a lock never reaches
// a replica.
package replicatest

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Harness is a backend's primary and one replica of it.
type Harness struct {
	// Open opens a Store on the primary that reads from the replica (the
	// DSN's replica parameter or the slave settings), with MaxLag as its
	// bound; the Store's Info must list the replica first (once it has
	// read the slave settings, if they name it).
	Open   func(t *testing.T) *store.Store
	MaxLag time.Duration
	// Pause makes the replica stop applying what it receives; Resume
	// lets it go on.
	Pause, Resume func(ctx context.Context) error
	// Kill kills the replica's server (SIGKILL); Start starts it again.
	Kill  func() error
	Start func(ctx context.Context) error
	// Exec, if set, runs a statement on the replica as a user that may
	// write there (root on a MariaDB replica, despite read_only): the
	// test then proves a read came from the replica, and, with Digest
	// and Locked, that nothing of the Store's reached it.
	Exec func(ctx context.Context, query string, args ...any) error
	// Digest sums every table of the replica's database.
	Digest func(ctx context.Context) (string, error)
	// Locked reports whether the replica's server holds the Store's
	// named lock name.
	Locked func(ctx context.Context, name string) (bool, error)
}

type fixture struct {
	t       *testing.T
	h       Harness
	s       *store.Store
	dmid    int
	devs    []int
	k1, k2  store.File
	allowed context.Context
}

// Run runs the replica test on h.
func Run(t *testing.T, h Harness) {
	ctx := t.Context()
	f := &fixture{t: t, h: h, s: h.Open(t), allowed: store.AllowReplica(ctx)}
	if !f.s.Capabilities().ReadReplicas {
		t.Fatal("Capabilities().ReadReplicas is false on a Store opened with a replica")
	}
	f.setup(ctx)
	t.Run("ServedByReplica", f.servedByReplica)
	t.Run("LaggingFallsBack", f.laggingFallsBack)
	t.Run("KilledFailsNoRead", f.killedFailsNoRead)
	t.Run("NoWriteOrLockReachesReplica", f.noWriteOrLock)
}

func (f *fixture) setup(ctx context.Context) {
	t, s := f.t, f.s
	dom, err := s.CreateDomain(ctx, "replicas")
	if err != nil {
		t.Fatal(err)
	}
	f.dmid = dom.ID
	h, err := s.CreateHost(ctx, store.Host{Name: "replicas-host", IP: "127.0.0.1", HTTPPort: 7500, Status: store.HostAlive})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		d, err := s.CreateDevice(ctx, store.Device{ID: 9100 + i, HostID: h.ID, Status: store.DeviceAlive, Weight: 100})
		if err != nil {
			t.Fatal(err)
		}
		f.devs = append(f.devs, d.ID)
	}
	f.k1 = f.commit(ctx, "k1")
}

// commit makes a file of key on the first device, with an MD5 checksum.
func (f *fixture) commit(ctx context.Context, key string) store.File {
	t, s := f.t, f.s
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: f.dmid, Key: key, DevIDs: f.devs[:1]})
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum([]byte(key))
	res, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: f.dmid, Key: key, Length: int64(len(key)), DevIDs: f.devs[:1],
		Checksum: &store.Checksum{HashType: store.HashMD5, Sum: sum[:]}})
	if err != nil {
		t.Fatal(err)
	}
	return res.File
}

func (f *fixture) status() store.ReplicaStatus {
	info, err := f.s.Info(f.t.Context())
	if err != nil {
		f.t.Fatal(err)
	}
	if len(info.Replicas) == 0 {
		return store.ReplicaStatus{} // not yet read from the slave settings
	}
	return info.Replicas[0]
}

// waitUsable reads through the replica until the Store finds it usable
// and has read from it.
func (f *fixture) waitUsable() {
	f.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, _, err := store.FileByKeyOn(f.allowed, f.s, f.dmid, "k1"); err != nil {
			f.t.Fatal(err)
		}
		st := f.status()
		if st.Usable && st.Reads > 0 {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("replica not usable after 60s: %+v", st)
		}
		time.Sleep(f.h.MaxLag / 8)
	}
}

// readAll runs every read that honours AllowReplica on ctx and checks
// each answer against the primary's truth: k1 and, when k2 is set, k2,
// with devs copies of k1.
func (f *fixture) readAll(ctx context.Context, devs []int) error {
	s, k1 := f.s, f.k1
	checks := []func() error{
		func() error {
			g, err := s.File(ctx, k1.Fid)
			if err == nil && g.Key != "k1" {
				err = fmt.Errorf("File: key %q", g.Key)
			}
			return err
		},
		func() error {
			g, err := s.FileByKey(ctx, f.dmid, "k1")
			if err == nil && g.Fid != k1.Fid {
				err = fmt.Errorf("FileByKey: fid %d, want %d", g.Fid, k1.Fid)
			}
			return err
		},
		func() error {
			_, d, err := store.FileByKeyOn(ctx, s, f.dmid, "k1")
			if err == nil && !slices.Equal(d, devs) {
				err = fmt.Errorf("FileByKeyOn: devices %v, want %v", d, devs)
			}
			return err
		},
		func() error {
			d, err := s.FileOn(ctx, k1.Fid)
			if err == nil && !slices.Equal(d, devs) {
				err = fmt.Errorf("FileOn: devices %v, want %v", d, devs)
			}
			return err
		},
		func() error {
			want := []string{"k1"}
			if f.k2.Fid != 0 {
				want = append(want, "k2")
			}
			keys, err := s.ListKeys(ctx, f.dmid, "k", "", 100)
			if err == nil && !slices.Equal(keys, want) {
				err = fmt.Errorf("ListKeys: %q, want %q", keys, want)
			}
			return err
		},
		func() error {
			fs, err := s.Files(ctx, k1.Fid, k1.Fid, 10)
			if err == nil && (len(fs) != 1 || fs[0].Key != "k1") {
				err = fmt.Errorf("Files: %+v", fs)
			}
			return err
		},
		func() error {
			c, err := s.Checksum(ctx, k1.Fid)
			if sum := md5.Sum([]byte("k1")); err == nil && string(c.Sum) != string(sum[:]) {
				err = fmt.Errorf("Checksum: %x", c.Sum)
			}
			return err
		},
	}
	if f.k2.Fid != 0 {
		checks = append(checks, func() error {
			g, _, err := store.FileByKeyOn(ctx, s, f.dmid, "k2")
			if err == nil && g.Fid != f.k2.Fid {
				err = fmt.Errorf("FileByKeyOn k2: fid %d, want %d", g.Fid, f.k2.Fid)
			}
			return err
		})
	}
	var errs []error
	for _, c := range checks {
		if err := c(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (f *fixture) servedByReplica(t *testing.T) {
	ctx := t.Context()
	f.waitUsable()
	// Without AllowReplica nothing goes to the replica.
	before := f.status().Reads
	if err := f.readAll(ctx, f.devs[:1]); err != nil {
		t.Fatal(err)
	}
	if got := f.status().Reads; got != before {
		t.Errorf("reads without AllowReplica went to the replica: %d → %d", before, got)
	}
	// With it every kind of read does (while the replica keeps up; a
	// batch that met a stale measurement is run again).
	for try := 0; ; try++ {
		f.waitUsable()
		before := f.status()
		if err := f.readAll(f.allowed, f.devs[:1]); err != nil {
			t.Fatal(err)
		}
		after := f.status()
		if n := after.Reads - before.Reads; n == 7 && after.Fallbacks == before.Fallbacks {
			break
		} else if try == 4 {
			t.Fatalf("7 reads allowed on a replica that keeps up: %d answered there, %d fell back", n, after.Fallbacks-before.Fallbacks)
		}
	}
	if f.h.Exec == nil {
		return
	}
	// The replica's own answer: a row changed on the replica alone.
	if err := f.h.Exec(ctx, "UPDATE file SET length = 4242 WHERE fid = ?", f.k1.Fid); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.h.Exec(ctx, "UPDATE file SET length = ? WHERE fid = ?", f.k1.Length, f.k1.Fid); err != nil {
			t.Error(err)
		}
	}()
	f.waitUsable()
	if g, err := f.s.File(f.allowed, f.k1.Fid); err != nil || g.Length != 4242 {
		t.Errorf("File allowed on the replica: length %d (%v), want the replica's 4242", g.Length, err)
	}
	if g, err := f.s.File(ctx, f.k1.Fid); err != nil || g.Length != f.k1.Length {
		t.Errorf("File without AllowReplica: length %d (%v), want the primary's %d", g.Length, err, f.k1.Length)
	}
}

func (f *fixture) laggingFallsBack(t *testing.T) {
	ctx := t.Context()
	f.waitUsable()
	if err := f.h.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			f.h.Resume(context.WithoutCancel(ctx))
		}
	}()
	before := f.status()
	// A key the replica has not got: the miss is asked of the primary.
	f.k2 = f.commit(ctx, "k2")
	if g, _, err := store.FileByKeyOn(f.allowed, f.s, f.dmid, "k2"); err != nil || g.Fid != f.k2.Fid {
		t.Fatalf("a key committed on the primary, read while the replica lags: fid %d (%v), want %d", g.Fid, err, f.k2.Fid)
	}
	// A change the replica has not got: once the replica is more than
	// the bound behind, every read is the primary's.
	if _, err := f.s.AddFileOn(ctx, f.k1.Fid, f.devs[1]); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	for time.Since(changed) < f.h.MaxLag+f.h.MaxLag/2 {
		f.readAll(f.allowed, nil) // keeps the probes going; answers may be stale
		time.Sleep(f.h.MaxLag / 8)
	}
	if err := f.readAll(f.allowed, f.devs); err != nil {
		t.Errorf("reads %v after a change, the replica paused: %v", time.Since(changed).Round(time.Millisecond), err)
	}
	st := f.status()
	if st.Usable {
		t.Errorf("a replica paused for %v is usable: %+v", time.Since(changed), st)
	}
	if st.Fallbacks == before.Fallbacks {
		t.Errorf("no read fell back while the replica lagged: %+v", st)
	}
	t.Logf("paused replica: %+v", st)
	if err := f.h.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	resumed = true
	f.waitUsable()
	if err := f.readAll(f.allowed, f.devs); err != nil {
		t.Errorf("reads after the replica caught up: %v", err)
	}
}

func (f *fixture) killedFailsNoRead(t *testing.T) {
	ctx := t.Context()
	f.waitUsable()
	if err := f.h.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	reads := 0
	for time.Since(killed) < 2*f.h.MaxLag {
		if err := f.readAll(f.allowed, f.devs); err != nil {
			t.Fatalf("read %v after the replica was killed: %v", time.Since(killed).Round(time.Millisecond), err)
		}
		reads++
	}
	st := f.status()
	if st.Usable || st.Err == "" {
		t.Errorf("a killed replica: %+v; want unusable, with its error", st)
	}
	t.Logf("%d rounds of reads with the replica killed, none failed; status %+v", reads, st)
	if err := f.h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitUsable()
}

func (f *fixture) noWriteOrLock(t *testing.T) {
	ctx := t.Context()
	f.waitUsable()
	if f.h.Digest != nil {
		// Nothing arrives by replication meanwhile.
		if err := f.h.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := f.h.Resume(context.WithoutCancel(ctx)); err != nil {
				t.Error(err)
			}
		}()
	}
	var d0 string
	if f.h.Digest != nil {
		var err error
		if d0, err = f.h.Digest(ctx); err != nil {
			t.Fatal(err)
		}
	}
	a, s := f.allowed, f.s
	const lockName = "mgfs:fid:424242"
	l, err := s.Lock(a, lockName, time.Second)
	if err != nil {
		t.Fatalf("Lock with AllowReplica: %v", err)
	}
	if f.h.Locked != nil {
		if on, err := f.h.Locked(ctx, lockName); err != nil || on {
			t.Errorf("the lock is held on the replica's server: %v %v", on, err)
		}
	}
	writes := []struct {
		name string
		fn   func() error
	}{
		{"CreateDomain", func() error { _, err := s.CreateDomain(a, "replicas-w"); return err }},
		{"CreateClass", func() error {
			_, err := s.CreateClass(a, store.Class{DomainID: f.dmid, Name: "c", MinDevCount: 2})
			return err
		}},
		{"CommitFile", func() error { f.commit(a, "k3"); return nil }},
		{"AddFileOn", func() error { _, err := s.AddFileOn(a, f.k2.Fid, f.devs[1]); return err }},
		{"SetChecksum", func() error {
			return s.SetChecksum(a, store.Checksum{Fid: f.k2.Fid, HashType: store.HashMD5, Sum: make([]byte, 16)})
		}},
		{"RenameFile", func() error { return s.RenameFile(a, f.dmid, "k3", "k4") }},
		{"Enqueue", func() error { return s.Enqueue(a, store.QueueReplicate, store.QueueEntry{Fid: f.k2.Fid}) }},
		{"SetServerSetting", func() error { return s.SetServerSetting(a, "replicas_test", "1") }},
		{"IncrServerSetting", func() error { _, err := s.IncrServerSetting(a, "replicas_n", 1); return err }},
		{"AppendFsckLog", func() error {
			return s.AppendFsckLog(a, store.FsckEvent{Fid: f.k2.Fid, Code: "NOPA", DevID: f.devs[0]})
		}},
		{"SetDeviceState", func() error { return s.SetDeviceState(a, f.devs[1], store.DeviceDrain) }},
	}
	for _, w := range writes {
		if err := w.fn(); err != nil {
			t.Errorf("%s with AllowReplica: %v", w.name, err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	// Everything is on the primary…
	if g, err := s.FileByKey(ctx, f.dmid, "k4"); err != nil || g.Key != "k4" {
		t.Errorf("the renamed file on the primary: %+v %v", g, err)
	}
	if v, err := s.ServerSetting(ctx, "replicas_test"); err != nil || v != "1" {
		t.Errorf("the setting on the primary: %q %v", v, err)
	}
	// …and nothing on the replica.
	if f.h.Digest != nil {
		d1, err := f.h.Digest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d1 != d0 {
			t.Errorf("the replica's tables changed while it was not replicating: %s → %s", d0, d1)
		}
	}
}
