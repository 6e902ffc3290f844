package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/faultproxy"
	// The lock service a lock_dsn may name.
	_ "github.com/gomogile/gomogile/store/etcd"
)

// LocksEtcd (Config.Locks) keeps every Store's named locks in a private
// 3-member etcd cluster the run starts and removes (lock_dsn), fenced by
// the metadata database's fence rows.
const LocksEtcd = "etcd"

// etcdTTL is the etcd session lease of every Store: the shortest the
// lock service takes, so that pauses and partitions outlast it within a
// short run (a dead owner's locks are free within ttl + 1s).
const etcdTTL = "2"

// Fault kinds of a run with etcd locks.
const (
	faultEtcdKill      = "etcdkill"      // SIGKILL of an etcd follower, then a restart
	faultEtcdLeader    = "etcdleader"    // SIGKILL of the etcd leader (an election), then a restart
	faultEtcdPartition = "etcdpartition" // one slot's proxies to every etcd member blackholed for a while
)

// etcdLocks is a run's private etcd cluster and the fault proxies between
// each tracker slot and its members: per slot one per member, so that a
// partition cuts that slot alone. The coordinator reaches the members
// directly.
type etcdLocks struct {
	cluster *dbinstance.Etcd
	prefix  string // the run's own key prefix

	mu        sync.Mutex
	px        [][]*faultproxy.Proxy // [slot][member]
	memberOut bool                  // a member is down: at most one at a time, so a quorum stays
	cutOff    map[int]bool          // slots partitioned from etcd now
	elections []window              // leader kills, from the SIGKILL to the restarted member serving
	wg        sync.WaitGroup
}

// startEtcd starts the run's etcd cluster and returns the lock_dsn the
// coordinator's Store opens (every member, directly).
func (r *run) startEtcd(ctx context.Context) (string, error) {
	logf := func(format string, args ...any) { r.cfg.Logf("torture: "+format, args...) }
	c, err := dbinstance.StartEtcd(ctx, dbinstance.EtcdOptions{Logf: logf})
	if err != nil {
		return "", fmt.Errorf("torture: private etcd: %w", err)
	}
	r.etcd = &etcdLocks{cluster: c, prefix: fmt.Sprintf("/torture-%d-%d", os.Getpid(), time.Now().UnixNano()), cutOff: map[int]bool{}}
	var hosts []string
	for _, m := range c.Members() {
		hosts = append(hosts, m.Addr())
	}
	return r.etcd.lockDSN(hosts), nil
}

func (e *etcdLocks) lockDSN(hosts []string) string {
	return "etcd://" + strings.Join(hosts, ",") + e.prefix + "?ttl=" + etcdTTL
}

// cleanup removes the cluster; a no-op without one.
func (e *etcdLocks) cleanup() {
	if e == nil {
		return
	}
	if err := e.cluster.Cleanup(); err != nil {
		fmt.Fprintln(os.Stderr, "torture: clean up private etcd:", err)
	}
}

// startEtcdProxies starts each slot's proxies to the members.
func (r *run) startEtcdProxies() error {
	e := r.etcd
	if e == nil {
		return nil
	}
	for i := 0; i < r.cfg.Procs; i++ {
		var slot []*faultproxy.Proxy
		for _, m := range e.cluster.Members() {
			p, err := faultproxy.Start(m.Addr(), faultproxy.Options{})
			if err != nil {
				for _, p := range slot {
					_ = p.Close()
				}
				r.closeEtcdProxies()
				return fmt.Errorf("torture: etcd proxy: %w", err)
			}
			slot = append(slot, p)
		}
		e.mu.Lock()
		e.px = append(e.px, slot)
		e.mu.Unlock()
	}
	return nil
}

// healEtcd ends the etcd faults: every slot reaches every member, and a
// member killed last is running again.
func (r *run) healEtcd() {
	r.eachEtcdProxy(func(p *faultproxy.Proxy) { p.Blackhole(false) })
}

// closeEtcdProxies closes every slot's proxies, once the faults ended.
func (r *run) closeEtcdProxies() {
	r.eachEtcdProxy(func(p *faultproxy.Proxy) { _ = p.Close() })
	if e := r.etcd; e != nil {
		e.mu.Lock()
		e.px = nil
		e.mu.Unlock()
	}
}

// eachEtcdProxy calls f on every slot's proxy to every member, after the
// faults still running have ended.
func (r *run) eachEtcdProxy(f func(*faultproxy.Proxy)) {
	e := r.etcd
	if e == nil {
		return
	}
	e.wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, slot := range e.px {
		for _, p := range slot {
			f(p)
		}
	}
}

// slotLockDSN is the lock_dsn of slot's processes: every member, through
// the slot's own proxies.
func (r *run) slotLockDSN(slot int) string {
	e := r.etcd
	e.mu.Lock()
	defer e.mu.Unlock()
	var hosts []string
	for _, p := range e.px[slot] {
		hosts = append(hosts, p.Addr())
	}
	return e.lockDSN(hosts)
}

