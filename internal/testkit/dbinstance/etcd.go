package dbinstance

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
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
// does not refuse root), never as Debian's etcd account, whose service
// scripts/test-servers.sh stops.
type Etcd struct {
	o       EtcdOptions
	bin     string
	dir     string
	members []*EtcdMember
}

// StartEtcd starts o.Members etcd members on free 127.0.0.1 ports, each
// launched as soon as the one before serves its peer port, and returns
// once a linearizable read succeeds through every one of them. Call
// Cleanup when done. Without an etcd binary the error wraps
// ErrUnavailable.
func StartEtcd(ctx context.Context, o EtcdOptions) (*Etcd, error) {
	if errPlatform != nil {
		return nil, errPlatform
	}
	bin, err := lookBin("etcd", "/usr/bin", "/usr/local/bin")
	if err != nil {
		return nil, err
	}
	n := cmp.Or(o.Members, 3)
	if n < 1 {
		return nil, fmt.Errorf("dbinstance: etcd: %d members", n)
	}
	o.HeartbeatInterval = cmp.Or(o.HeartbeatInterval, 50*time.Millisecond)
	o.ElectionTimeout = cmp.Or(o.ElectionTimeout, 500*time.Millisecond)
	var ports []int // a client and a peer port per member
	for len(ports) < 2*n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	parent := cmp.Or(o.Dir, os.TempDir())
	sweepEtcd(parent)
	dir, err := tempDir(parent, "gomogile-etcd-*", nil)
	if err != nil {
		return nil, err
	}
	e := &Etcd{o: o, bin: bin, dir: dir}
	var initial []string
	for i := range n {
		m := &EtcdMember{e: e, name: "m" + strconv.Itoa(i+1), client: ports[2*i], peer: ports[2*i+1]}
		e.members = append(e.members, m)
		initial = append(initial, m.name+"="+m.peerURL())
	}
	var id [6]byte
	rand.Read(id[:])
	for _, m := range e.members {
		set := map[string]string{
			"name":                        m.name,
			"data-dir":                    filepath.Join(dir, m.name),
			"listen-client-urls":          m.Endpoint(),
			"advertise-client-urls":       m.Endpoint(),
			"listen-peer-urls":            m.peerURL(),
			"initial-advertise-peer-urls": m.peerURL(),
			"initial-cluster":             strings.Join(initial, ","),
			"initial-cluster-state":       "new",
			"initial-cluster-token":       "gomogile-" + hex.EncodeToString(id[:]), // no two clusters merge
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
		slices.Sort(m.args)
	}
	t0 := time.Now()
	// Before it serves its own peer port, etcd 3.4 asks each peer whether
	// it is a member already, waiting a second for one that has bound its
	// port but does not serve it yet: three members launched at once take
	// two seconds more. So each is launched once the one before serves.
	prs := make([]*proc, n)
	for i, m := range e.members {
		if prs[i], err = m.launch(); err != nil {
			e.Cleanup()
			return nil, err
		}
		m.waitPeer(ctx, prs[i])
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, m := range e.members {
		wg.Go(func() { errs[i] = m.await(ctx, prs[i]) })
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
func (e *Etcd) Members() []*EtcdMember { return slices.Clone(e.members) }

// DSN is the lock_dsn (package store/etcd) naming every member, with
// prefix ("/name", or "").
func (e *Etcd) DSN(prefix string) string {
	var hosts []string
	for _, m := range e.members {
		hosts = append(hosts, m.Addr())
	}
	return "etcd://" + strings.Join(hosts, ",") + prefix
}

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
			if m.running() == nil {
				continue
			}
			st, err := m.status(ctx)
			if err != nil {
				last = err
			} else if st.Leader != 0 && st.Leader == st.Header.MemberId && st.RaftTerm >= term {
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
		if pr := m.running(); pr != nil {
			if err := m.waitReady(ctx, pr); err != nil {
				return err
			}
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
	return errors.Join(append(errs, os.RemoveAll(e.dir))...)
}

var etcdSweepOnce sync.Map // parent dir → *sync.Once

// sweepEtcd removes, once per process and parent, the cluster directories
// of owners that died without Cleanup, unless a member still runs in one
// (outside Linux members do not die with their owner).
func sweepEtcd(parent string) {
	o, _ := etcdSweepOnce.LoadOrStore(parent, new(sync.Once))
	o.(*sync.Once).Do(func() {
		dirs, _ := filepath.Glob(filepath.Join(parent, "gomogile-etcd-*"))
	next:
		for _, d := range dirs {
			pids, _ := filepath.Glob(filepath.Join(d, "*.pid"))
			for _, p := range pids {
				if pid, err := readPid(p); err == nil && alive(pid) {
					continue next
				}
			}
			if stale(d) {
				os.RemoveAll(d)
			}
		}
	})
}
