package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/postgres"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// recLocks records the lifecycle calls New and Close make on a real lock
// backend, and what the database held when Start ran.
type recLocks struct {
	store.LockService
	cfg      sqlstore.Config
	calls    *[]string
	startErr error
	schemaAt int // schema_version seen by Start
}

func (r *recLocks) Start(ctx context.Context) error {
	*r.calls = append(*r.calls, "start")
	var v string
	if err := r.cfg.DB.QueryRowContext(ctx, "SELECT value FROM server_settings WHERE field = 'schema_version'").Scan(&v); err == nil {
		r.schemaAt, _ = strconv.Atoi(v)
	}
	if r.startErr != nil {
		return r.startErr
	}
	return r.LockService.(sqlstore.LockStarter).Start(ctx)
}

func (r *recLocks) Close() error {
	*r.calls = append(*r.calls, "locks.Close")
	return r.LockService.Close()
}

func newRec(t *testing.T, startErr error) (sqlstore.Config, *recLocks, *[]string) {
	t.Helper()
	d, err := store.ParseDSN(testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := postgres.NewConfig(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	calls := &[]string{}
	r := &recLocks{LockService: cfg.Locks, cfg: cfg, calls: calls, startErr: startErr}
	cfg.Locks = r
	cfg.OnClose = func() error { *calls = append(*calls, "OnClose"); return nil }
	return cfg, r, calls
}

// TestLifecycleOrder: New migrates, then starts the locks, then returns a
// Store that can lock; Close stops the locks before OnClose and the DB.
func TestLifecycleOrder(t *testing.T) {
	cfg, r, calls := newRec(t, nil)
	s, err := sqlstore.New(t.Context(), cfg)
	if err != nil {
		cfg.DB.Close()
		t.Fatal(err)
	}
	if r.schemaAt != store.SchemaVersion {
		t.Errorf("Start ran with schema_version %d; want %d (migrate first)", r.schemaAt, store.SchemaVersion)
	}
	l, err := s.Lock(t.Context(), "lifecycle", 0)
	if err != nil {
		t.Fatalf("Lock right after New: %v", err)
	}
	_ = l.Release(t.Context())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"start", "locks.Close", "OnClose"}; !slices.Equal(*calls, want) {
		t.Errorf("calls %v; want %v", *calls, want)
	}
}

// TestLifecycleStartFails: a Start error comes back from New as it is, and
// New, which owns cfg from the call on, closes it as Close would: the
// locks, OnClose, the DB. A backend's Open is then NewConfig and New,
// with nothing to clean up itself.
func TestLifecycleStartFails(t *testing.T) {
	boom := errors.New("boom")
	cfg, _, calls := newRec(t, boom)
	if _, err := sqlstore.New(t.Context(), cfg); !errors.Is(err, boom) {
		t.Fatalf("New: %v; want %v", err, boom)
	}
	if want := []string{"start", "locks.Close", "OnClose"}; !slices.Equal(*calls, want) {
		t.Errorf("calls %v; want %v", *calls, want)
	}
	if err := cfg.DB.PingContext(t.Context()); err == nil {
		t.Errorf("DB still open after a failed New; want it closed")
	}
}

// TestLifecycleMigrateFails: a database New refuses (a newer schema) gets
// the same clean-up, before any lock was started.
func TestLifecycleMigrateFails(t *testing.T) {
	cfg, _, calls := newRec(t, nil)
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS server_settings (field VARCHAR(50) PRIMARY KEY, value VARCHAR(255))",
		"DELETE FROM server_settings WHERE field = 'schema_version'",
		"INSERT INTO server_settings (field, value) VALUES ('schema_version', '99')",
	} {
		if _, err := cfg.DB.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sqlstore.New(t.Context(), cfg); !errors.Is(err, store.ErrSchemaMismatch) {
		t.Fatalf("New on schema 99: %v; want ErrSchemaMismatch", err)
	}
	if want := []string{"locks.Close", "OnClose"}; !slices.Equal(*calls, want) {
		t.Errorf("calls %v; want %v", *calls, want)
	}
	if err := cfg.DB.PingContext(t.Context()); err == nil {
		t.Errorf("DB still open after a failed New; want it closed")
	}
}

// As gives the pool, the dialect and the lock mechanism New was given,
// and nothing else.
func TestAs(t *testing.T) {
	cfg, r, _ := newRec(t, nil)
	s, err := sqlstore.New(t.Context(), cfg)
	if err != nil {
		cfg.DB.Close()
		t.Fatal(err)
	}
	defer s.Close()
	var db *sql.DB
	var d sqlstore.Dialect
	var ls store.LockService
	if !s.As(&db) || db != cfg.DB || !s.As(&d) || d != cfg.Dialect || !s.As(&ls) || ls != store.LockService(r) {
		t.Errorf("As gave pool %p, dialect %v, locks %T; want New's %p, %v, %T", db, d, ls, cfg.DB, cfg.Dialect, cfg.Locks)
	}
	var n int
	if s.As(&n) || s.As(nil) {
		t.Error("As set a target of a type it does not give")
	}
}
