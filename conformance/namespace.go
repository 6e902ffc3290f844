package conformance

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

func testInfo(t *testing.T, e *env) {
	s := e.open(t)
	info, err := s.Info(t.Context())
	ok(t, err, "Info")
	if info.Driver != e.h.Name() {
		t.Errorf("Info().Driver = %q; want %q", info.Driver, e.h.Name())
	}
	if info.ServerVersion == "" {
		t.Errorf("Info().ServerVersion is empty; want the server's version")
	}
}

func testNow(t *testing.T, e *env) {
	s := e.open(t)
	before := time.Now()
	now := dbNow(t, s)
	if !within(now, before, time.Minute) {
		t.Errorf("Now() = %v; want within a minute of the local clock %v", now, before)
	}
	// The clock moves forward.
	if !waitFor(3*time.Second, func() bool { return dbNow(t, s).After(now) }) {
		t.Errorf("Now() still %v after 3s; want a clock that advances", now)
	}
}

func testPing(t *testing.T, e *env) {
	s := e.open(t)
	ok(t, s.Ping(t.Context()), "Ping")
}

func testSharedState(t *testing.T, e *env) {
	ctx := t.Context()
	a, b := e.open(t), e.open(t)
	d := mkDomain(t, a, "shared")
	ds, err := b.Domains(ctx)
	ok(t, err, "Domains on the second Store")
	if !slices.Contains(ds, d) {
		t.Fatalf("second Store's Domains() = %v; want it to include %v made by the first", ds, d)
	}
	f := mkFile(t, b, d.ID, "k")
	got, err := a.FileByKey(ctx, d.ID, "k")
	ok(t, err, "FileByKey on the first Store")
	if got != f {
		t.Errorf("FileByKey on the first Store = %+v; want %+v", got, f)
	}
	ok(t, a.SetServerSetting(ctx, "conformance.shared", "1"), "SetServerSetting")
	v, err := b.ServerSetting(ctx, "conformance.shared")
	ok(t, err, "ServerSetting on the second Store")
	if v != "1" {
		t.Errorf("ServerSetting on the second Store = %q; want %q", v, "1")
	}
}

func testReopen(t *testing.T, e *env) {
	a := e.open(t)
	d := mkDomain(t, a, "persist")
	f := mkFile(t, a, d.ID, "k")
	ok(t, a.Close(), "Close")
	b := e.open(t)
	got, err := b.FileByKey(t.Context(), d.ID, "k")
	ok(t, err, "FileByKey after reopening")
	if got != f {
		t.Errorf("FileByKey after reopening = %+v; want %+v", got, f)
	}
	v, err := b.ServerSetting(t.Context(), "schema_version")
	ok(t, err, "ServerSetting(schema_version)")
	if v != strconv.Itoa(store.SchemaVersion) {
		t.Errorf("schema_version = %q; want %d", v, store.SchemaVersion)
	}
}

func testSchemaNewerRefused(t *testing.T, e *env) {
	// A tracker older than the database it finds must not touch it.
	schemaRefused(t, e, store.SchemaVersion+1)
}

// schemaRefused checks that store.Open refuses a database whose
// schema_version is v with ErrSchemaMismatch, leaving v as it was.
func schemaRefused(t *testing.T, e *env, v int) {
	a := e.open(t)
	ctx := t.Context()
	want := strconv.Itoa(store.SchemaVersion)
	got, err := a.ServerSetting(ctx, "schema_version")
	ok(t, err, "ServerSetting(schema_version)")
	if got != want {
		t.Fatalf("schema_version = %q; want %q", got, want)
	}
	other := strconv.Itoa(v)
	ok(t, a.SetServerSetting(ctx, "schema_version", other), "SetServerSetting(schema_version, %s)", other)
	t.Cleanup(func() { a.SetServerSetting(context.Background(), "schema_version", want) })
	b, err := store.Open(ctx, e.h.DSN())
	if err == nil {
		b.Close()
	}
	isErr(t, err, store.ErrSchemaMismatch, "store.Open on a schema_version %s database", other)
	if got, err := a.ServerSetting(ctx, "schema_version"); err != nil || got != other {
		t.Errorf("schema_version after the refused Open = %q, %v; want %q left alone", got, err, other)
	}
	ok(t, a.SetServerSetting(ctx, "schema_version", want), "SetServerSetting(schema_version, %s)", want)
	e.open(t)
}

