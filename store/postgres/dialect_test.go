package postgres_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store/postgres"
	"github.com/gomogile/gomogile/store/sqlstore"
)

func TestDialect_Rebind(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT ? , ?", "SELECT $1 , $2"},
		{"WHERE a = ? AND b = '?' AND c = ?", "WHERE a = $1 AND b = '?' AND c = $2"},
		{"WHERE a = 'it''s ?' AND b = ?", "WHERE a = 'it''s ?' AND b = $1"},
		{`SELECT "odd?col" FROM t WHERE x = ?`, `SELECT "odd?col" FROM t WHERE x = $1`},
		{"SELECT ? -- why?\n, ?", "SELECT $1 -- why?\n, $2"},
		{"SELECT /* ? */ ?", "SELECT /* ? */ $1"},
		{"VALUES (?,?,?,?,?,?,?,?,?,?,?)", "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)"},
	} {
		if got := (postgres.Dialect{}).Rebind(tc.in); got != tc.want {
			t.Errorf("Rebind(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestDialect_UpsertText(t *testing.T) {
	d := postgres.Dialect{}
	for _, tc := range []struct {
		table     string
		cols, key []string
		update    string
		want      string
	}{
		{"file_on", []string{"fid", "devid"}, []string{"fid", "devid"}, "",
			"INSERT INTO file_on (fid, devid) VALUES (?, ?) ON CONFLICT (fid, devid) DO NOTHING"},
		{"server_settings", []string{"field", "value"}, []string{"field"}, "value = " + d.Excluded("value"),
			"INSERT INTO server_settings (field, value) VALUES (?, ?) ON CONFLICT (field) DO UPDATE SET value = EXCLUDED.value"},
		{"file_to_replicate", []string{"fid", "nexttry"}, []string{"fid"}, "nexttry = " + d.Least("file_to_replicate.nexttry", d.Excluded("nexttry")) + ", failcount = 0",
			"INSERT INTO file_to_replicate (fid, nexttry) VALUES (?, ?) ON CONFLICT (fid) DO UPDATE SET nexttry = LEAST(file_to_replicate.nexttry, EXCLUDED.nexttry), failcount = 0"},
	} {
		if got := d.Upsert(tc.table, tc.cols, tc.key, tc.update); got != tc.want {
			t.Errorf("Upsert(%s, %q):\n got %s\nwant %s", tc.table, tc.update, got, tc.want)
		}
	}
}

// testDB opens a Store on a fresh database (so the schema exists) and
// returns the DSN and the Store's pool.
func testDB(t *testing.T) (string, *sql.DB) {
	dsn := testdb.Postgres(t)
	s := open(t, dsn)
	db, ok := sqlaccess.DB(s)
	if !ok {
		t.Fatalf("%T opens up no pool", s)
	}
	return dsn, db
}

// TestDialect_UpsertRuns runs Upsert's statements on the server, where an
// unqualified column of the existing row would be ambiguous.
func TestDialect_UpsertRuns(t *testing.T) {
	_, db := testDB(t)
	d := postgres.Dialect{}
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, "CREATE TEMP TABLE counter (name TEXT PRIMARY KEY, n BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	inc := d.Rebind(d.Upsert("counter", []string{"name", "n"}, []string{"name"}, "n = counter.n + "+d.Excluded("n")))
	low := d.Rebind(d.Upsert("counter", []string{"name", "n"}, []string{"name"}, "n = "+d.Least("counter.n", d.Excluded("n"))))
	keep := d.Rebind(d.Upsert("counter", []string{"name", "n"}, []string{"name"}, ""))
	conn, err := db.Conn(ctx) // TEMP tables live in one session
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, step := range []struct {
		q    string
		n    int64
		want int64
	}{{inc, 5, 5}, {inc, 7, 12}, {low, 20, 12}, {low, 3, 3}, {keep, 100, 3}} {
		if _, err := conn.ExecContext(ctx, step.q, "c", step.n); err != nil {
			t.Fatalf("%s: %v", step.q, err)
		}
		var got int64
		if err := conn.QueryRowContext(ctx, "SELECT n FROM counter WHERE name = 'c'").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != step.want {
			t.Fatalf("after %s with %d: n = %d; want %d", step.q, step.n, got, step.want)
		}
	}
}

func TestDialect_UnixNowAndByteOrder(t *testing.T) {
	_, db := testDB(t)
	d := postgres.Dialect{}
	ctx := t.Context()
	var now int64
	var exact float64
	if err := db.QueryRowContext(ctx, "SELECT "+d.UnixNow()+", EXTRACT(EPOCH FROM statement_timestamp())::float8").Scan(&now, &exact); err != nil {
		t.Fatal(err)
	}
	if now != int64(exact) {
		t.Errorf("UnixNow = %d; want the statement time truncated, %d (from %f)", now, int64(exact), exact)
	}
	if d := time.Since(time.Unix(now, 0)); d < -2*time.Second || d > 2*time.Second {
		t.Errorf("UnixNow is %v away from this machine's clock; want about now", d)
	}

	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A linguistic collation, where "a" < "B", makes the test meaningful.
	var coll string
	err = conn.QueryRowContext(ctx, `SELECT COALESCE(
		(SELECT quote_ident(collname) FROM pg_collation WHERE collname IN ('en-US-x-icu', 'und-x-icu') ORDER BY collname LIMIT 1),
		(SELECT quote_ident(collname) FROM pg_collation WHERE collname ILIKE 'en_US%' LIMIT 1),
		'"default"')`).Scan(&coll)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("column collation %s", coll)
	if _, err := conn.ExecContext(ctx, `CREATE TEMP TABLE k (dkey VARCHAR(255) COLLATE `+coll+`)`); err != nil {
		t.Fatal(err)
	}
	keys := []string{"b", "B", "a", "é", "e", "a_b", "aB", "Z", "ab"}
	for _, k := range keys {
		if _, err := conn.ExecContext(ctx, d.Rebind("INSERT INTO k VALUES (?)"), k); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.QueryContext(ctx, d.Rebind("SELECT dkey FROM k WHERE "+d.ByteOrder("dkey")+" > ? ORDER BY "+d.ByteOrder("dkey")), "B")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		got = append(got, k)
	}
	var want []string
	for _, k := range keys {
		if k > "B" {
			want = append(want, k)
		}
	}
	slices.Sort(want) // Go compares strings bytewise
	if !slices.Equal(got, want) {
		t.Errorf("keys after \"B\" in ByteOrder = %q; want %q", got, want)
	}
}

func TestDialect_Classify(t *testing.T) {
	dsn, db := testDB(t)
	d := postgres.Dialect{}
	ctx := t.Context()

	// Real server errors.
	if _, err := db.ExecContext(ctx, "INSERT INTO domain (dmid, namespace) VALUES (1, 'x')"); err != nil {
		t.Fatal(err)
	}
	_, dup := db.ExecContext(ctx, "INSERT INTO domain (dmid, namespace) VALUES (2, 'x')")
	_, syntax := db.ExecContext(ctx, "SELEC 1")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, cancelled := db.ExecContext(cctx, "SELECT 1")
	tctx, tcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer tcancel()
	_, timedOut := db.ExecContext(tctx, "SELECT pg_sleep(5)")

	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pid int64
	if err := conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	adminExec(t, dsn, "SELECT pg_terminate_backend($1::int)", pid)
	time.Sleep(50 * time.Millisecond) // let the FATAL message arrive
	_, killed := conn.ExecContext(ctx, "SELECT 1")
	conn.Close()

	// Connections never made: nothing listens on the port; the server
	// refuses the login (a database that does not exist).
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	connectErr := func(u url.URL) error {
		db, err := sql.Open("pgx", u.String())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_, err = db.ExecContext(ctx, "SELECT 1")
		return err
	}
	nowhere, noSuchDB := *u, *u
	nowhere.Host = testdb.ClosedAddr(t)
	noSuchDB.Path = "/gomogile_no_such_database"
	refused, loginRefused := connectErr(nowhere), connectErr(noSuchDB)

	for _, tc := range []struct {
		name string
		err  error
		want sqlstore.ErrorKind
	}{
		{"UniqueViolation", dup, sqlstore.ErrKindDuplicate},
		{"Syntax", syntax, sqlstore.ErrOther},
		{"Cancelled", cancelled, sqlstore.ErrOther},
		{"TimedOut", timedOut, sqlstore.ErrOther},
		{"SessionKilled", killed, sqlstore.ErrKindConnLost},
		{"Serialization", &pgconn.PgError{Code: "40001"}, sqlstore.ErrKindRetry},
		{"Deadlock", &pgconn.PgError{Code: "40P01"}, sqlstore.ErrKindRetry},
		{"LockNotAvailable", &pgconn.PgError{Code: "55P03"}, sqlstore.ErrKindRetry},
		{"AdminShutdown", &pgconn.PgError{Code: "57P01", Severity: "FATAL"}, sqlstore.ErrKindConnLost},
		{"ConnectionFailure", &pgconn.PgError{Code: "08006"}, sqlstore.ErrKindConnLost},
		// No server disk can be filled here without root; the code is
		// what a table or the WAL that cannot grow reports.
		{"DiskFull", &pgconn.PgError{Code: "53100", Message: `could not extend file "base/16384/16385": No space left on device`}, sqlstore.ErrKindNoSpace},
		// PgBouncer wraps every server login failure in 08P01.
		{"PoolerLoginFailing", &pgconn.PgError{Severity: "FATAL", Code: "08P01", Message: "server login has been failing, try again later (server_login_retry)"}, sqlstore.ErrKindConnLost},
		{"PoolerCannotConnect", &pgconn.PgError{Severity: "FATAL", Code: "08P01", Message: "pgbouncer cannot connect to server"}, sqlstore.ErrKindConnLost},
		{"CannotConnectNow", &pgconn.PgError{Severity: "FATAL", Code: "57P03", Message: "the database system is starting up"}, sqlstore.ErrKindConnLost},
		{"Refused", refused, sqlstore.ErrKindUnsent},
		{"LoginRefused", loginRefused, sqlstore.ErrOther},
		{"BadConn", fmt.Errorf("x: %w", driver.ErrBadConn), sqlstore.ErrKindUnsent},
		{"EOF", fmt.Errorf("read: %w", io.EOF), sqlstore.ErrKindConnLost},
		// What pgx returns for a statement on a connection it has closed,
		// e.g. its statement cache cleanup after a killed session (seen by
		// the torture program).
		{"ConnClosed", fmt.Errorf("failed to deallocate cached statement(s): %w", pgconn.ErrConnClosed), sqlstore.ErrKindConnLost},
		{"Plain", errors.New("something else"), sqlstore.ErrOther},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error to classify", tc.name)
			continue
		}
		if got := d.Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%s: %v) = %d; want %d", tc.name, tc.err, got, tc.want)
		}
	}
}
