package mysql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// db returns the pool of a Store opened on h's database (so the schema
// exists), for statements the Store does not offer.
func (h *harness) db(t testing.TB) *sql.DB {
	t.Helper()
	s := h.open(t)
	db, ok := sqlaccess.DB(s)
	if !ok {
		t.Fatalf("%T opens up no pool", s)
	}
	return db
}

// Errors come from the real server, provoked as they happen in production.
func TestDialect_Classify(t *testing.T) {
	h := newHarness(t)
	db := h.db(t)
	d := (mysql.Dialect{})
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("INSERT INTO domain (dmid, namespace) VALUES (1, 'a'), (2, 'b')")

	_, dup := db.ExecContext(ctx, "INSERT INTO domain (dmid, namespace) VALUES (3, 'a')")
	_, syntax := db.ExecContext(ctx, "INSERT INTO nowhere VALUES (1)")

	// Lock wait timeout: a row held by another transaction, a 1s wait.
	c1, c2 := conn(t, db), conn(t, db)
	tx1, err := c1.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx1.ExecContext(ctx, "UPDATE domain SET namespace = 'a1' WHERE dmid = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	_, wait := c2.ExecContext(ctx, "UPDATE domain SET namespace = 'a2' WHERE dmid = 1")
	if _, err := c2.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = DEFAULT"); err != nil {
		t.Fatal(err)
	}

	// Deadlock: each transaction holds the row the other wants.
	tx2, err := c2.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx2.ExecContext(ctx, "UPDATE domain SET namespace = 'b2' WHERE dmid = 2"); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := tx1.ExecContext(ctx, "UPDATE domain SET namespace = 'b1' WHERE dmid = 2")
		first <- err
	}()
	time.Sleep(100 * time.Millisecond)
	_, second := tx2.ExecContext(ctx, "UPDATE domain SET namespace = 'a3' WHERE dmid = 1")
	deadlock := second
	if deadlock == nil {
		deadlock = <-first
	} else {
		tx2.Rollback()
		<-first
	}
	tx1.Rollback()
	tx2.Rollback()

	// A killed session.
	c3 := conn(t, db)
	var id uint64
	if err := c3.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	h.kill(t, id)
	time.Sleep(50 * time.Millisecond)
	var one int
	lost := c3.QueryRowContext(ctx, "SELECT 1").Scan(&one)

	// A full table (1114), as InnoDB reports a tablespace that cannot
	// grow: here a MEMORY table at its session's max_heap_table_size.
	c4 := conn(t, db)
	for _, q := range []string{"SET SESSION max_heap_table_size = 16384",
		"CREATE TEMPORARY TABLE full_table (x CHAR(200)) ENGINE=MEMORY",
		"INSERT INTO full_table VALUES (REPEAT('x', 200))"} {
		if _, err := c4.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var full error
	for i := 0; i < 20 && full == nil; i++ {
		_, full = c4.ExecContext(ctx, "INSERT INTO full_table SELECT x FROM full_table")
	}

	// A connection never made: nothing listens on the port.
	down, err := sql.Open("mysql", "root@tcp("+testdb.ClosedAddr(t)+")/test")
	if err != nil {
		t.Fatal(err)
	}
	_, refused := down.ExecContext(ctx, "SELECT 1")
	down.Close()

	for _, tt := range []struct {
		what string
		err  error
		want sqlstore.ErrorKind
	}{
		{"table full", full, sqlstore.ErrKindNoSpace},
		{"duplicate key", dup, sqlstore.ErrKindDuplicate},
		{"lock wait timeout", wait, sqlstore.ErrKindRetry},
		{"deadlock", deadlock, sqlstore.ErrKindRetry},
		{"killed session", lost, sqlstore.ErrKindConnLost},
		{"connection refused", refused, sqlstore.ErrKindUnsent},
		{"bad connection", fmt.Errorf("exec: %w", driver.ErrBadConn), sqlstore.ErrKindUnsent},
		{"missing table", syntax, sqlstore.ErrOther},
		{"no rows", sql.ErrNoRows, sqlstore.ErrOther},
		{"nil", nil, sqlstore.ErrOther},
	} {
		if tt.err == nil && tt.what != "nil" {
			t.Errorf("%s: the server reported no error", tt.what)
			continue
		}
		if got := d.Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%s: %v) = %d; want %d", tt.what, tt.err, got, tt.want)
		}
	}
}