func domainsOf(t *testing.T, s *store.Store) []store.Domain {
	t.Helper()
	ds, err := s.Domains(t.Context())
	ok(t, err, "Domains")
	slices.SortFunc(ds, func(a, b store.Domain) int { return a.ID - b.ID })
	return ds
}

func testDomainCreate(t *testing.T, e *env) {
	s := e.open(t)
	if ds := domainsOf(t, s); len(ds) != 0 {
		t.Fatalf("Domains() after Reset = %v; want none", ds)
	}
	names := []string{"photos", "Photos", "vidéo", "a b", "x%_\\"}
	var want []store.Domain
	ids := map[int]bool{}
	for _, n := range names {
		d := mkDomain(t, s, n)
		if d.Name != n {
			t.Errorf("CreateDomain(%q).Name = %q; want %q", n, d.Name, n)
		}
		if d.ID <= 0 || ids[d.ID] {
			t.Errorf("CreateDomain(%q).ID = %d; want a new positive id (have %v)", n, d.ID, ids)
		}
		ids[d.ID] = true
		want = append(want, d)
	}
	if got := domainsOf(t, s); !reflect.DeepEqual(got, want) {
		t.Errorf("Domains() = %v; want %v", got, want)
	}
}

func testDomainDuplicate(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	d := mkDomain(t, a, "dup")
	_, err := b.CreateDomain(t.Context(), "dup")
	isErr(t, err, store.ErrDuplicate, "CreateDomain of an existing name from another Store")
	if got := domainsOf(t, a); !reflect.DeepEqual(got, []store.Domain{d}) {
		t.Errorf("Domains() after refused duplicate = %v; want [%v]", got, d)
	}
}

func testDomainDelete(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d1 := mkDomain(t, s, "one")
	d2 := mkDomain(t, s, "two")
	isErr(t, s.DeleteDomain(ctx, d2.ID+100), store.ErrNotFound, "DeleteDomain of an unknown id")
	// The implicit default class does not count as a class.
	_, err := s.CreateClass(ctx, store.Class{DomainID: d1.ID, Name: "default", MinDevCount: 2})
	ok(t, err, "CreateClass(default)")
	ok(t, s.DeleteDomain(ctx, d1.ID), "DeleteDomain")
	if got := domainsOf(t, s); !reflect.DeepEqual(got, []store.Domain{d2}) {
		t.Errorf("Domains() after delete = %v; want [%v]", got, d2)
	}
	isErr(t, s.DeleteDomain(ctx, d1.ID), store.ErrNotFound, "second DeleteDomain")
	cs, err := s.Classes(ctx)
	ok(t, err, "Classes")
	for _, c := range cs {
		if c.DomainID == d1.ID {
			t.Errorf("Classes() after DeleteDomain still has %+v; want the domain's default class gone", c)
		}
	}
	// The name is free again.
	mkDomain(t, s, "one")
}

func testDomainDeleteHasFiles(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "full")
	f := mkFile(t, s, d.ID, "k")
	isErr(t, s.DeleteDomain(ctx, d.ID), store.ErrHasFiles, "DeleteDomain with a file")
	if got := domainsOf(t, s); !reflect.DeepEqual(got, []store.Domain{d}) {
		t.Fatalf("Domains() after refused delete = %v; want [%v]", got, d)
	}
	if _, err := s.File(ctx, f.Fid); err != nil {
		t.Fatalf("File(%d) after refused DeleteDomain: %v", f.Fid, err)
	}
	ok(t, s.DeleteFile(ctx, f.Fid), "DeleteFile")
	ok(t, s.DeleteDomain(ctx, d.ID), "DeleteDomain once empty")
}

