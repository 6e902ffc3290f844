package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/store"
)

// MySQL returns the DSN (mysql://…) of a new, empty database on a MySQL or
// MariaDB server, created for this test and dropped when it ends, so runs
// sharing a server never see each other's rows or locks. The server is the
// one named by GOMOGILE_TEST_MYSQL_DSN, else a container from
// GOMOGILE_TEST_MYSQL_IMAGE (default DefaultMySQLImage) shared by the test
// binaries of the run, else the test ends through Unavailable.
func MySQL(t testing.TB) string {
	t.Helper()
	srv, why, err := mysqlServer()
	if err != nil {
		// A server the developer named wrongly is a mistake to report,
		// not a reason to skip.
		t.Fatalf("testdb: %v", err)
	}
	if srv == nil {
		Unavailable(t, "mysql", why)
		return ""
	}
	conn, err := gomysql.NewConnector(adminConfig(srv))
	if err != nil {
		t.Fatalf("testdb: %s: %v", EnvMySQL, err)
	}
	admin := sql.OpenDB(conn)
	name := "gomogile_" + randomHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		admin.Close()
		if os.Getenv(EnvMySQL) != "" {
			t.Fatalf("testdb: create database on %s: %v", srv.Redacted(), err)
		}
		Unavailable(t, "mysql", err.Error())
		return ""
	}
	t.Cleanup(func() {
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("testdb: drop database %s: %v", name, err)
		}
	})
	return mysqlURL(srv, name)
}

var (
	dockerMySQLOnce sync.Once
	dockerMySQLDSN  *store.DSN
	dockerMySQLWhy  string
)

// mysqlServer finds the server: from the environment, else from docker
// (started once, then shared by every test of the binary). It returns a
// reason when there is none, and an error when the environment names one
// badly.
func mysqlServer() (*store.DSN, string, error) {
	if s := os.Getenv(EnvMySQL); s != "" {
		d, err := store.ParseDSN(s)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", EnvMySQL, err)
		}
		if d.Driver != "mysql" && d.Driver != "mariadb" {
			return nil, "", fmt.Errorf("%s: %s is not a MySQL DSN", EnvMySQL, d.Redacted())
		}
		return d, "", nil
	}
	dockerMySQLOnce.Do(func() {
		dockerMySQLDSN, dockerMySQLWhy = startDockerMySQL()
	})
	return dockerMySQLDSN, dockerMySQLWhy, nil
}

// startDockerMySQL runs (or reuses) the $GOMOGILE_TEST_MYSQL_IMAGE
// container, DefaultMySQLImage when unset. MariaDB images take the same
// MYSQL_ROOT_PASSWORD.
func startDockerMySQL() (*store.DSN, string) {
	const password = "gomogile"
	image := imageFrom(EnvMySQLImage, DefaultMySQLImage)
	spec := containerSpec{
		kind:  "mysql",
		image: image,
		env:   []string{"MYSQL_ROOT_PASSWORD=" + password},
		port:  "3306/tcp",
	}
	dsnAt := func(addr string) *store.DSN {
		host, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		return &store.DSN{Driver: "mysql", User: "root", Password: password, Host: host, Port: p, Database: "mysql", Params: url.Values{}}
	}
	spec.ready = func(ctx context.Context, addr string) error {
		conn, err := gomysql.NewConnector(adminConfig(dsnAt(addr)))
		if err != nil {
			return err
		}
		db := sql.OpenDB(conn)
		defer db.Close()
		return db.PingContext(ctx)
	}
	addr, err := dockerServer(context.Background(), spec)
	if err != nil {
		return nil, "no " + EnvMySQL + ", and dockertest (" + image + "): " + err.Error()
	}
	return dsnAt(addr), ""
}

// adminConfig connects to the server without selecting a database.
func adminConfig(d *store.DSN) *gomysql.Config {
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

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
