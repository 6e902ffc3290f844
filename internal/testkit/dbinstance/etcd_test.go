package dbinstance_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
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
// it missed; a stopped one starts again, though its port is taken for a
// moment; Cleanup leaves nothing running.
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
	// Its port held for a moment (by another process, say) delays the
	// restart rather than failing it.
	ln, err := net.Listen("tcp", old.Addr())
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(500*time.Millisecond, func() { ln.Close() })
	t0 = time.Now()
	if err := old.Start(ctx); err != nil {
		t.Fatalf("start after Stop, port held for 500ms: %v", err)
	}
	t.Logf("%s restarted in %v, its port held for the first 500ms", old.Name(), time.Since(t0))
	if got := getThrough(t, ctx, old, "k1"); got != "v1" {
		t.Fatalf("k1 through the restarted %s = %q; want v1", old.Name(), got)
	}
}

const etcdOrphanEnv = "GOMOGILE_DBINSTANCE_ETCD_ORPHAN_CHILD"

// TestEtcd_OrphanChild is the child half of TestEtcd_NoOrphanAfterOwnerDies:
// run only under etcdOrphanEnv, it starts a cluster, prints its endpoints
// and waits to be killed.
func TestEtcd_OrphanChild(t *testing.T) {
	if os.Getenv(etcdOrphanEnv) == "" {
		t.Skip("the child half of TestEtcd_NoOrphanAfterOwnerDies")
	}
	e, err := dbinstance.StartEtcd(context.Background(), dbinstance.EtcdOptions{})
	if errors.Is(err, dbinstance.ErrUnavailable) {
		fmt.Println("UNAVAILABLE", strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(0)
	}
	if err != nil {
		fmt.Println("child:", err)
		os.Exit(1)
	}
	fmt.Println("ORPHAN", strings.Join(e.Endpoints(), " "))
	time.Sleep(time.Minute)
}

// A test binary killed at its timeout cannot clean up; its etcd members
// must die with it rather than run on.
func TestEtcd_NoOrphanAfterOwnerDies(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("members die with their owner on Linux only (PR_SET_PDEATHSIG)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestEtcd_OrphanChild$")
	cmd.Env = append(os.Environ(), etcdOrphanEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ORPHAN ") || strings.HasPrefix(sc.Text(), "UNAVAILABLE ") {
				found <- sc.Text()
				return
			}
			t.Logf("child: %s", sc.Text())
		}
		close(found)
	}()
	var line string
	select {
	case line = <-found:
	case <-time.After(60 * time.Second):
	}
	if msg, ok := strings.CutPrefix(line, "UNAVAILABLE "); ok {
		testdb.Unavailable(t, "etcd", msg)
	}
	endpoints := strings.Fields(strings.TrimPrefix(line, "ORPHAN "))
	if len(endpoints) == 0 {
		t.Fatal("child did not start a cluster in 60s")
	}
	pids := etcdProcs(endpoints[0])
	if len(pids) == 0 {
		t.Fatalf("no process found for the child's member %s", endpoints[0])
	}
	// The child cannot remove its cluster's directory: the parent of a
	// member's --data-dir.
	cmdline, _ := os.ReadFile("/proc/" + pids[0] + "/cmdline")
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if dir, ok := strings.CutPrefix(arg, "--data-dir="); ok {
			defer os.RemoveAll(filepath.Dir(dir))
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for _, ep := range endpoints {
		for len(etcdProcs(ep)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("15s after its owner died, member %s still runs: pids %v", ep, etcdProcs(ep))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