func testDomainDeleteHasClasses(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "classy")
	c, err := s.CreateClass(ctx, store.Class{DomainID: d.ID, Name: "big", MinDevCount: 3})
	ok(t, err, "CreateClass")
	isErr(t, s.DeleteDomain(ctx, d.ID), store.ErrHasClasses, "DeleteDomain with a class")
	if got := domainsOf(t, s); !reflect.DeepEqual(got, []store.Domain{d}) {
		t.Fatalf("Domains() after refused delete = %v; want [%v]", got, d)
	}
	if got := classesOf(t, s, d.ID); !reflect.DeepEqual(got, []store.Class{c}) {
		t.Fatalf("Classes() after refused delete = %v; want [%+v]", got, c)
	}
	ok(t, s.DeleteClass(ctx, d.ID, c.ID), "DeleteClass")
	ok(t, s.DeleteDomain(ctx, d.ID), "DeleteDomain without classes")
}

// concurrentIDs creates n things from several Stores at once and checks
// that every create succeeded with a distinct id.
func concurrentIDs(t *testing.T, e *env, n int, create func(s *store.Store, i int) (int, error)) {
	ss := []*store.Store{e.open(t), e.open(t), e.open(t)}
	ids := make([]int, n)
	errs := parallel(n, func(i int) error {
		id, err := create(ss[i%len(ss)], i)
		ids[i] = id
		return err
	})
	noErrs(t, errs, "concurrent create")
	seen := map[int]int{}
	for i, id := range ids {
		if id <= 0 {
			t.Errorf("create %d got id %d; want a positive id", i, id)
		}
		if j, dup := seen[id]; dup {
			t.Errorf("creates %d and %d both got id %d; want distinct ids", j, i, id)
		}
		seen[id] = i
	}
}

func testDomainIDsConcurrent(t *testing.T, e *env) {
	const n = 24
	concurrentIDs(t, e, n, func(s *store.Store, i int) (int, error) {
		d, err := s.CreateDomain(t.Context(), "d"+strconv.Itoa(i))
		return d.ID, err
	})
	if got := domainsOf(t, e.open(t)); len(got) != n {
		t.Errorf("Domains() has %d rows; want %d", len(got), n)
	}
}

func classesOf(t *testing.T, s *store.Store, dmid int) []store.Class {
	t.Helper()
	cs, err := s.Classes(t.Context())
	ok(t, err, "Classes")
	var out []store.Class
	for _, c := range cs {
		if c.DomainID == dmid && c.ID != 0 {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b store.Class) int { return a.ID - b.ID })
	return out
}

func testClassCreate(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	other := mkDomain(t, s, "other")
	want := []store.Class{
		{DomainID: d.ID, Name: "big", MinDevCount: 3, ReplPolicy: "MultipleHosts(3)", HashType: store.HashMD5},
		{DomainID: d.ID, Name: "small", MinDevCount: 1},
		{DomainID: d.ID, Name: "Small", MinDevCount: 2, HashType: store.HashNone},
	}
	ids := map[int]bool{}
	for i, c := range want {
		got, err := s.CreateClass(ctx, c)
		ok(t, err, "CreateClass(%q)", c.Name)
		if got.ID <= 0 || ids[got.ID] {
			t.Fatalf("CreateClass(%q).ID = %d; want a new id above 0 (0 is default; have %v)", c.Name, got.ID, ids)
		}
		ids[got.ID] = true
		want[i].ID = got.ID
		if got != want[i] {
			t.Errorf("CreateClass returned %+v; want %+v", got, want[i])
		}
	}
	// The same name in another domain is a different class.
	oc, err := s.CreateClass(ctx, store.Class{DomainID: other.ID, Name: "big", MinDevCount: 1})
	ok(t, err, "CreateClass(big) in another domain")
	if got := classesOf(t, s, d.ID); !reflect.DeepEqual(got, want) {
		t.Errorf("Classes() of %q = %+v; want %+v", d.Name, got, want)
	}
	if got := classesOf(t, s, other.ID); !reflect.DeepEqual(got, []store.Class{oc}) {
		t.Errorf("Classes() of %q = %+v; want [%+v]", other.Name, got, oc)
	}
}

