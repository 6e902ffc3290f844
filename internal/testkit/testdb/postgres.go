package testdb

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gomogile/gomogile/internal/testkit/freshdb"
)

// PostgresTestLease is the lock lease of the DSNs Postgres returns: short,
// so cases that wait for a dead owner's locks finish in seconds.
const PostgresTestLease = "1s"

// Postgres returns the DSN of a new, empty database (gomogile_<random>) on
// a PostgreSQL test server, with lock_lease set to PostgresTestLease. The
// database is dropped when t ends, after its leftover sessions are ended.
//
// The server is $GOMOGILE_TEST_POSTGRES_DSN (a postgres:// URL whose
// database the test user may connect to; it needs CREATEDB), else a
// container from GOMOGILE_TEST_POSTGRES_IMAGE (default
// DefaultPostgresImage) shared by the test binaries of the run, else the test is
// ended by [Unavailable].
func Postgres(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvPostgres)
	if base == "" {
		var err error
		if base, err = postgresContainer(); err != nil {
			Unavailable(t, "postgres", fmt.Sprintf("$%s is unset and dockertest failed: %v", EnvPostgres, err))
		}
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("$%s=%q: want a postgres://user@host:port/db URL", EnvPostgres, base)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, drop, err := freshdb.Postgres(ctx, base)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := drop(ctx); err != nil {
			t.Errorf("testdb: %v", err)
		}
	})
	u, _ = url.Parse(dsn)
	q := u.Query()
	if q.Get("lock_lease") == "" {
		q.Set("lock_lease", PostgresTestLease)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

var pgContainer struct {
	once sync.Once
	dsn  string
	err  error
}

// postgresContainer starts (or reuses) the $GOMOGILE_TEST_POSTGRES_IMAGE
// container, DefaultPostgresImage when unset, once per test binary.
func postgresContainer() (string, error) {
	pgContainer.once.Do(func() {
		pgContainer.dsn, pgContainer.err = startPostgresContainer()
	})
	return pgContainer.dsn, pgContainer.err
}

func startPostgresContainer() (string, error) {
	image := imageFrom(EnvPostgresImage, DefaultPostgresImage)
	dsnAt := func(addr string) string {
		return "postgres://postgres:gomogile@" + addr + "/test?sslmode=disable"
	}
	addr, err := dockerServer(context.Background(), containerSpec{
		kind:  "postgres",
		image: image,
		env:   []string{"POSTGRES_PASSWORD=gomogile", "POSTGRES_DB=test"},
		port:  "5432/tcp",
		ready: func(ctx context.Context, addr string) error {
			conn, err := pgx.Connect(ctx, dsnAt(addr))
			if err != nil {
				return err
			}
			return conn.Close(ctx)
		},
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", image, err)
	}
	return dsnAt(addr), nil
}
