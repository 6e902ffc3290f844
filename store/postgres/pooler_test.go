package postgres_test

import (
	"errors"
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