func testClassDefaultIsZero(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	c, err := s.CreateClass(ctx, store.Class{DomainID: d.ID, Name: "default", MinDevCount: 2})
	ok(t, err, "CreateClass(default)")
	if c.ID != 0 {
		t.Errorf("CreateClass(default).ID = %d; want 0", c.ID)
	}
	cs, err := s.Classes(ctx)
	ok(t, err, "Classes")
	want := store.Class{DomainID: d.ID, ID: 0, Name: "default", MinDevCount: 2}
	if !slices.Contains(cs, want) {
		t.Errorf("Classes() = %+v; want it to include %+v", cs, want)
	}
	n, err := s.CreateClass(ctx, store.Class{DomainID: d.ID, Name: "next", MinDevCount: 1})
	ok(t, err, "CreateClass(next)")
	if n.ID == 0 {
		t.Errorf("CreateClass(next).ID = 0; want a non-default id")
	}
}

func testClassDuplicate(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	d := mkDomain(t, a, "dom")
	c, err := a.CreateClass(t.Context(), store.Class{DomainID: d.ID, Name: "c", MinDevCount: 2})
	ok(t, err, "CreateClass")
	_, err = b.CreateClass(t.Context(), store.Class{DomainID: d.ID, Name: "c", MinDevCount: 3})
	isErr(t, err, store.ErrDuplicate, "CreateClass of a taken name")
	if got := classesOf(t, a, d.ID); !reflect.DeepEqual(got, []store.Class{c}) {
		t.Errorf("Classes() after refused duplicate = %+v; want [%+v]", got, c)
	}
}

func testClassDomainNotFound(t *testing.T, e *env) {
	s := e.open(t)
	d := mkDomain(t, s, "dom")
	_, err := s.CreateClass(t.Context(), store.Class{DomainID: d.ID + 1000, Name: "c", MinDevCount: 1})
	isErr(t, err, store.ErrNotFound, "CreateClass in an unknown domain")
	cs, err := s.Classes(t.Context())
	ok(t, err, "Classes")
	for _, c := range cs {
		if c.DomainID == d.ID+1000 {
			t.Errorf("Classes() has %+v after a refused CreateClass; want nothing written", c)
		}
	}
}

func testClassUpdate(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	c1, err := s.CreateClass(ctx, store.Class{DomainID: d.ID, Name: "one", MinDevCount: 1})
	ok(t, err, "CreateClass(one)")
	c2, err := s.CreateClass(ctx, store.Class{DomainID: d.ID, Name: "two", MinDevCount: 2})
	ok(t, err, "CreateClass(two)")

	up := store.Class{DomainID: d.ID, ID: c1.ID, Name: "uno", MinDevCount: 4, ReplPolicy: "MultipleHosts(2)", HashType: store.HashMD5}
	ok(t, s.UpdateClass(ctx, up), "UpdateClass")
	if got := classesOf(t, s, d.ID); !reflect.DeepEqual(got, []store.Class{up, c2}) {
		t.Fatalf("Classes() after update = %+v; want %+v", got, []store.Class{up, c2})
	}
	bad := up
	bad.Name = "two"
	isErr(t, s.UpdateClass(ctx, bad), store.ErrDuplicate, "UpdateClass to a taken name")
	missing := up
	missing.ID = c2.ID + 100
	missing.Name = "ghost"
	isErr(t, s.UpdateClass(ctx, missing), store.ErrNotFound, "UpdateClass of an unknown class")
	if got := classesOf(t, s, d.ID); !reflect.DeepEqual(got, []store.Class{up, c2}) {
		t.Errorf("Classes() after refused updates = %+v; want %+v", got, []store.Class{up, c2})
	}
}

