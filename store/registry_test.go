package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// recordingDriver is a registry test double: it records the DSN it was asked
// to open and fails, so no database is involved or imitated.
type recordingDriver struct{ got *store.DSN }

var errRecorded = errors.New("recorded")

func (d *recordingDriver) Open(_ context.Context, dsn *store.DSN) (store.Backend, error) {
	d.got = dsn
	return nil, errRecorded
}

func TestRegister_OpenDispatchesByScheme(t *testing.T) {
	d := &recordingDriver{}
	store.Register("regtest", d, "regtest-alias")
	if !slices.Contains(store.Drivers(), "regtest-alias") {
		t.Fatalf("Drivers() = %v; want regtest-alias listed", store.Drivers())
	}
	_, err := store.Open(t.Context(), "REGTEST-ALIAS://u:pw@h/db")
	if !errors.Is(err, errRecorded) {
		t.Fatalf("Open error = %v; want the driver's error wrapped", err)
	}
	if strings.Contains(err.Error(), "pw") {
		t.Errorf("Open error %q leaks the password", err)
	}
	if d.got == nil || d.got.Database != "db" || d.got.User != "u" {
		t.Errorf("driver got %+v; want database db, user u", d.got)
	}
}

func TestOpen_UnknownBackendSaysHowToFix(t *testing.T) {
	for dsn, pkg := range map[string]string{
		"nosuchdb://h/db":      "store/nosuchdb?",
		"DBI:Pg:dbname=db":     "store/postgres?", // an alias names the backend's own package
		"postgresql://h/db":    "store/postgres?",
		"DBI:MariaDB:db":       "store/mysql?",
		"sqlite3:///tmp/x.db":  "store/sqlite?",
		"DBI:SQLite:/tmp/x.db": "store/sqlite?",
	} {
		_, err := store.Open(t.Context(), dsn)
		if !errors.Is(err, store.ErrNoDriver) {
			t.Fatalf("Open(%q) error = %v; want ErrNoDriver", dsn, err)
		}
		if !strings.Contains(err.Error(), "forgot to import github.com/gomogile/gomogile/"+pkg) {
			t.Errorf("Open(%q) error %q does not suggest importing %s", dsn, err, pkg)
		}
	}
}

// parsingDriver parses its own DSNs: the whole string after the scheme is
// a file path, so it records what the registry handed it.
type parsingDriver struct {
	recordingDriver
	raw string
}

func (d *parsingDriver) ParseDSN(raw string) (*store.DSN, error) {
	d.raw = raw
	_, path, _ := strings.Cut(raw, "://")
	if path == "" {
		return nil, fmt.Errorf("%w: no path", store.ErrBadDSN)
	}
	return &store.DSN{Database: path, Params: url.Values{"op_timeout": {"3s"}}}, nil
}

func TestRegister_DriverParsesItsOwnDSN(t *testing.T) {
	d := &parsingDriver{}
	store.Register("regparse", d, "RegParse-Alias")
	_, err := store.Open(t.Context(), "regparse-alias://C:/var/lib/x.db")
	if !errors.Is(err, errRecorded) {
		t.Fatalf("Open error = %v; want the driver's error wrapped", err)
	}
	if d.raw != "regparse-alias://C:/var/lib/x.db" {
		t.Errorf("driver's ParseDSN got %q; want the DSN as written", d.raw)
	}
	got := d.got
	if got == nil || got.Database != "C:/var/lib/x.db" || got.Driver != "regparse" || got.OpTimeout != 3*time.Second {
		t.Errorf("driver got %+v; want its own parse, Driver regparse (the registered name), op_timeout taken out", got)
	}
	if _, left := got.Params["op_timeout"]; left {
		t.Errorf("op_timeout left in Params %v", got.Params)
	}
	if _, err := store.ParseDSN("regparse://"); !errors.Is(err, store.ErrBadDSN) {
		t.Errorf("ParseDSN through the driver's parser: error %v; want its ErrBadDSN", err)
	}
}

