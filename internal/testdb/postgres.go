package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
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
// postgres:16 container started once per test binary, else the test is
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
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("postgres test server %s: %v", u.Redacted(), err)
	}
	defer admin.Close(context.Background())

	var b [6]byte
	rand.Read(b[:])
	name := "gomogile_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() { dropPostgres(t, base, name) })

	u.Path = "/" + name
	q := u.Query()
	if q.Get("lock_lease") == "" {
		q.Set("lock_lease", PostgresTestLease)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func dropPostgres(t testing.TB, base, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Errorf("drop test database %s: %v", name, err)
		return
	}
	defer admin.Close(context.Background())
	for attempt := 0; ; attempt++ {
		// A Store the test leaked (or crashed on purpose) may still be
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
		t.Errorf("drop test database %s: %v", name, err)
	}
}

var pgContainer struct {
	once sync.Once
	dsn  string
	err  error
}

// postgresContainer starts postgres:16 once per test binary. Docker removes
// it when it stops, and it is told to stop after ten minutes in case the
// binary dies without cleaning up.
func postgresContainer() (string, error) {
	pgContainer.once.Do(func() {
		pgContainer.dsn, pgContainer.err = startPostgresContainer()
	})
	return pgContainer.dsn, pgContainer.err
}

func startPostgresContainer() (string, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return "", err
	}
	// Without a Docker engine this fails at once, before anything is pulled.
	if err := pool.Client.Ping(); err != nil {
		return "", fmt.Errorf("no Docker engine: %w", err)
	}
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: "postgres",
		Tag:        "16",
		Env:        []string{"POSTGRES_PASSWORD=gomogile", "POSTGRES_DB=test"},
	}, func(hc *dc.HostConfig) {
		hc.AutoRemove = true
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return "", err
	}
	_ = res.Expire(600)
	dsn := "postgres://postgres:gomogile@" + res.GetHostPort("5432/tcp") + "/test?sslmode=disable"
	pool.MaxWait = 90 * time.Second
	err = pool.Retry(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	})
	if err != nil {
		_ = pool.Purge(res)
		return "", errors.Join(errors.New("postgres container never answered"), err)
	}
	return dsn, nil
}