func testClassDelete(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	c, err := s.CreateClass(ctx, store.Class{DomainID: d.ID, Name: "c", MinDevCount: 1})
	ok(t, err, "CreateClass")
	isErr(t, s.DeleteClass(ctx, d.ID, c.ID+100), store.ErrNotFound, "DeleteClass of an unknown class")
	f := mkFile(t, s, d.ID, "k")
	ok(t, s.SetFileClass(ctx, f.Fid, c.ID), "SetFileClass")
	isErr(t, s.DeleteClass(ctx, d.ID, c.ID), store.ErrHasFiles, "DeleteClass with a file in it")
	if got := classesOf(t, s, d.ID); !reflect.DeepEqual(got, []store.Class{c}) {
		t.Fatalf("Classes() after refused delete = %+v; want [%+v]", got, c)
	}
	ok(t, s.SetFileClass(ctx, f.Fid, 0), "SetFileClass(0)")
	ok(t, s.DeleteClass(ctx, d.ID, c.ID), "DeleteClass once empty")
	if got := classesOf(t, s, d.ID); len(got) != 0 {
		t.Errorf("Classes() after delete = %+v; want none", got)
	}
	isErr(t, s.DeleteClass(ctx, d.ID, c.ID), store.ErrNotFound, "second DeleteClass")
}

func testClassIDsConcurrent(t *testing.T, e *env) {
	s := e.open(t)
	d := mkDomain(t, s, "dom")
	const n = 18
	concurrentIDs(t, e, n, func(s *store.Store, i int) (int, error) {
		c, err := s.CreateClass(t.Context(), store.Class{DomainID: d.ID, Name: "c" + strconv.Itoa(i), MinDevCount: 1})
		return c.ID, err
	})
	if got := classesOf(t, s, d.ID); len(got) != n {
		t.Errorf("Classes() has %d rows; want %d", len(got), n)
	}
}

func hostsOf(t *testing.T, s *store.Store) []store.Host {
	t.Helper()
	hs, err := s.Hosts(t.Context())
	ok(t, err, "Hosts")
	slices.SortFunc(hs, func(a, b store.Host) int { return a.ID - b.ID })
	return hs
}

