package sqlite_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/etcd"
)

// etcdHarness runs the suite with the Stores' locks in etcd (lock_dsn).
type etcdHarness struct {
	*harness
	locks string
}

func (h *etcdHarness) DSN() string { return testdb.WithLockDSN(h.harness.DSN(), h.locks) }

// FaultsFor: the lock service's own faults (the Store's), not the
// embedded database's.
func (h *etcdHarness) FaultsFor(*store.Store) conformance.Faults { return nil }

// TestConformanceEtcd runs the suite again with the locks in etcd.
func TestConformanceEtcd(t *testing.T) {
	conformance.Run(t, &etcdHarness{harness: newHarness(t), locks: testdb.Etcd(t)})
}

// Trackers on one database must lock in one place: a Store with another
// lock service than the one recorded is refused, before it locks anything.
func TestLockService_Mismatch(t *testing.T) {
	h := newHarness(t)
	s := openStore(t, h)
	s.Close()
	_, err := store.Open(t.Context(), h.DSN(), store.WithLockDSN("etcd://127.0.0.1:1/elsewhere"))
	if !errors.Is(err, store.ErrLockServiceMismatch) {
		t.Fatalf("Open with lock_dsn on a database of the database's own locks = %v; want ErrLockServiceMismatch", err)
	}
	if !strings.Contains(err.Error(), `"database"`) || !strings.Contains(err.Error(), "etcd:///elsewhere") {
		t.Errorf("error %q names neither where the locks are nor where they would be", err)
	}
}

// noLocksDriver opens SQLite Stores ignoring lock_dsn, as a backend that
// does not support it would.
type noLocksDriver struct{}

func (noLocksDriver) Open(ctx context.Context, d *store.DSN) (store.Backend, error) {
	dd := *d
	dd.Locks, dd.Driver = nil, "sqlite"
	return store.OpenDSN(ctx, &dd)
}

// ParseDSN reads the DSN as the SQLite backend's.
func (noLocksDriver) ParseDSN(raw string) (*store.DSN, error) {
	d, err := store.ParseDSN("sqlite" + strings.TrimPrefix(raw, "sqlite-ignoring-locks"))
	if err != nil {
		return nil, err
	}
	d.Driver = "sqlite-ignoring-locks"
	return d, nil
}

func init() { store.Register("sqlite-ignoring-locks", noLocksDriver{}) }

// A backend that does not keep its locks where lock_dsn says is refused by
// store.Open, not silently given locks nobody else sees.
func TestLockService_IgnoredRefused(t *testing.T) {
	h := newHarness(t)
	_, err := store.Open(t.Context(), "sqlite-ignoring-locks://"+h.path, store.WithLockDSN("etcd://127.0.0.1:1/x"))
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "lock_dsn") {
		t.Fatalf("Open of a backend ignoring lock_dsn = %v; want ErrInvalid naming lock_dsn", err)
	}
}
