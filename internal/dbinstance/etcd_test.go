package dbinstance_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/gomogile/gomogile/internal/dbinstance"
	"github.com/gomogile/gomogile/internal/testdb"
)

// startEtcd starts a cluster for t, skipping (failing under CI) when
// there is no etcd binary, and checks at the end that Cleanup leaves no
// member running.
func startEtcd(t *testing.T, ctx context.Context, o dbinstance.EtcdOptions) *dbinstance.Etcd {
	t.Helper()
	t0 := time.Now()
	e, err := dbinstance.StartEtcd(ctx, o)
	if errors.Is(err, dbinstance.ErrUnavailable) {
		testdb.Unavailable(t, "etcd", err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("StartEtcd (%d members) took %v", len(e.Members()), time.Since(t0))
	t.Cleanup(func() {
		if err := e.Cleanup(); err != nil {
			t.Error(err)
		}
		for _, m := range e.Members() {
			if c, err := net.DialTimeout("tcp", m.Addr(), time.Second); err == nil {
				c.Close()
				t.Errorf("member %s still listens on %s after Cleanup", m.Name(), m.Addr())
			}
			if pids := etcdProcs(m.Endpoint()); len(pids) > 0 {
				t.Errorf("member %s still runs after Cleanup: pids %v", m.Name(), pids)
			}
		}
	})
	return e
}

// etcdProcs lists the processes whose command line names endpoint (found
// through /proc, so only on Linux).
func etcdProcs(endpoint string) []string {
	var pids []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "--listen-client-urls="+endpoint+"\x00") {
			pids = append(pids, filepath.Base(filepath.Dir(f)))
		}
	}
	return pids
}

func etcdClient(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// getThrough reads key through member m alone (a linearizable read).
func getThrough(t *testing.T, ctx context.Context, m *dbinstance.EtcdMember, key string) string {
	t.Helper()
	r, err := etcdClient(t, m.Endpoint()).Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s through %s: %v", key, m.Name(), err)
	}
	if len(r.Kvs) != 1 {
		t.Fatalf("get %s through %s: %d keys; want 1", key, m.Name(), len(r.Kvs))
	}
	return string(r.Kvs[0].Value)
}

// A cluster of three: a write through the cluster is read through every
// member; with its leader killed the others elect a new one and take
// writes; the killed member restarts on its data directory and reads what
// it missed; a stopped one starts again; Cleanup leaves nothing running.
func TestEtcd_KillLeaderRejoin(t *testing.T) {
	// etcd reads ETCD_<FLAG> variables and refuses one that shadows a flag:
	// the owner's environment must not reach the members.
	t.Setenv("ETCD_NAME", "from-the-owners-environment")
	ctx := ctxT(t, 2*time.Minute)
	e := startEtcd(t, ctx, dbinstance.EtcdOptions{Logf: t.Logf})
	members := e.Members()
	if len(members) != 3 || len(e.Endpoints()) != 3 {
		t.Fatalf("%d members, %d endpoints; want 3", len(members), len(e.Endpoints()))
	}
	for _, m := range members {
		_, p, _ := net.SplitHostPort(m.Addr())
		if port, _ := strconv.Atoi(p); port < 20000 || port >= 32768 {
			t.Errorf("member %s on %s; want a port in [20000, 32768)", m.Name(), m.Addr())
		}
	}
	cli := etcdClient(t, e.Endpoints()...)
	if _, err := cli.Put(ctx, "k1", "v1"); err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if got := getThrough(t, ctx, m, "k1"); got != "v1" {
			t.Fatalf("k1 through %s = %q; want v1", m.Name(), got)
		}
	}

	old, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %s killed; %s elected in %v", old.Name(), leader.Name(), time.Since(t0))
	if leader == old {
		t.Fatalf("leader %s is the killed member", leader.Name())
	}
	if _, err := etcdClient(t, leader.Endpoint()).Put(ctx, "k2", "v2"); err != nil {
		t.Fatalf("put with %s down: %v", old.Name(), err)
	}

	t0 = time.Now()
	if err := old.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s rejoined in %v", old.Name(), time.Since(t0))
	if got := getThrough(t, ctx, old, "k2"); got != "v2" {
		t.Fatalf("k2 through the rejoined %s = %q; want v2", old.Name(), got)
	}

	if err := old.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := old.Start(ctx); err != nil {
		t.Fatalf("start after Stop: %v", err)
	}
	if got := getThrough(t, ctx, old, "k1"); got != "v1" {
		t.Fatalf("k1 through the restarted %s = %q; want v1", old.Name(), got)
	}
}