func testHostCreate(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	h1 := store.Host{Name: "stor1", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.0.1"}
	got, err := s.CreateHost(ctx, h1)
	ok(t, err, "CreateHost")
	if got.ID <= 0 {
		t.Fatalf("CreateHost().ID = %d; want a positive id", got.ID)
	}
	h1.ID = got.ID
	if got != h1 {
		t.Errorf("CreateHost() = %+v; want %+v", got, h1)
	}
	h2 := store.Host{ID: 42, Name: "stor2", Status: store.HostDown, HTTPPort: 7600, HTTPGetPort: 7601,
		IP: "10.0.0.2", AltIP: "192.168.0.2", AltMask: "192.168.0.0/24"}
	got, err = s.CreateHost(ctx, h2)
	ok(t, err, "CreateHost with an explicit id")
	if got != h2 {
		t.Errorf("CreateHost() = %+v; want %+v", got, h2)
	}
	if hs := hostsOf(t, s); !reflect.DeepEqual(hs, []store.Host{h1, h2}) {
		t.Errorf("Hosts() = %+v; want %+v", hs, []store.Host{h1, h2})
	}
}

func testHostDuplicate(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	h, err := s.CreateHost(ctx, store.Host{Name: "stor1", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.0.1"})
	ok(t, err, "CreateHost")
	for _, dup := range []store.Host{
		{Name: "stor1", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.0.9"},
		{Name: "stor9", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.0.1"},
		{ID: h.ID, Name: "stor8", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.0.8"},
	} {
		_, err := s.CreateHost(ctx, dup)
		isErr(t, err, store.ErrDuplicate, "CreateHost(%+v) clashing with %+v", dup, h)
	}
	if hs := hostsOf(t, s); !reflect.DeepEqual(hs, []store.Host{h}) {
		t.Errorf("Hosts() after refused duplicates = %+v; want [%+v]", hs, h)
	}
}

func testHostUpdate(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	h1, err := s.CreateHost(ctx, store.Host{Name: "stor1", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.0.1"})
	ok(t, err, "CreateHost")
	h2, err := s.CreateHost(ctx, store.Host{Name: "stor2", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.0.2"})
	ok(t, err, "CreateHost")
	up := store.Host{ID: h1.ID, Name: "stor1b", Status: store.HostReadOnly, HTTPPort: 7501, HTTPGetPort: 7502,
		IP: "10.0.1.1", AltIP: "172.16.0.1", AltMask: "172.16.0.0/16"}
	ok(t, s.UpdateHost(ctx, up), "UpdateHost")
	bad := up
	bad.Name = "stor2"
	isErr(t, s.UpdateHost(ctx, bad), store.ErrDuplicate, "UpdateHost to a taken name")
	missing := up
	missing.ID = h2.ID + 100
	missing.Name, missing.IP = "ghost", "10.9.9.9"
	isErr(t, s.UpdateHost(ctx, missing), store.ErrNotFound, "UpdateHost of an unknown host")
	if hs := hostsOf(t, s); !reflect.DeepEqual(hs, []store.Host{up, h2}) {
		t.Errorf("Hosts() = %+v; want %+v", hs, []store.Host{up, h2})
	}
}

func testHostDelete(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	h, err := s.CreateHost(ctx, store.Host{Name: "stor1", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.0.1"})
	ok(t, err, "CreateHost")
	_, err = s.CreateDevice(ctx, store.Device{ID: 1, HostID: h.ID, Status: store.DeviceAlive, Weight: 100})
	ok(t, err, "CreateDevice")
	isErr(t, s.DeleteHost(ctx, h.ID), store.ErrHasDevices, "DeleteHost with a device")
	if hs := hostsOf(t, s); !reflect.DeepEqual(hs, []store.Host{h}) {
		t.Fatalf("Hosts() after refused delete = %+v; want [%+v]", hs, h)
	}
	ok(t, s.DeleteDevice(ctx, 1), "DeleteDevice")
	ok(t, s.DeleteHost(ctx, h.ID), "DeleteHost")
	if hs := hostsOf(t, s); len(hs) != 0 {
		t.Errorf("Hosts() after delete = %+v; want none", hs)
	}
	isErr(t, s.DeleteHost(ctx, h.ID), store.ErrNotFound, "second DeleteHost")
}

func testHostIDsConcurrent(t *testing.T, e *env) {
	const n = 24
	concurrentIDs(t, e, n, func(s *store.Store, i int) (int, error) {
		h, err := s.CreateHost(t.Context(), store.Host{Name: "h" + strconv.Itoa(i), Status: store.HostAlive,
			HTTPPort: 7500, IP: fmt.Sprintf("10.1.0.%d", i+1)})
		return h.ID, err
	})
	if got := hostsOf(t, e.open(t)); len(got) != n {
		t.Errorf("Hosts() has %d rows; want %d", len(got), n)
	}
}

func devicesOf(t *testing.T, s *store.Store) []store.Device {
	t.Helper()
	ds, err := s.Devices(t.Context())
	ok(t, err, "Devices")
	slices.SortFunc(ds, func(a, b store.Device) int { return a.ID - b.ID })
	return ds
}

func deviceByID(t *testing.T, s *store.Store, id int) store.Device {
	t.Helper()
	for _, d := range devicesOf(t, s) {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("Devices() has no device %d", id)
	return store.Device{}
}

// sameDevice compares devices ignoring the usage timestamp.
func sameDevice(a, b store.Device) bool {
	a.MBAsOf, b.MBAsOf = time.Time{}, time.Time{}
	return a == b
}

func testDeviceCreate(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	h, err := s.CreateHost(ctx, store.Host{Name: "stor1", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.0.1"})
	ok(t, err, "CreateHost")
	d7 := store.Device{ID: 7, HostID: h.ID, Status: store.DeviceAlive, Weight: 100}
	got, err := s.CreateDevice(ctx, d7)
	ok(t, err, "CreateDevice(7)")
	if !sameDevice(got, d7) {
		t.Errorf("CreateDevice() = %+v; want %+v", got, d7)
	}
	auto := store.Device{HostID: h.ID, Status: store.DeviceReadOnly, Weight: 50}
	got, err = s.CreateDevice(ctx, auto)
	ok(t, err, "CreateDevice with id 0")
	if got.ID <= 0 || got.ID == 7 {
		t.Errorf("CreateDevice with id 0 got id %d; want a free positive id", got.ID)
	}
	auto.ID = got.ID
	if !sameDevice(got, auto) {
		t.Errorf("CreateDevice() = %+v; want %+v", got, auto)
	}
	ds := devicesOf(t, s)
	if len(ds) != 2 || !sameDevice(deviceByID(t, s, 7), d7) || !sameDevice(deviceByID(t, s, auto.ID), auto) {
		t.Errorf("Devices() = %+v; want %+v and %+v", ds, d7, auto)
	}
	_, err = s.CreateDevice(ctx, store.Device{ID: 99, HostID: h.ID + 100, Status: store.DeviceAlive, Weight: 100})
	isErr(t, err, store.ErrNotFound, "CreateDevice on an unknown host")
	if n := len(devicesOf(t, s)); n != 2 {
		t.Errorf("Devices() has %d rows after a refused create; want 2", n)
	}
}

func testDeviceDuplicate(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	h, err := a.CreateHost(ctx, store.Host{Name: "stor1", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.0.1"})
	ok(t, err, "CreateHost")
	d := store.Device{ID: 3, HostID: h.ID, Status: store.DeviceAlive, Weight: 100}
	_, err = a.CreateDevice(ctx, d)
	ok(t, err, "CreateDevice")
	_, err = b.CreateDevice(ctx, store.Device{ID: 3, HostID: h.ID, Status: store.DeviceDown, Weight: 10})
	isErr(t, err, store.ErrDuplicate, "CreateDevice with a taken id")
	if ds := devicesOf(t, a); len(ds) != 1 || !sameDevice(ds[0], d) {
		t.Errorf("Devices() after refused duplicate = %+v; want [%+v]", ds, d)
	}
}

func testDeviceState(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	id := mkDevices(t, s, 1)[0]
	for _, st := range []store.DeviceState{store.DeviceDown, store.DeviceReadOnly, store.DeviceDrain, store.DeviceDead, store.DeviceAlive} {
		ok(t, s.SetDeviceState(ctx, id, st), "SetDeviceState(%s)", st)
		if got := deviceByID(t, s, id).Status; got != st {
			t.Errorf("Status after SetDeviceState(%s) = %q; want %q", st, got, st)
		}
	}
	isErr(t, s.SetDeviceState(ctx, id, "broken"), store.ErrInvalid, "SetDeviceState(broken)")
	isErr(t, s.SetDeviceState(ctx, id, ""), store.ErrInvalid, "SetDeviceState(\"\")")
	if got := deviceByID(t, s, id).Status; got != store.DeviceAlive {
		t.Errorf("Status after refused SetDeviceState = %q; want %q", got, store.DeviceAlive)
	}
	isErr(t, s.SetDeviceState(ctx, id+100, store.DeviceDown), store.ErrNotFound, "SetDeviceState of an unknown device")
	if ds := devicesOf(t, s); len(ds) != 1 || ds[0].Status != store.DeviceAlive {
		t.Errorf("Devices() after a refused SetDeviceState = %+v; want only device %d, alive", ds, id)
	}
}

func testDeviceWeight(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	id := mkDevices(t, s, 1)[0]
	for _, w := range []int{0, 7, 1000} {
		ok(t, s.SetDeviceWeight(ctx, id, w), "SetDeviceWeight(%d)", w)
		if got := deviceByID(t, s, id).Weight; got != w {
			t.Errorf("Weight after SetDeviceWeight(%d) = %d; want %d", w, got, w)
		}
	}
	isErr(t, s.SetDeviceWeight(ctx, id, -1), store.ErrInvalid, "SetDeviceWeight(-1)")
	if got := deviceByID(t, s, id).Weight; got != 1000 {
		t.Errorf("Weight after refused SetDeviceWeight = %d; want 1000", got)
	}
	isErr(t, s.SetDeviceWeight(ctx, id+100, 5), store.ErrNotFound, "SetDeviceWeight of an unknown device")
	if ds := devicesOf(t, s); len(ds) != 1 || ds[0].Weight != 1000 {
		t.Errorf("Devices() after a refused SetDeviceWeight = %+v; want only device %d, weight 1000", ds, id)
	}
}

func testDeviceUsage(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	id := mkDevices(t, s, 1)[0]
	if d := deviceByID(t, s, id); d.MBTotal != 0 || d.MBUsed != 0 {
		t.Errorf("usage of a new device = %d/%d MiB; want zero", d.MBUsed, d.MBTotal)
	}
	const total, used = int64(4) << 20, int64(3) << 20 // 4 TiB, beyond 32 bits of bytes
	ok(t, s.SetDeviceUsage(ctx, id, total, used), "SetDeviceUsage")
	now := dbNow(t, s)
	d := deviceByID(t, s, id)
	if d.MBTotal != total || d.MBUsed != used {
		t.Errorf("usage = %d/%d MiB; want %d/%d", d.MBUsed, d.MBTotal, used, total)
	}
	if !within(d.MBAsOf, now, time.Minute) {
		t.Errorf("MBAsOf = %v; want the database clock (%v)", d.MBAsOf, now)
	}
}

func testDeviceDelete(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	ids := mkDevices(t, s, 2)
	d := mkDomain(t, s, "dom")
	f := mkFile(t, s, d.ID, "k", ids[0])
	isErr(t, s.DeleteDevice(ctx, ids[0]), store.ErrHasFiles, "DeleteDevice holding a file")
	if n := len(devicesOf(t, s)); n != 2 {
		t.Fatalf("Devices() has %d rows after a refused delete; want 2", n)
	}
	ok(t, s.DeleteDevice(ctx, ids[1]), "DeleteDevice of an empty device")
	_, err := s.RemoveFileOn(ctx, f.Fid, ids[0])
	ok(t, err, "RemoveFileOn")
	ok(t, s.DeleteDevice(ctx, ids[0]), "DeleteDevice once emptied")
	if ds := devicesOf(t, s); len(ds) != 0 {
		t.Errorf("Devices() after deletes = %+v; want none", ds)
	}
	isErr(t, s.DeleteDevice(ctx, ids[0]), store.ErrNotFound, "second DeleteDevice")
}

func testDomainDuplicateRace(t *testing.T, e *env) {
	ss := []*store.Store{e.open(t), e.open(t), e.open(t)}
	for round := range 4 {
		name := "race" + strconv.Itoa(round)
		doms := make([]store.Domain, 6)
		errs := parallel(len(doms), func(i int) error {
			var err error
			doms[i], err = ss[i%len(ss)].CreateDomain(t.Context(), name)
			return err
		})
		var won []store.Domain
		for i, err := range errs {
			if err == nil {
				won = append(won, doms[i])
			} else if !errors.Is(err, store.ErrDuplicate) {
				t.Errorf("round %d: CreateDomain %d: got error %v; want nil or %v", round, i, err, store.ErrDuplicate)
			}
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d concurrent CreateDomain(%q) succeeded (%v); want exactly 1", round, len(won), name, won)
		}
	}
	if got := domainsOf(t, ss[0]); len(got) != 4 {
		t.Errorf("Domains() = %v; want 4", got)
	}
}
