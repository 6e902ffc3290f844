// Package testdb finds the database servers that backend tests run against,
// in the order shared/design.md §6 gives: a DSN from the environment, then a
// container started with dockertest, then a skip — except under CI=true,
// where a backend that cannot run fails the build instead of passing
// silently having touched nothing.
package testdb

import (
	"fmt"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/gomogile/gomogile/conformance"
	"github.com/gomogile/gomogile/internal/testkit/freshdb"
)

// Environment variables naming test servers (package freshdb's, which
// the load generator reads too).
const (
	EnvMySQL    = freshdb.EnvMySQL
	EnvPostgres = freshdb.EnvPostgres
)

// InCI reports whether the tests run under CI, where every backend must run.
func InCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "0" && v != "false"
}

// Unavailable ends a test whose server could not be found: a skip with the
// reason on a developer's machine, a failure under CI.
//
// A skip is also written once per backend and test binary to the summary
// file (conformance.SummaryEnv), where the conformance lines of the
// backends that ran go: without -v, `go test ./...` shows neither.
func Unavailable(t testing.TB, backend, why string) {
	t.Helper()
	msg := backend + " test server unavailable: " + why
	if InCI() {
		t.Fatal(msg + " (CI=true: every backend must run)")
	}
	if _, told := skipsTold.LoadOrStore(backend, true); !told {
		conformance.WriteSummary(fmt.Sprintf("testdb: backend=%s skipped (first in %s): %s", backend, t.Name(), why))
	}
	t.Skip(msg)
}

// skipsTold holds the backends whose skip this binary has written.
var skipsTold sync.Map

// ClosedAddr is a loopback host:port on which nothing listens (a port
// just freed), so that connecting to it is refused, as to a server that is
// down.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Origin says where MySQL (kind "mysql") or Postgres (kind "postgres")
// gets its server in this process: the environment variable naming it, or
// a container of which image. For the conformance suite's summary line.
func Origin(kind string) string {
	env, img, def := EnvMySQL, EnvMySQLImage, DefaultMySQLImage
	if kind == "postgres" {
		env, img, def = EnvPostgres, EnvPostgresImage, DefaultPostgresImage
	}
	if os.Getenv(env) != "" {
		return "$" + env
	}
	return "container " + imageFrom(img, def)
}