func TestRegister_AliasParsesToRegisteredName(t *testing.T) {
	store.Register("regcanon", &recordingDriver{}, "regcanon-url", "RegCanonDBI")
	for _, in := range []string{"REGCANON-URL://h/db", "DBI:RegCanonDbi:db"} {
		d, err := store.ParseDSN(in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Driver != "regcanon" || d.Database != "db" {
			t.Errorf("ParseDSN(%q) = %+v; want Driver regcanon, Database db", in, d)
		}
	}
}

func TestRegister_PanicsOnMisuse(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	store.Register("regtest-dup", &recordingDriver{})
	mustPanic("duplicate", func() { store.Register("REGTEST-DUP", &recordingDriver{}) })
	mustPanic("nil driver", func() { store.Register("regtest-nil", nil) })
	mustPanic("empty name", func() { store.Register("", &recordingDriver{}) })
}

func TestCheckLock(t *testing.T) {
	ok := []string{"a", "mgfs:fid:1", strings.Repeat("é", 127) + "x", strings.Repeat("x", 255)}
	for _, n := range ok {
		if err := store.CheckLock(n, 0); err != nil {
			t.Errorf("CheckLock(%d bytes) = %v; want nil", len(n), err)
		}
	}
	bad := []string{"", strings.Repeat("x", 256), "\xff\xfe"}
	for _, n := range bad {
		if err := store.CheckLock(n, 0); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CheckLock(%q) = %v; want ErrInvalid", n, err)
		}
	}
	if err := store.CheckLock("a", -1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("negative timeout: %v; want ErrInvalid", err)
	}
}

// lock_dsn, a parameter common to every backend, and WithLockDSN reach the
// backend parsed, as DSN.Locks, and not as a parameter of its own.
func TestOpen_LockDSN(t *testing.T) {
	d := &recordingDriver{}
	store.Register("reglocks", d)
	lock := "etcd://a:1,b:2/pfx?ttl=5"
	store.Open(t.Context(), "reglocks://h/db?lock_dsn="+url.QueryEscape(lock)+"&x=1")
	if d.got == nil || d.got.Locks == nil {
		t.Fatalf("driver got %+v; want Locks set", d.got)
	}
	if l := d.got.Locks; l.Driver != "etcd" || len(l.Hosts) != 2 || l.Path != "/pfx" || l.Params.Get("ttl") != "5" {
		t.Errorf("Locks = %+v; want etcd on a:1,b:2 prefix /pfx ttl 5", l)
	}
	if d.got.Params.Has("lock_dsn") || d.got.Params.Get("x") != "1" {
		t.Errorf("Params = %v; want x only", d.got.Params)
	}
	store.Open(t.Context(), "reglocks://h/db?lock_dsn="+url.QueryEscape(lock), store.WithLockDSN("etcd://c/other"))
	if l := d.got.Locks; l == nil || l.Host != "c" || l.Path != "/other" {
		t.Errorf("WithLockDSN: Locks = %+v; want it to override the parameter", l)
	}
	store.Open(t.Context(), "reglocks://h/db?lock_dsn="+url.QueryEscape(lock), store.WithLockDSN(""))
	if d.got.Locks != nil {
		t.Errorf(`WithLockDSN(""): Locks = %+v; want the database's own`, d.got.Locks)
	}
	for _, bad := range []string{"reglocks://h/db?lock_dsn=", "reglocks://h/db?lock_dsn=a&lock_dsn=b", "reglocks://h/db?lock_dsn=%3A%2F%2Fno-scheme"} {
		if _, err := store.Open(t.Context(), bad); !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("Open(%q) = %v; want ErrBadDSN", bad, err)
		}
	}
	if _, err := store.OpenLockService(t.Context(), &store.DSN{Driver: "nosuchlocks"}); !errors.Is(err, store.ErrNoDriver) ||
		!strings.Contains(err.Error(), "store/nosuchlocks") {
		t.Errorf("OpenLockService of an unknown service = %v; want ErrNoDriver naming the import", err)
	}
}