func conn(t testing.TB, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDialect_Upsert(t *testing.T) {
	h := newHarness(t)
	db := h.db(t)
	d := (mysql.Dialect{})
	ctx := context.Background()
	nothing := d.Upsert("server_settings", []string{"field", "value"}, []string{"field"}, "")
	replace := d.Upsert("server_settings", []string{"field", "value"}, []string{"field"}, "value = "+d.Excluded("value"))
	affected := func(q string, args ...any) int64 {
		t.Helper()
		r, err := db.ExecContext(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		n, _ := r.RowsAffected()
		return n
	}
	value := func(k string) string {
		t.Helper()
		var v string
		if err := db.QueryRowContext(ctx, "SELECT value FROM server_settings WHERE field = ?", k).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if n := affected(nothing, "k", "1"); n != 1 {
		t.Errorf("first do-nothing upsert affected %d rows; want 1 (inserted)", n)
	}
	if n := affected(nothing, "k", "2"); n != 0 {
		t.Errorf("second do-nothing upsert affected %d rows; want 0", n)
	}
	if v := value("k"); v != "1" {
		t.Errorf("after do-nothing upsert value = %q; want 1", v)
	}
	affected(replace, "k", "3")
	if v := value("k"); v != "3" {
		t.Errorf("after replacing upsert value = %q; want 3", v)
	}

	earlier := d.Upsert("file_to_replicate", []string{"fid", "nexttry"}, []string{"fid"},
		"nexttry = "+d.Least("file_to_replicate.nexttry", d.Excluded("nexttry")))
	affected(earlier, 7, 100)
	affected(earlier, 7, 200)
	affected(earlier, 7, 50)
	var next int
	if err := db.QueryRowContext(ctx, "SELECT nexttry FROM file_to_replicate WHERE fid = 7").Scan(&next); err != nil {
		t.Fatal(err)
	}
	if next != 50 {
		t.Errorf("nexttry after upserts of 100, 200, 50 = %d; want 50", next)
	}

	// "Do nothing" swallows the conflict only, never another error.
	dev := d.Upsert("device", []string{"devid", "hostid", "status"}, []string{"devid"}, "")
	if _, err := db.ExecContext(ctx, dev, 1, 1, "exploded"); err == nil {
		t.Errorf("do-nothing upsert of an invalid status succeeded; want the server's error")
	}
}

// ByteOrder sorts and compares by bytes even on a case-insensitive,
// PAD SPACE collation such as a mogdbsetup database may have.
func TestDialect_ByteOrder(t *testing.T) {
	h := newHarness(t)
	db := h.db(t)
	d := (mysql.Dialect{})
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE ci (k VARCHAR(50) COLLATE utf8mb4_general_ci) DEFAULT CHARSET=utf8mb4"); err != nil {
		t.Fatal(err)
	}
	keys := []string{"b", "B", "a", "A", "é", "a ", "Z"}
	for _, k := range keys {
		if _, err := db.ExecContext(ctx, "INSERT INTO ci VALUES (?)", k); err != nil {
			t.Fatal(err)
		}
	}
	query := func(q string, args ...any) []string {
		t.Helper()
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var k string
			rows.Scan(&k)
			out = append(out, k)
		}
		return out
	}
	want := slices.Clone(keys)
	slices.Sort(want) // Go compares strings by bytes
	if got := query("SELECT k FROM ci ORDER BY " + d.ByteOrder("k")); !slices.Equal(got, want) {
		t.Errorf("ORDER BY %s = %q; want %q", d.ByteOrder("k"), got, want)
	}
	var after []string
	for _, k := range want {
		if k > "a" {
			after = append(after, k)
		}
	}
	if got := query("SELECT k FROM ci WHERE "+d.ByteOrder("k")+" > ? ORDER BY "+d.ByteOrder("k"), "a"); !slices.Equal(got, after) {
		t.Errorf("keys after \"a\" = %q; want %q", got, after)
	}
}

// Our schema's names are byte-exact: no case folding, no trailing-space
// padding, in uniqueness as in lookups.
func TestSchema_ByteExactNames(t *testing.T) {
	h := newHarness(t)
	s := h.open(t)
	ctx := context.Background()
	for _, n := range []string{"dom", "Dom", "DOM", "dom ", "döm"} {
		if _, err := s.CreateDomain(ctx, n); err != nil {
			t.Errorf("CreateDomain(%q) beside its look-alikes: %v", n, err)
		}
	}
	d, err := s.CreateDomain(ctx, "files")
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []string{"key", "Key", "key "} {
		fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: k, Length: int64(i)}); err != nil {
			t.Fatalf("CommitFile(%q): %v", k, err)
		}
	}
	for i, k := range []string{"key", "Key", "key "} {
		f, err := s.FileByKey(ctx, d.ID, k)
		if err != nil || f.Length != int64(i) {
			t.Errorf("FileByKey(%q) = length %d, %v; want length %d", k, f.Length, err, i)
		}
	}
	// The columns compare by bytes already: no cast to defeat their index.
	dl, err := mysql.StoreDialect(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"dkey", "namespace", "classname", "field"} {
		if got := dl.ByteOrder(col); got != col {
			t.Errorf("ByteOrder(%q) on our schema = %q; want the bare column", col, got)
		}
	}
	if err := s.SetServerSetting(ctx, "Mode", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ServerSetting(ctx, "mode"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ServerSetting(mode) after setting Mode: got %v; want %v", err, store.ErrNotFound)
	}
}

