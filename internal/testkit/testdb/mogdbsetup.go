package testdb

import (
	"context"
	"database/sql"
	_ "embed"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/internal/testkit/freshdb"
	"github.com/gomogile/gomogile/store"
)

// mogdbsetupLatin1 is the DDL MogileFS 2.73's mogdbsetup runs for MySQL,
// as it lands on a latin1 server (see the file's header).
//
//go:embed testdata/mogdbsetup-2.73-latin1.sql
var mogdbsetupLatin1 string

// MogdbsetupLatin1MySQL is MySQL with the new database made as an old
// MogileFS installation has it: default character set latin1
// (latin1_swedish_ci: case-insensitive, PAD SPACE) and the tables of
// schema 17 exactly as 2.73's mogdbsetup creates them. perl is a pool on
// that database that talks as the Perl tracker's DBD::mysql did there
// (latin1 sessions, parameters interpolated by the client), so a key
// inserted through it is stored as the bytes given.
func MogdbsetupLatin1MySQL(t testing.TB) (dsn string, perl *sql.DB) {
	t.Helper()
	dsn = MySQL(t)
	d, err := store.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	cfg := freshdb.MySQLAdmin(d)
	cfg.DBName = d.Database
	cfg.Collation = "latin1_swedish_ci"
	cfg.InterpolateParams = true
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	perl = sql.OpenDB(conn)
	t.Cleanup(func() { perl.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stmts := []string{"ALTER DATABASE `" + d.Database + "` CHARACTER SET latin1 COLLATE latin1_swedish_ci"}
	for _, s := range strings.SplitAfter(mogdbsetupLatin1, ";\n") {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "--") {
				lines = append(lines, l)
			}
		}
		if s := strings.TrimSuffix(strings.TrimSpace(strings.Join(lines, "\n")), ";"); s != "" {
			stmts = append(stmts, s)
		}
	}
	for _, s := range stmts {
		if _, err := perl.ExecContext(ctx, s); err != nil {
			t.Fatalf("testdb: mogdbsetup schema: %s: %v", s, err)
		}
	}
	return dsn, perl
}
