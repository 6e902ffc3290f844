package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gomogile/gomogile/store"
)

// PgBouncer answers every failed server login at connect with SQLSTATE
// 08P01 — the server down or starting up ("server login has been failing,
// try again later"), as the torture's crashes make it, or a database the
// server refuses — which Open must report as store.ErrUnavailable, a
// connection-level failure, not as an error no sentinel matches.
func TestOpen_PgBouncerLoginFailure(t *testing.T) {
	bouncer := privateBouncer(t, privatePostgres(t))
	dsn := withParams(bouncer.DSN("gomogile_no_such_db"), "default_query_exec_mode=simple_protocol", "lock_notify=false", "connect_timeout=10")
	s, err := store.Open(t.Context(), dsn)
	if err == nil {
		s.Close()
		t.Fatal("Open through PgBouncer of a database the server refuses succeeded")
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "08P01" {
		t.Fatalf("Open: %v, want PgBouncer's SQLSTATE 08P01", err)
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open: %v, want store.ErrUnavailable", err)
	}
}

// The PgBouncer harness's Reset starts its pooler again when it died, and
// says so, so that one death does not fail every later case of the suite.
func TestHarness_RestartsDeadPooler(t *testing.T) {
	pg := privatePostgres(t)
	bouncer := privateBouncer(t, pg)
	var logged []string
	h := &harness{
		dsn:     withParams(bouncer.DSN("test"), "lock_notify=false", "default_query_exec_mode=simple_protocol"),
		admin:   pg.DSN("test"),
		pooled:  true,
		bouncer: bouncer,
		logf:    func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) },
	}
	if err := bouncer.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := h.Reset(t.Context()); err != nil {
		t.Fatalf("Reset with the pooler dead: %v", err)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "died") {
		t.Errorf("Reset logged %q; want one line about the pooler's death", logged)
	}
	s, err := store.Open(t.Context(), h.DSN())
	if err != nil {
		t.Fatalf("Open through the restarted pooler: %v", err)
	}
	s.Close()
}