// A database as mogdbsetup leaves it (INT fids, case-insensitive names)
// opens as it is and still lists keys in byte order.
func TestOpen_MogdbsetupDatabase(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	legacy := strings.NewReplacer(
		"BIGINT UNSIGNED NOT NULL", "INT UNSIGNED NOT NULL",
		"fid    BIGINT UNSIGNED NULL", "fid    INT UNSIGNED NULL",
		"VARBINARY(255)", "VARCHAR(255)",
		"VARBINARY(50)", "VARCHAR(50)",
		"DEFAULT CHARSET=utf8mb4", "DEFAULT CHARSET=latin1",
	)
	for _, q := range (mysql.Dialect{}).Schema() {
		if _, err := h.admin.ExecContext(ctx, legacy.Replace(q)); err != nil {
			t.Fatalf("%s: %v", legacy.Replace(q), err)
		}
	}
	var collation string
	if err := h.admin.QueryRowContext(ctx, "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'file' AND COLUMN_NAME = 'dkey'", h.database).Scan(&collation); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(collation, "_ci") {
		t.Fatalf("legacy dkey collation %q; want a case-insensitive one", collation)
	}
	if _, err := h.admin.ExecContext(ctx, "INSERT INTO server_settings VALUES ('schema_version', '17')"); err != nil {
		t.Fatal(err)
	}
	s := h.open(t)
	d, err := s.CreateDomain(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	// Distinct under the collation too: there "b" and "B" are one key.
	keys := []string{"b", "C", "a0", "Z"}
	for _, k := range keys {
		fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: k}); err != nil {
			t.Fatalf("CommitFile(%q): %v", k, err)
		}
	}
	got, err := s.ListKeys(ctx, d.ID, "", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"C", "Z", "a0", "b"}; !slices.Equal(got, want) {
		t.Errorf("ListKeys on a case-insensitive legacy table = %q; want byte order %q", got, want)
	}
	if d, err := mysql.StoreDialect(s); err != nil || !strings.Contains(d.ByteOrder("dkey"), "BINARY") {
		t.Errorf("ByteOrder(dkey) on a legacy table = %q; want a binary cast", d.ByteOrder("dkey"))
	}
	if c, err := collationOf(h, "file", "dkey"); err != nil || c != collation {
		t.Errorf("dkey collation after Open = %q, %v; want it kept as %q", c, err, collation)
	}
}