// etcdKinds lists the etcd fault kinds, none without etcd locks.
func (r *run) etcdKinds() []string {
	if r.etcd == nil {
		return nil
	}
	return []string{faultEtcdKill, faultEtcdLeader, faultEtcdPartition}
}

// etcdFault makes one etcd fault. A member's kill and a partition last a
// while: they run on, and the injector goes on with the next fault.
func (r *run) etcdFault(ctx context.Context, rng *rand.Rand, kind string) error {
	e := r.etcd
	switch kind {
	case faultEtcdKill, faultEtcdLeader:
		return r.etcdKill(ctx, rng, kind == faultEtcdLeader)
	case faultEtcdPartition:
		// A slot not cut off already: a turn that found only cut-off
		// slots would make no fault, and a short run might then make
		// none of this kind.
		e.mu.Lock()
		var free []int
		for slot := range r.cfg.Procs {
			if !e.cutOff[slot] {
				free = append(free, slot)
			}
		}
		if len(free) == 0 {
			e.mu.Unlock()
			return nil
		}
		slot := free[rng.IntN(len(free))]
		e.cutOff[slot] = true
		ps := e.px[slot]
		e.mu.Unlock()
		// A third outlast the dead-owner bound: the slot's locks are lost
		// and granted to others while its holders may still be writing.
		d := time.Duration(300+rng.IntN(700)) * time.Millisecond
		if rng.IntN(3) == 0 {
			d = max(r.caps.DeadOwnerBound, time.Second) + time.Duration(rng.IntN(1000))*time.Millisecond
		}
		for _, p := range ps {
			p.Blackhole(true)
		}
		r.countFault(kind)
		r.cfg.Logf("torture: etcd partition of slot %d for %v", slot, d)
		e.wg.Go(func() {
			sleepCtx(ctx, d)
			for _, p := range ps {
				p.Blackhole(false)
			}
			r.trouble(slot)
			e.mu.Lock()
			delete(e.cutOff, slot)
			e.mu.Unlock()
		})
		return nil
	}
	return fmt.Errorf("fault %q not available", kind)
}

// etcdKill SIGKILLs the leader or a follower, and starts it again after
// 0.3–2s, once the others have a leader; one member at a time.
func (r *run) etcdKill(ctx context.Context, rng *rand.Rand, leader bool) error {
	e := r.etcd
	// One member at a time: wait for the last one killed to be back
	// (a few seconds at most) rather than skip the turn, which in a short
	// run could leave a kind never made.
	wait := time.NewTimer(15 * time.Second)
	defer wait.Stop()
	for {
		e.mu.Lock()
		if !e.memberOut {
			e.memberOut = true
			e.mu.Unlock()
			break
		}
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-wait.C:
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
	release := func() {
		e.mu.Lock()
		e.memberOut = false
		e.mu.Unlock()
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	lead, err := e.cluster.Leader(lctx)
	cancel()
	if err != nil {
		release()
		return fmt.Errorf("find the etcd leader: %w", err)
	}
	victim := lead
	if !leader {
		var followers []*dbinstance.EtcdMember
		for _, m := range e.cluster.Members() {
			if m != lead {
				followers = append(followers, m)
			}
		}
		victim = followers[rng.IntN(len(followers))]
	}
	killed := time.Now()
	if err := victim.Kill(); err != nil {
		release()
		return fmt.Errorf("kill etcd %s: %w", victim.Name(), err)
	}
	kind := faultEtcdKill
	if leader {
		kind = faultEtcdLeader
	}
	r.countFault(kind)
	r.trouble(-1)
	r.cfg.Logf("torture: SIGKILL etcd %s (leader: %v)", victim.Name(), leader)
	down := time.Duration(300+rng.IntN(1700)) * time.Millisecond
	e.wg.Go(func() {
		defer release()
		// Started again even when the faults end meanwhile: the checks
		// and the workers' last operations need the whole cluster.
		t := time.NewTimer(down)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err := victim.Start(sctx)
		if leader {
			e.mu.Lock()
			e.elections = append(e.elections, window{killed, time.Now()})
			e.mu.Unlock()
		}
		r.trouble(-1)
		if err != nil {
			r.faultErr(fmt.Errorf("%s: restart etcd %s: %w", kind, victim.Name(), err))
			return
		}
		r.cfg.Logf("torture: etcd %s running again after %v", victim.Name(), time.Since(killed).Round(time.Millisecond))
	})
	return nil
}

// electionDuring reports whether a kill of the etcd leader fell within
// [from, to]: the new leader extends every lease by its TTL, so a dead
// holder's lock is then free only later than DeadOwnerBound after its
// death, as store/etcd documents; such a probe is not judged, as one
// during a database crash is not.
func (r *run) electionDuring(from, to time.Time) bool {
	e := r.etcd
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return overlapsWindow(e.elections, from, to)
}
