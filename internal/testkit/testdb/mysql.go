package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/internal/testkit/freshdb"
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, drop, err := freshdb.MySQL(ctx, srv)
	if err != nil {
		if os.Getenv(EnvMySQL) != "" {
			t.Fatalf("testdb: %v", err)
		}
		Unavailable(t, "mysql", err.Error())
		return ""
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := drop(ctx); err != nil {
			t.Errorf("testdb: %v", err)
		}
	})
	return dsn
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
		conn, err := gomysql.NewConnector(freshdb.MySQLAdmin(dsnAt(addr)))
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
