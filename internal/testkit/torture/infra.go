package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/faultproxy"
)

// proxies are the in-process fault proxies between each tracker process's
// Store and the server: per tracker slot, one per database node the DSN
// names (a failover pair has two), so that a slot's fault hits its
// connections to whichever node is primary. The coordinator's own Store
// connects directly, so that it can watch and judge through the faults.
type proxies struct {
	mu   sync.Mutex
	list [][]*faultproxy.Proxy // [slot][node], nodes in the DSN's order
	busy map[int]bool          // a slot's proxies in a timed fault (partition, delay)
	wg   sync.WaitGroup
}

// startProxies starts the proxies of every slot when the DSN is a URL
// naming TCP servers; otherwise the run has none and the network faults
// print "-".
func (r *run) startProxies() error {
	if !r.caps.CrossProcess {
		return nil
	}
	u, err := url.Parse(r.workerBase)
	if err != nil || u.Host == "" || strings.Contains(u.Host, "/") || strings.Contains(u.Host, "%") {
		return nil
	}
	proto, port := faultproxy.Postgres, "5432"
	if r.driver == "mysql" || r.driver == "mariadb" {
		proto, port = faultproxy.MySQL, "3306"
	}
	var targets []string
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return nil
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), port)
		}
		targets = append(targets, h)
	}
	r.px = &proxies{busy: map[int]bool{}}
	for i := 0; i < r.cfg.Procs; i++ {
		var slot []*faultproxy.Proxy
		for _, target := range r.srv.slotTargets(i, targets) {
			p, err := faultproxy.Start(target, faultproxy.Options{Protocol: proto})
			if err != nil {
				for _, p := range slot {
					_ = p.Close()
				}
				r.closeProxies()
				return fmt.Errorf("torture: %w", err)
			}
			slot = append(slot, p)
		}
		r.px.list = append(r.px.list, slot)
	}
	return nil
}

// slotDSN is the DSN slot's process opens: through its proxies, if any
// (one host per node, in the DSN's order, so target_session_attrs picks
// the primary's), and on PostgreSQL with the slot's own lock_owner
// identity, which each new process of the slot takes over from the last.
func (r *run) slotDSN(slot int) string {
	dsn := r.workerBase
	if r.driver == "postgres" {
		dsn = withParams(dsn, "lock_owner", slotOwner(slot))
	}
	if r.etcd != nil {
		dsn = withParams(dsn, "lock_dsn", r.slotLockDSN(slot))
	}
	if r.px == nil {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	hosts := make([]string, len(r.px.list[slot]))
	for i, p := range r.px.list[slot] {
		hosts[i] = p.Addr()
	}
	u.Host = strings.Join(hosts, ",")
	return u.String()
}

func slotOwner(slot int) string { return fmt.Sprintf("torture-p%d", slot) }

func (r *run) closeProxies() {
	if r.px == nil {
		return
	}
	r.px.wg.Wait()
	for _, slot := range r.px.list {
		for _, p := range slot {
			_ = p.Close()
		}
	}
	r.px = nil
}

// healProxies ends every network fault, so the processes can stop.
func (r *run) healProxies() {
	if r.px == nil {
		return
	}
	r.px.wg.Wait()
	for _, slot := range r.px.list {
		for _, p := range slot {
			p.Blackhole(false)
			p.SetDelay(0)
			p.DropCommitReplies(0)
		}
	}
}

// infraKinds lists the faults the run's infrastructure (fault proxies,
// private database server) can make.
func (r *run) infraKinds() []string {
	kinds := r.srv.kinds()
	if r.px != nil {
		kinds = append(kinds, faultPartition, faultDelay, faultCut, faultAmbiguous)
	}
	return kinds
}

// infraFault makes a network fault on one slot's proxy. Partitions and
// delays last a while: they run on, the injector goes on with the next
// fault.
func (r *run) infraFault(ctx context.Context, rng *rand.Rand, kind string) error {
	switch kind {
	case faultDBCrash:
		return r.dbcrash(ctx, rng)
	case faultFailover:
		return r.failover(ctx)
	}
	px := r.px
	if px == nil {
		return fmt.Errorf("fault %q not available", kind)
	}
	slot := rng.IntN(len(px.list))
	ps := px.list[slot]
	all := func(f func(p *faultproxy.Proxy)) func() {
		return func() {
			for _, p := range ps {
				f(p)
			}
		}
	}
	timed := func(d time.Duration, on, off func()) bool {
		px.mu.Lock()
		if px.busy[slot] {
			px.mu.Unlock()
			return false
		}
		px.busy[slot] = true
		px.mu.Unlock()
		on()
		px.wg.Add(1)
		go func() {
			defer px.wg.Done()
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			off()
			r.trouble(slot)
			px.mu.Lock()
			delete(px.busy, slot)
			px.mu.Unlock()
		}()
		return true
	}
	// Leases (PostgreSQL's lock lease, MySQL's session watcher) are what a
	// partition tests: a third of them outlast the dead-owner bound.
	long := max(r.caps.DeadOwnerBound, time.Second)
	switch kind {
	case faultPartition:
		d := time.Duration(300+rng.IntN(700)) * time.Millisecond
		if rng.IntN(3) == 0 {
			d = long + time.Duration(rng.IntN(1000))*time.Millisecond
		}
		if timed(d, all(func(p *faultproxy.Proxy) { p.Blackhole(true) }), all(func(p *faultproxy.Proxy) { p.Blackhole(false) })) {
			r.countFault(kind)
			r.cfg.Logf("torture: partition of slot %d for %v", slot, d)
		}
	case faultDelay:
		d := time.Duration(10+rng.IntN(150)) * time.Millisecond
		span := time.Duration(500+rng.IntN(1500)) * time.Millisecond
		if timed(span, all(func(p *faultproxy.Proxy) { p.SetDelay(d) }), all(func(p *faultproxy.Proxy) { p.SetDelay(0) })) {
			r.countFault(kind)
			r.cfg.Logf("torture: delay of %v on slot %d for %v", d, slot, span)
		}
	case faultCut:
		all((*faultproxy.Proxy).Cut)()
		r.trouble(slot)
		r.countFault(kind)
		r.cfg.Logf("torture: cut the connections of slot %d", slot)
	case faultAmbiguous:
		// Only on the primary's proxy: a drop armed on the standby's would
		// fire at some commit after a failover, long after this fault.
		n := 1 + rng.IntN(2)
		ps[r.srv.primaryNode()].DropCommitReplies(n)
		r.trouble(slot)
		r.countFault(kind)
		r.cfg.Logf("torture: drop the next %d commit replies of slot %d", n, slot)
	default:
		return fmt.Errorf("fault %q not available", kind)
	}
	return nil
}
