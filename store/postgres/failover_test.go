package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/postgres"
)

// TestParseDSN_HostList: a multi-host DSN, in URL and DBI form, reaches pgx
// as the whole list in order (not split at the last colon), with
// target_session_attrs passed through.
func TestParseDSN_HostList(t *testing.T) {
	for _, tc := range []struct {
		dsn  string
		want []string
		rw   bool
	}{
		{"postgres://root@127.0.0.1:5433,127.0.0.1:5434/test?sslmode=disable&target_session_attrs=read-write",
			[]string{"127.0.0.1:5433", "127.0.0.1:5434"}, true},
		{"DBI:Pg:dbname=test;host=10.0.0.1,10.0.0.2;port=5433,5434;target_session_attrs=read-write;sslmode=disable",
			[]string{"10.0.0.1:5433", "10.0.0.2:5434"}, true},
		{"DBI:Pg:dbname=test;host=db1,db2,db3;port=6432;sslmode=disable",
			[]string{"db1:6432", "db2:6432", "db3:6432"}, false},
		{"postgresql://[::1]:5433,[fe80::1%25eth0],db:7/test?sslmode=disable&target_session_attrs=primary",
			[]string{"::1:5433", "fe80::1%eth0:5432", "db:7"}, true},
		{"postgres://%2Fvar%2Frun%2Fpostgresql,127.0.0.1/test?sslmode=disable",
			[]string{"/var/run/postgresql:5432", "127.0.0.1:5432"}, false},
		{"postgres:///test?sslmode=disable", []string{"127.0.0.1:5432"}, false},
	} {
		d, err := store.ParseDSN(tc.dsn)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", tc.dsn, err)
			continue
		}
		got, rw, err := postgres.ConnTargets(d)
		if err != nil {
			t.Errorf("%q: %v", tc.dsn, err)
			continue
		}
		if !slices.Equal(got, tc.want) || rw != tc.rw {
			t.Errorf("%q: targets %q, read-write %v; want %q, %v", tc.dsn, got, rw, tc.want, tc.rw)
		}
		again, err := store.ParseDSN(d.Redacted())
		if err != nil || !slices.Equal(again.AllHosts(), d.AllHosts()) {
			t.Errorf("ParseDSN(Redacted(%q) = %q) hosts %v, %v; want %v", tc.dsn, d.Redacted(), again, err, d.AllHosts())
		}
	}
	for _, dsn := range []string{
		"DBI:Pg:dbname=test;host=a,b,c;port=1,2", // 2 ports for 3 hosts
		"postgres://u:s3cret@a,b/test?target_session_attrs=sometimes",
	} {
		_, err := store.Open(t.Context(), dsn)
		if !errors.Is(err, store.ErrBadDSN) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q) = %v; want ErrBadDSN without the password", dsn, err)
		}
	}
	d, _ := store.ParseDSN("postgres://u:it's%20s3cret@a/test")
	if pw, err := postgres.ConnPassword(d); err != nil || pw != "it's s3cret" {
		t.Errorf("password sent %q, %v; want %q", pw, err, "it's s3cret")
	}
}

// TestFailover_MultiHostDSN: a Store opened with a multi-host DSN and
// target_session_attrs=read-write keeps working when its primary is killed
// and the (synchronous) standby promoted: writes and reads go to the new
// primary, the lock held on the old one is reported lost, and the lock
// backend's own sessions (renewer, listener) reconnect to the new primary
// so locks can be taken again.
func TestFailover_MultiHostDSN(t *testing.T) {
	pg := privatePostgres(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	sb, err := pg.StartStandby(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Cleanup() })
	if err := pg.SetSynchronousStandby(ctx, true); err != nil {
		t.Fatal(err)
	}
	const lease = 2 * time.Second
	dsn := dbinstance.FailoverDSN("test", pg, sb) + "&lock_lease=" + lease.String()
	s := open(t, dsn)
	if _, err := s.CreateDomain(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	held := lock(t, s, "failover-held", time.Second)
	lost := lostAt(held)

	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := sb.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s, promoted %s in %v", pg.Addr(), sb.Addr(), time.Since(killed).Round(time.Millisecond))

	// The pool may hand out a connection to the dead primary once; new
	// connections must find the promoted standby within a few leases.
	deadline := time.Now().Add(10 * lease)
	for {
		_, err := s.CreateDomain(ctx, "after")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CreateDomain after the failover still failing after %v: %v", time.Since(killed), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("first write after %v", time.Since(killed).Round(time.Millisecond))
	doms, err := s.Domains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range doms {
		names = append(names, d.Name)
	}
	if !slices.Contains(names, "before") || !slices.Contains(names, "after") {
		t.Errorf("domains after the failover %q; want before (committed on the old primary) and after", names)
	}

	select {
	case <-lost:
	case <-time.After(2 * lease):
		t.Fatalf("the lock held on the killed primary not lost %v after the kill", time.Since(killed))
	}
	l, _ := grab(t, s, "failover-held", 10*lease)
	l.Release(ctx)
	l, _ = grab(t, s, "failover-new", 10*lease)
	defer l.Release(ctx)

	// The lock sessions are on the new primary.
	renew, listen, err := postgres.LockSessionPIDs(s)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, sb.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, pid := range []uint32{renew, listen} {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", int32(pid)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if pid == 0 || n != 1 {
			t.Errorf("lock session pid %d (renewer %d, listener %d) not on the promoted %s", pid, renew, listen, sb.Addr())
		}
	}
}
