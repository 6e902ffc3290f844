package dbinstance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// EtcdOptions configure StartEtcd. The zero value starts three members.
type EtcdOptions struct {
	// Members is how many members the cluster has; 0 means 3.
	Members int
	// HeartbeatInterval and ElectionTimeout are raft's; 0 means 50ms and
	// 500ms (etcd's defaults are 100ms and 1s), so a test's failover is quick.
	HeartbeatInterval, ElectionTimeout time.Duration
	// Settings are extra etcd flags of every member (name → value, the
	// name without its dashes); they override the defaults.
	Settings map[string]string
	// Dir is the parent of the cluster's directory; "" = os.TempDir().
	Dir string
	// Logf, if set, gets one line per lifecycle step.
	Logf func(format string, args ...any)
}

// Etcd is a private etcd cluster: members on loopback, each with a client
// and a peer port and a data directory of its own, bootstrapped from a
// static initial cluster. The members run as this process's user (etcd
// does not refuse root).
type Etcd struct {
	o       EtcdOptions
	bin     string
	dir     string
	members []*EtcdMember
}

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

// StartEtcd starts o.Members etcd members on free 127.0.0.1 ports, all at
// once, and returns once a linearizable read succeeds through every one
// of them. Call Cleanup when done. Without an etcd binary the error wraps
// ErrUnavailable.
func StartEtcd(ctx context.Context, o EtcdOptions) (*Etcd, error) {
	if errPlatform != nil {
		return nil, errPlatform
	}
	bin, err := lookBin("etcd", "/usr/bin", "/usr/local/bin")
	if err != nil {
		return nil, err
	}
	n := o.Members
	if n == 0 {
		n = 3
	}
	if n < 1 {
		return nil, fmt.Errorf("dbinstance: etcd: %d members", n)
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 50 * time.Millisecond
	}
	if o.ElectionTimeout <= 0 {
		o.ElectionTimeout = 500 * time.Millisecond
	}
	parent := o.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	sweepEtcd(parent)
	dir, err := tempDir(parent, "gomogile-etcd-*", nil)
	if err != nil {
		return nil, err
	}
	e := &Etcd{o: o, bin: bin, dir: dir}
	used := map[int]bool{}
	for i := range n {
		m := &EtcdMember{e: e, name: "m" + strconv.Itoa(i+1)}
		for _, p := range []*int{&m.client, &m.peer} {
			for *p == 0 || used[*p] {
				if *p, err = freePort(); err != nil {
					e.Cleanup()
					return nil, err
				}
			}
			used[*p] = true
		}
		e.members = append(e.members, m)
	}
	var id [6]byte
	rand.Read(id[:])
	var initial []string
	for _, m := range e.members {
		initial = append(initial, fmt.Sprintf("%s=http://127.0.0.1:%d", m.name, m.peer))
	}
	for _, m := range e.members {
		set := map[string]string{
			"name":                        m.name,
			"data-dir":                    filepath.Join(dir, m.name),
			"listen-client-urls":          m.Endpoint(),
			"advertise-client-urls":       m.Endpoint(),
			"listen-peer-urls":            fmt.Sprintf("http://127.0.0.1:%d", m.peer),
			"initial-advertise-peer-urls": fmt.Sprintf("http://127.0.0.1:%d", m.peer),
			"initial-cluster":             strings.Join(initial, ","),
			"initial-cluster-state":       "new",
			"initial-cluster-token":       "gomogile-" + hex.EncodeToString(id[:]),
			"heartbeat-interval":          strconv.FormatInt(o.HeartbeatInterval.Milliseconds(), 10),
			"election-timeout":            strconv.FormatInt(o.ElectionTimeout.Milliseconds(), 10),
			"logger":                      "zap", // 3.4's default, capnslog, is deprecated
			"log-outputs":                 "stderr",
		}
		for k, v := range o.Settings {
			set[strings.TrimLeft(k, "-")] = v
		}
		for k, v := range set {
			m.args = append(m.args, "--"+k+"="+v)
		}
		sort.Strings(m.args)
	}
	t0 := time.Now()
	// Before it serves its own peer port, etcd 3.4 asks each peer whether
	// it is a member already, waiting a second for a peer that has bound
	// its port but does not serve it yet: three members launched at once
	// take two seconds more. So each is launched once the one before
	// serves its peer port (or has had a second to).
	prs, offs := make([]*proc, n), make([]int64, n)
	for i, m := range e.members {
		if prs[i], offs[i], err = m.launch(); err != nil {
			e.Cleanup()
			return nil, err
		}
		m.waitPeer(ctx, prs[i])
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, m := range e.members {
		wg.Go(func() { errs[i] = m.await(ctx, prs[i], offs[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		e.Cleanup()
		return nil, err
	}
	e.logf("etcd cluster of %d members on %s ready in %v", n, strings.Join(e.Endpoints(), ","), time.Since(t0).Round(time.Millisecond))
	return e, nil
}

func (e *Etcd) logf(format string, args ...any) {
	if e.o.Logf != nil {
		e.o.Logf("dbinstance: "+format, args...)
	}
}

// Members are the cluster's members, running or not, in the order of the
// initial cluster.
func (e *Etcd) Members() []*EtcdMember { return append([]*EtcdMember(nil), e.members...) }

// Endpoints are the members' client URLs (http://127.0.0.1:port).
func (e *Etcd) Endpoints() []string {
	var eps []string
	for _, m := range e.members {
		eps = append(eps, m.Endpoint())
	}
	return eps
}

// Leader waits until a running member says it leads the cluster (the one
// of the highest term, should two say so) and returns it.
func (e *Etcd) Leader(ctx context.Context) (*EtcdMember, error) {
	var last error
	for {
		var leader *EtcdMember
		var term uint64
		for _, m := range e.members {
			if !m.running() {
				continue
			}
			st, err := m.status(ctx)
			if err != nil {
				last = err
				continue
			}
			if st.Leader != 0 && st.Leader == st.Header.MemberId && st.RaftTerm >= term {
				leader, term = m, st.RaftTerm
			}
		}
		if leader != nil {
			return leader, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("dbinstance: etcd: no leader: %w (last error: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitHealthy waits until a linearizable read succeeds through every
// running member: the cluster has a leader and a quorum, and each member
// has caught up with it.
func (e *Etcd) WaitHealthy(ctx context.Context) error {
	for _, m := range e.members {
		m.mu.Lock()
		pr := m.proc
		m.mu.Unlock()
		if pr == nil || !pr.running() {
			continue
		}
		if err := m.waitReady(ctx, pr, -1); err != nil {
			return err
		}
	}
	return nil
}

// Cleanup kills every member and removes the cluster's directory.
func (e *Etcd) Cleanup() error {
	var errs []error
	for _, m := range e.members {
		errs = append(errs, m.Kill())
	}
	errs = append(errs, os.RemoveAll(e.dir))
	return errors.Join(errs...)
}

// Name is the member's name in the cluster: m1, m2, …
func (m *EtcdMember) Name() string { return m.name }

// Addr is "127.0.0.1:port" of the member's client port.
func (m *EtcdMember) Addr() string { return fmt.Sprintf("127.0.0.1:%d", m.client) }

// Endpoint is the member's client URL, "http://127.0.0.1:port".
func (m *EtcdMember) Endpoint() string { return "http://" + m.Addr() }

func (m *EtcdMember) logPath() string { return filepath.Join(m.e.dir, m.name+".log") }

// Start starts the member (again) on its data directory and ports, and
// returns once a linearizable read through it succeeds (which needs a
// quorum). A port another process holds for a moment is retried.
func (m *EtcdMember) Start(ctx context.Context) error {
	t0 := time.Now()
	pr, off, err := m.launch()
	if err != nil {
		return err
	}
	if err := m.await(ctx, pr, off); err != nil {
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

// Stop shuts the member down (SIGTERM) and waits for it; a no-op when
// stopped.
func (m *EtcdMember) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return nil
	}
	return m.proc.stop(sigTerm, 30*time.Second)
}

func (m *EtcdMember) running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc != nil && m.proc.running()
}

// launch starts the member's process without waiting for it; off is the
// size of its log before, where this run's output begins.
func (m *EtcdMember) launch() (*proc, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil && m.proc.running() {
		return nil, 0, fmt.Errorf("dbinstance: etcd member %s on %s is already running", m.name, m.Addr())
	}
	var off int64
	if st, err := os.Stat(m.logPath()); err == nil {
		off = st.Size()
	}
	// etcd reads ETCD_<FLAG> from the environment, and refuses to start
	// when one names a flag also given: keep the owner's out of it.
	bin, args := m.e.bin, m.args
	if unset := etcdEnv(); len(unset) > 0 {
		bin, args = "env", append(unset, append([]string{m.e.bin}, m.args...)...)
	}
	pr, err := startProc(nil, m.logPath(), bin, args...)
	if err != nil {
		return nil, 0, err
	}
	m.proc = pr
	os.WriteFile(filepath.Join(m.e.dir, m.name+".pid"), []byte(strconv.Itoa(pr.pid())+"\n"), 0o644)
	return pr, off, nil
}

// etcdEnv are env(1) arguments unsetting every ETCD_ variable.
func etcdEnv() []string {
	var unset []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "ETCD_") {
			unset = append(unset, "-u", k)
		}
	}
	return unset
}

// await waits for a launched member, launching it again (briefly) while
// it exits because a port is taken.
func (m *EtcdMember) await(ctx context.Context, pr *proc, off int64) error {
	for tries := 1; ; tries++ {
		err := m.waitReady(ctx, pr, off)
		if !errors.Is(err, errAddrInUse) || tries == 30 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
		if pr, off, err = m.launch(); err != nil {
			return err
		}
	}
}

// waitReady polls a linearizable read through the member until it
// succeeds, pr exits or ctx ends. off is where pr's log begins (-1: not
// to be read).
func (m *EtcdMember) waitReady(ctx context.Context, pr *proc, off int64) error {
	cli, err := m.dial()
	if err != nil {
		return err
	}
	defer cli.Close()
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		_, err = cli.Get(actx, "gomogile-health")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-pr.exited:
			log := tail(m.logPath())
			if f, ferr := os.Open(m.logPath()); ferr == nil && off >= 0 {
				b, _ := io.ReadAll(io.NewSectionReader(f, off, 1<<20))
				f.Close()
				if strings.Contains(string(b), "address already in use") {
					return fmt.Errorf("dbinstance: etcd member %s on %s: %w", m.name, m.Addr(), errAddrInUse)
				}
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
		if r, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/members", m.peer)); err == nil {
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

// dial makes a client of the member alone; it connects on first use, and
// again within 100ms of a refusal (gRPC's default waits a second, then
// longer: a member starting or restarting refuses at first).
func (m *EtcdMember) dial() (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{m.Endpoint()},
		Logger:    zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, MaxDelay: 100 * time.Millisecond},
			MinConnectTimeout: time.Second,
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("dbinstance: etcd member %s: %w", m.name, err)
	}
	return cli, nil
}

var etcdSweepOnce sync.Map // parent dir → *sync.Once

// sweepEtcd removes, once per process and parent, the cluster directories
// of owners that died without Cleanup, unless a member still runs in one.
func sweepEtcd(parent string) {
	o, _ := etcdSweepOnce.LoadOrStore(parent, new(sync.Once))
	o.(*sync.Once).Do(func() {
		dirs, _ := filepath.Glob(filepath.Join(parent, "gomogile-etcd-*"))
		for _, d := range dirs {
			if !stale(d) {
				continue
			}
			pids, _ := filepath.Glob(filepath.Join(d, "*.pid"))
			left := false
			for _, p := range pids {
				if pid, err := readPid(p); err == nil && alive(pid) {
					left = true
				}
			}
			if !left {
				os.RemoveAll(d)
			}
		}
	})
}
