package sqlstore_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
)

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestConnect: a server that is not there is store.ErrUnavailable, worth
// retrying, on both server backends (sqlstore.Connect); one that refuses
// the login is not, and says who refused.
func TestConnect(t *testing.T) {
	port := strconv.Itoa(closedPort(t))
	pg := testdb.Postgres(t)
	my := testdb.MySQL(t)
	for _, tc := range []struct {
		dsn         string
		unavailable bool
		prefix      string
	}{
		{"postgres://root@127.0.0.1:" + port + "/test?sslmode=disable&connect_timeout=2", true, "postgres: connect: "},
		{"mysql://root@127.0.0.1:" + port + "/test?timeout=2s", true, "mysql: connect: "},
		{strings.Replace(pg, "root@", "no_such_role@", 1), false, "postgres: connect: "},
		{strings.Replace(my, "root@", "no_such_user@", 1), false, "mysql: connect: "},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		s, err := store.Open(ctx, tc.dsn)
		cancel()
		if err == nil {
			s.Close()
			t.Errorf("Open(%s) succeeded", store.RedactDSN(tc.dsn))
			continue
		}
		if errors.Is(err, store.ErrUnavailable) != tc.unavailable || !strings.Contains(err.Error(), tc.prefix) {
			t.Errorf("Open(%s) = %v; want ErrUnavailable %v, saying %q", store.RedactDSN(tc.dsn), err, tc.unavailable, tc.prefix)
		}
	}
}
