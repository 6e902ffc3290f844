package dbinstance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// EtcdMember is one member of an Etcd cluster.
type EtcdMember struct {
	e            *Etcd
	name         string
	client, peer int
	args         []string

	mu   sync.Mutex
	proc *proc
}

// errAddrInUse marks a member that exited because a port was taken.
var errAddrInUse = errors.New("address already in use")

// Name is the member's name in the cluster: m1, m2, …
func (m *EtcdMember) Name() string { return m.name }

// Addr is "127.0.0.1:port" of the member's client port.
func (m *EtcdMember) Addr() string { return fmt.Sprintf("127.0.0.1:%d", m.client) }

// Endpoint is the member's client URL, "http://127.0.0.1:port".
func (m *EtcdMember) Endpoint() string { return "http://" + m.Addr() }

func (m *EtcdMember) peerURL() string { return fmt.Sprintf("http://127.0.0.1:%d", m.peer) }

func (m *EtcdMember) logPath() string { return filepath.Join(m.e.dir, m.name+".log") }

// Start starts the member (again) on its data directory and ports, and
// returns once a linearizable read through it succeeds (which needs a
// quorum). A port another process holds for a moment is retried.
func (m *EtcdMember) Start(ctx context.Context) error {
	t0 := time.Now()
	pr, err := m.launch()
	if err == nil {
		err = m.await(ctx, pr)
	}
	if err != nil {
		return err
	}
	m.e.logf("etcd member %s on %s started in %v", m.name, m.Addr(), time.Since(t0).Round(time.Millisecond))
	return nil
}

// Kill sends SIGKILL to the member and waits until it is gone.
func (m *EtcdMember) Kill() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return nil
	}
	return m.proc.kill()
}

// Stop shuts the member down (SIGTERM: a leader hands its leadership on
// first) and waits for it; a no-op when stopped.
func (m *EtcdMember) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return nil
	}
	return m.proc.stop(sigTerm, 30*time.Second)
}

// running is the member's process, or nil when it is not running.
func (m *EtcdMember) running() *proc {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil && m.proc.running() {
		return m.proc
	}
	return nil
}

// launch starts the member's process without waiting for it, and notes
// its pid for sweepEtcd.
func (m *EtcdMember) launch() (*proc, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil && m.proc.running() {
		return nil, fmt.Errorf("dbinstance: etcd member %s on %s is already running", m.name, m.Addr())
	}
	// etcd takes an ETCD_<FLAG> variable for a flag not given, and refuses
	// to start when it names one given: env(1) keeps the owner's out.
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "ETCD_") && k != "ETCD_UNSUPPORTED_ARCH" {
			env = append(env, "-u", k)
		}
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "ppc64le" {
		env = append(env, "ETCD_UNSUPPORTED_ARCH="+runtime.GOARCH) // 3.4 refuses to run otherwise
	}
	bin, args := m.e.bin, m.args
	if len(env) > 0 {
		bin, args = "env", append(append(env, m.e.bin), m.args...)
	}
	pr, err := startProc(nil, m.logPath(), bin, args...)
	if err != nil {
		return nil, err
	}
	m.proc = pr
	os.WriteFile(filepath.Join(m.e.dir, m.name+".pid"), []byte(strconv.Itoa(pr.pid())+"\n"), 0o644)
	return pr, nil
}

// await waits for a launched member, launching it again (for 3 s at
// most) while it exits because a port is taken.
func (m *EtcdMember) await(ctx context.Context, pr *proc) error {
	for tries := 1; ; tries++ {
		err := m.waitReady(ctx, pr)
		if !errors.Is(err, errAddrInUse) || tries == 30 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
		if pr, err = m.launch(); err != nil {
			return err
		}
	}
}

// waitReady polls a linearizable read through the member until it
// succeeds, pr exits or ctx ends.
func (m *EtcdMember) waitReady(ctx context.Context, pr *proc) error {
	cli, err := m.dial()
	if err != nil {
		return err
	}
	defer cli.Close()
	// A read in flight ends when the process does: whatever holds a port
	// etcd could not bind may accept and never answer.
	live, cancelLive := context.WithCancel(ctx)
	defer cancelLive()
	go func() {
		select {
		case <-pr.exited:
			cancelLive()
		case <-live.Done():
		}
	}()
	for {
		actx, cancel := context.WithTimeout(live, time.Second)
		_, err = cli.Get(actx, "gomogile-health")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-pr.exited:
			log := tail(m.logPath()) // ends with this run's last words
			if strings.Contains(log, errAddrInUse.Error()) {
				return fmt.Errorf("dbinstance: etcd member %s on %s: %w", m.name, m.Addr(), errAddrInUse)
			}
			return fmt.Errorf("dbinstance: etcd member %s on %s exited (%v):\n%s", m.name, m.Addr(), pr.err, log)
		case <-ctx.Done():
			return fmt.Errorf("dbinstance: etcd member %s on %s not ready: %w (last error: %v)", m.name, m.Addr(), ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitPeer waits up to a second until the member serves its peer port.
func (m *EtcdMember) waitPeer(ctx context.Context, pr *proc) {
	hc := &http.Client{Timeout: 100 * time.Millisecond}
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		if r, err := hc.Get(m.peerURL() + "/members"); err == nil {
			r.Body.Close()
			return
		}
		select {
		case <-pr.exited:
			return
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// status asks the member alone for its raft status.
func (m *EtcdMember) status(ctx context.Context) (*clientv3.StatusResponse, error) {
	cli, err := m.dial()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	actx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return cli.Status(actx, m.Endpoint())
}

// dial makes a client of the member alone. It connects on first use, and
// again within 100ms of a refusal: gRPC's default waits a second, then
// longer, and a member starting or restarting refuses at first.
func (m *EtcdMember) dial() (*clientv3.Client, error) {
	retry := grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, MaxDelay: 100 * time.Millisecond},
		MinConnectTimeout: time.Second,
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{m.Endpoint()},
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(retry)},
	})
	if err != nil {
		return nil, fmt.Errorf("dbinstance: etcd member %s: %w", m.name, err)
	}
	return cli, nil
}