func collationOf(h *harness, table, col string) (string, error) {
	var c string
	err := h.admin.QueryRow("SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?", h.database, table, col).Scan(&c)
	return c, err
}

// A MogileFS database below schema 17 is refused, not half-used.
func TestOpen_OlderSchemaRefused(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for _, v := range []int{15, 18} {
		if _, err := h.admin.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS server_settings (field VARCHAR(50) PRIMARY KEY, value TEXT)"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.admin.ExecContext(ctx, "REPLACE INTO server_settings VALUES ('schema_version', ?)", strconv.Itoa(v)); err != nil {
			t.Fatal(err)
		}
		s, err := store.Open(ctx, h.dsn)
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, store.ErrSchemaMismatch) {
			t.Errorf("Open of a schema %d database: got %v; want %v", v, err, store.ErrSchemaMismatch)
		}
	}
}

func TestOpen_Forms(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	d, _ := store.ParseDSN(h.dsn)
	dbi := "DBI:mysql:database=" + d.Database + ";host=" + d.Host
	if d.Port != 0 {
		dbi += ";port=" + strconv.Itoa(d.Port)
	}
	if d.User != "" {
		dbi += ";user=" + d.User
	}
	if d.Password != "" {
		dbi += ";password=" + d.Password
	}
	for _, dsn := range []string{h.dsn, strings.Replace(h.dsn, "mysql://", "mariadb://", 1), dbi} {
		s, err := store.Open(ctx, dsn)
		if err != nil {
			t.Errorf("Open(%s): %v", dsn, err)
			continue
		}
		info, err := s.Info(ctx)
		if err != nil || info.Driver != "mysql" || info.ServerVersion == "" {
			t.Errorf("Info via %s = %+v, %v; want driver mysql and a version", dsn, info, err)
		}
		if c := s.Capabilities(); c.LockMechanism != "session" || !c.CrossProcess || c.DeadOwnerBound <= 0 {
			t.Errorf("Capabilities = %+v", c)
		}
		s.Close()
	}
	missing := strings.Replace(h.dsn, "/"+d.Database, "/"+d.Database+"_missing", 1)
	if s, err := store.Open(ctx, missing); err == nil {
		s.Close()
		t.Errorf("Open of a missing database succeeded")
	}
}

// Every session of the Store's pool runs at READ COMMITTED and speaks
// utf8mb4, whichever server and whichever variable name it has.
func TestOpen_SessionSettings(t *testing.T) {
	h := newHarness(t)
	db := h.db(t)
	for i := 0; i < 3; i++ {
		c := conn(t, db) // three sessions held at once: three connections
		var iso, cs string
		err := c.QueryRowContext(context.Background(), "SELECT @@transaction_isolation, @@character_set_connection").Scan(&iso, &cs)
		if err != nil { // MariaDB before 11.1 knows only the old name
			err = c.QueryRowContext(context.Background(), "SELECT @@tx_isolation, @@character_set_connection").Scan(&iso, &cs)
		}
		if err != nil {
			t.Fatal(err)
		}
		if iso != "READ-COMMITTED" || cs != "utf8mb4" {
			t.Errorf("session %d: isolation %s, charset %s; want READ-COMMITTED, utf8mb4", i, iso, cs)
		}
	}
}
