package testdb

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
)

// EnvEtcd names an etcd cluster for the tests' lock_dsn (an etcd:// URL of
// its client endpoints, without a prefix: each test gets one of its own).
const EnvEtcd = "GOMOGILE_TEST_ETCD_DSN"

// sharedEtcd is the private cluster the test binary's tests share: started
// by the first Etcd call, removed by Main.
var sharedEtcd struct {
	sync.Mutex
	cluster *dbinstance.Etcd
	err     error
	started bool
}

// prefixes numbers the prefixes Etcd hands out, so no two tests of a
// binary (nor two binaries: the pid) share a lock namespace.
var prefixes atomic.Int64

// Etcd returns a lock_dsn for an etcd cluster with a key prefix of its
// own: the cluster of GOMOGILE_TEST_ETCD_DSN when set, else a private
// 3-member cluster of etcd processes (internal/testkit/dbinstance) that the test
// binary's tests share and Main removes. With neither (no etcd binary),
// the test is skipped, or fails under CI (Unavailable).
func Etcd(t testing.TB) string {
	t.Helper()
	prefix := fmt.Sprintf("/gomogile-test-%d-%d", os.Getpid(), prefixes.Add(1))
	if env := strings.TrimRight(os.Getenv(EnvEtcd), "/"); env != "" {
		return env + prefix
	}
	c, err := EtcdCluster()
	if err != nil {
		Unavailable(t, "etcd", err.Error())
	}
	return EtcdDSN(c, prefix)
}

// EtcdCluster is the test binary's shared private etcd cluster, started on
// first use.
func EtcdCluster() (*dbinstance.Etcd, error) {
	sharedEtcd.Lock()
	defer sharedEtcd.Unlock()
	if !sharedEtcd.started {
		sharedEtcd.started = true
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		sharedEtcd.cluster, sharedEtcd.err = dbinstance.StartEtcd(ctx, dbinstance.EtcdOptions{Logf: func(string, ...any) {}})
	}
	return sharedEtcd.cluster, sharedEtcd.err
}

// EtcdDSN is the lock_dsn naming every member of c, with prefix.
func EtcdDSN(c *dbinstance.Etcd, prefix string) string { return c.DSN(prefix) }

// stopEtcd removes the shared cluster (Main).
func stopEtcd() error {
	sharedEtcd.Lock()
	defer sharedEtcd.Unlock()
	if sharedEtcd.cluster == nil {
		return nil
	}
	err := sharedEtcd.cluster.Cleanup()
	sharedEtcd.cluster = nil
	return err
}

// WithLockDSN adds lock_dsn=lockDSN to the URL DSN dsn.
func WithLockDSN(dsn, lockDSN string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(fmt.Sprintf("testdb.WithLockDSN: %q: %v", dsn, err))
	}
	q := u.Query()
	q.Set("lock_dsn", lockDSN)
	u.RawQuery = q.Encode()
	return u.String()
}
