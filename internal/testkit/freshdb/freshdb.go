// Package freshdb creates a new, empty database on a MySQL/MariaDB or
// PostgreSQL server and drops it again: how the tests (internal/testkit/testdb)
// and the load generator (internal/testkit/load) give every run a database of its
// own on a shared server, so that runs never see each other's rows or
// locks and each starts from the same empty schema.
package freshdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/gomogile/gomogile/store"
)

// Environment variables naming the MySQL and PostgreSQL servers the tests
// (and the load generator) make their databases on: a DSN of package
// store, whose database the user may connect to and who may create
// databases.
const (
	EnvMySQL    = "GOMOGILE_TEST_MYSQL_DSN"
	EnvPostgres = "GOMOGILE_TEST_POSTGRES_DSN"
)

// Drop removes a database Create made; it ends the sessions still
// connected to it first (PostgreSQL refuses to drop a database in use).
type Drop func(ctx context.Context) error

// Create makes a database named gomogile_<random> on the server a DSN of
// package store names (mysql:// or postgres://, or the DBI forms of
// MySQL) and returns the DSN of the new database, in URL form with the
// server DSN's parameters, and how to drop it.
func Create(ctx context.Context, server string) (string, Drop, error) {
	d, err := store.ParseDSN(server)
	if err != nil {
		return "", nil, fmt.Errorf("freshdb: %w", err)
	}
	switch d.Driver {
	case "mysql", "mariadb":
		return MySQL(ctx, d)
	case "postgres":
		return Postgres(ctx, server)
	}
	return "", nil, fmt.Errorf("freshdb: %s is neither a MySQL nor a PostgreSQL DSN", d.Redacted())
}

// MySQL creates the database (utf8mb4) on the server d names.
func MySQL(ctx context.Context, d *store.DSN) (string, Drop, error) {
	conn, err := gomysql.NewConnector(MySQLAdmin(d))
	if err != nil {
		return "", nil, fmt.Errorf("freshdb: %s: %w", d.Redacted(), err)
	}
	admin := sql.OpenDB(conn)
	name := newName()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		admin.Close()
		return "", nil, fmt.Errorf("freshdb: create database on %s: %w", d.Redacted(), err)
	}
	drop := func(ctx context.Context) error {
		defer admin.Close()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			return fmt.Errorf("freshdb: drop database %s: %w", name, err)
		}
		return nil
	}
	return mysqlURL(d, name), drop, nil
}

// MySQLAdmin connects to the server d names without selecting a database.
func MySQLAdmin(d *store.DSN) *gomysql.Config {
	cfg := gomysql.NewConfig()
	cfg.User, cfg.Passwd = d.User, d.Password
	cfg.Logger = &gomysql.NopLogger{}
	cfg.Timeout = 5 * time.Second
	host, port := d.Host, d.Port
	for _, k := range []string{"socket", "mysql_socket"} {
		if s := d.Params.Get(k); s != "" {
			host = s
		}
	}
	switch {
	case strings.HasPrefix(host, "/"):
		cfg.Net, cfg.Addr = "unix", host
	default:
		if host == "" {
			host = "127.0.0.1"
		}
		if port == 0 {
			port = 3306
		}
		cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, strconv.Itoa(port))
	}
	if v := d.Params.Get("tls"); v != "" {
		cfg.TLSConfig = v
	}
	return cfg
}

// mysqlURL is d pointed at database name, as a mysql:// URL whatever form
// d was given in.
func mysqlURL(d *store.DSN, name string) string {
	u := url.URL{Scheme: "mysql", Path: "/" + name}
	switch {
	case d.User != "" && d.Password != "":
		u.User = url.UserPassword(d.User, d.Password)
	case d.User != "":
		u.User = url.User(d.User)
	}
	q := url.Values{}
	for k, vs := range d.Params {
		q[k] = append([]string(nil), vs...)
	}
	if strings.HasPrefix(d.Host, "/") {
		q.Set("socket", d.Host)
	} else {
		u.Host = d.Host
		if strings.Contains(d.Host, ":") {
			u.Host = "[" + d.Host + "]"
		}
		if d.Port != 0 {
			u.Host = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Postgres creates the database on the server of base, a postgres:// URL
// whose database the user may connect to (and who may CREATEDB).
func Postgres(ctx context.Context, base string) (string, Drop, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, fmt.Errorf("freshdb: %q is not a postgres://user@host:port/db URL", base)
	}
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("freshdb: postgres server %s: %w", u.Redacted(), err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	name := newName()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("freshdb: create database on %s: %w", u.Redacted(), err)
	}
	drop := func(ctx context.Context) error { return dropPostgres(ctx, base, name) }
	u.Path = "/" + name
	return u.String(), drop, nil
}

func dropPostgres(ctx context.Context, base, name string) error {
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return fmt.Errorf("freshdb: drop database %s: %w", name, err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	for attempt := 0; ; attempt++ {
		// A Store left open (or crashed on purpose) may still be
		// connected; DROP DATABASE refuses while anyone is.
		_, err = admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name)
		if err == nil {
			_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name)
		}
		if err == nil || attempt == 20 || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("freshdb: drop database %s: %w", name, err)
	}
	return nil
}

func newName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "gomogile_" + hex.EncodeToString(b[:])
}
