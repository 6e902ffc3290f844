package torture

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/store"
)

// Fault kinds, as the summary line names them.
const (
	faultKill9     = "kill9"     // SIGKILL of a tracker process (preferably a lock holder), then a new one
	faultSigstop   = "sigstop"   // SIGSTOP of a lock holder past its lease, then SIGCONT
	faultSessions  = "sessions"  // server-side kill of database sessions (KILL, pg_terminate_backend)
	faultDBCrash   = "dbcrash"   // SIGKILL of the database server, then a restart
	faultPartition = "partition" // the proxy blackholes every connection (no FIN, no RST) for a while
	faultDelay     = "delay"     // the proxy delays every packet for a while
	faultCut       = "cut"       // the proxy closes every connection
	faultAmbiguous = "ambiguous" // the proxy drops the replies of the next COMMITs (and cuts their connections)
	faultFailover  = "failover"  // SIGKILL of the primary, promotion of the standby
	faultDupOwner  = "dupowner"  // a worker process opening a live one's identity: its lock_owner (PostgreSQL), its database file (SQLite)
)

// injector makes one fault every FaultEvery, taking the kinds that apply
// to the backend in a shuffled turn so that every kind happens in a run
// long enough for a few turns.
type injector struct {
	r      *run
	rng    *rand.Rand
	kinds  []string
	killer *sessionKiller
	dups   int // duplicate processes started
	wg     sync.WaitGroup
}

func newInjector(r *run) *injector {
	in := &injector{r: r, rng: rand.New(rand.NewPCG(r.cfg.Seed, 0))}
	in.kinds = []string{faultKill9, faultSigstop}
	if r.caps.CrossProcess {
		in.kinds = append(in.kinds, faultSessions)
	}
	if (r.driver == "postgres" || r.driver == "sqlite") && r.etcd == nil {
		// MySQL's locks belong to server sessions, etcd's to a lease each
		// Store takes: there is no owner identity to duplicate.
		in.kinds = append(in.kinds, faultDupOwner)
	}
	in.kinds = append(in.kinds, r.infraKinds()...)
	in.kinds = append(in.kinds, r.etcdKinds()...)
	r.rep.Faults.Applicable = append([]string(nil), in.kinds...)
	if len(r.cfg.Faults) > 0 {
		var only []string
		for _, k := range in.kinds {
			for _, want := range r.cfg.Faults {
				if k == want {
					only = append(only, k)
				}
			}
		}
		in.kinds = only
	}
	if !r.caps.CrossProcess {
		// One process owns an SQLite database: its SIGKILL is the
		// database's crash.
		r.rep.Faults.Applicable = append(r.rep.Faults.Applicable, faultDBCrash)
	}
	return in
}

func (in *injector) close() {
	in.wg.Wait()
	if in.killer != nil {
		in.killer.close()
		in.killer = nil
	}
}

func (in *injector) run(ctx context.Context) {
	if in.r.cfg.FaultEvery <= 0 || len(in.kinds) == 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(in.r.cfg.FaultEvery)
	defer t.Stop()
	var turn []string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if len(turn) == 0 {
			turn = append(turn, in.kinds...)
			in.rng.Shuffle(len(turn), func(i, j int) { turn[i], turn[j] = turn[j], turn[i] })
		}
		kind := turn[0]
		turn = turn[1:]
		if err := in.fault(ctx, kind); err != nil && ctx.Err() == nil {
			in.r.faultErr(fmt.Errorf("%s: %w", kind, err))
		}
	}
}

func (in *injector) fault(ctx context.Context, kind string) error {
	r := in.r
	switch kind {
	case faultKill9:
		return in.kill9(ctx)
	case faultSigstop:
		return in.sigstop(ctx)
	case faultDupOwner:
		return in.dupOwner(ctx)
	case faultSessions:
		for attempt := 0; ; attempt++ {
			if in.killer == nil {
				k, err := r.newKiller(ctx)
				if err != nil {
					return err
				}
				in.killer = k
			}
			err := r.kill(ctx, in.rng, in.killer)
			if err == nil {
				return nil
			}
			// Our own connection may be what broke (a crash or a failover
			// since the last time): take a new one, and try once more.
			in.killer.close()
			in.killer = nil
			if attempt == 1 {
				return err
			}
		}
	case faultEtcdKill, faultEtcdLeader, faultEtcdPartition:
		return r.etcdFault(ctx, in.rng, kind)
	}
	return r.infraFault(ctx, in.rng, kind)
}

// victim picks a running, unpaused process, preferring one that holds
// locks (with counters: one in the middle of a guarded write, else one
// holding a counter lock — a write under it is what a pause can make
// stale).
func (in *injector) victim(counters bool) *wproc {
	r := in.r
	r.mu.Lock()
	defer r.mu.Unlock()
	var all, holders, writers []*wproc
	for _, p := range r.procs {
		if r.stopped[p.prefix] {
			continue
		}
		select {
		case <-p.exited:
			continue
		default:
		}
		all = append(all, p)
		if counters && len(r.writing[p.prefix]) > 0 {
			writers = append(writers, p)
		}
		for _, n := range r.open[p.prefix] {
			if !counters || strings.HasPrefix(n, "torture:ctr:") {
				holders = append(holders, p)
				break
			}
		}
	}
	if len(writers) > 0 {
		return writers[in.rng.IntN(len(writers))]
	}
	if len(holders) > 0 {
		return holders[in.rng.IntN(len(holders))]
	}
	if len(all) > 0 {
		return all[in.rng.IntN(len(all))]
	}
	return nil
}

// openNames lists the locks a process holds by its history.
func (r *run) openNames(p *wproc) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for _, n := range r.open[p.prefix] {
		names = append(names, n)
	}
	return names
}

// kill9 SIGKILLs a tracker process, measures how soon the locks it held are
// free again, and starts a new process in its slot.
func (in *injector) kill9(ctx context.Context) error {
	r := in.r
	var p *wproc
	// Locks are held for milliseconds: look for a holder for a while.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); {
		p = in.victim(false)
		if p != nil && len(r.openNames(p)) > 0 {
			break
		}
		if !sleepCtx(ctx, time.Millisecond) {
			break
		}
	}
	if p == nil {
		return nil
	}
	// The names are read just before the kill; one granted in between is
	// missed, never one that is not held.
	names := r.openNames(p)
	killed := time.Now()
	r.signal(p, syscall.SIGKILL)
	r.trouble(p.slot)
	r.countFault(faultKill9)
	if !r.caps.CrossProcess {
		r.countFault(faultDBCrash)
	}
	r.cfg.Logf("torture: SIGKILL %s holding %v", p.prefix, names)
	if r.caps.CrossProcess && r.admin != nil {
		for i, name := range names {
			if i == 2 {
				break
			}
			r.probe(ctx, name, killed)
		}
	}
	_, err := r.start(p.slot, p.gen+1)
	return err
}

// sigstop pauses a lock holder past its lease, then resumes it: its locks
// may be granted to others meanwhile, and its writes after waking must be
// refused by their fence.
func (in *injector) sigstop(ctx context.Context) error {
	r := in.r
	r.mu.Lock()
	busy := len(r.stopped) > 0
	r.mu.Unlock()
	if busy {
		return nil
	}
	// Best in the middle of a guarded write: between its lock check and
	// its write's return, where only the fence can save the counter.
	var p *wproc
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		p = in.victim(true)
		r.mu.Lock()
		writing := p != nil && len(r.writing[p.prefix]) > 0
		r.mu.Unlock()
		if writing {
			break
		}
		if !sleepCtx(ctx, time.Millisecond) {
			break
		}
	}
	if p == nil {
		return nil
	}
	pause := r.caps.DeadOwnerBound + 500*time.Millisecond
	if pause < time.Second {
		pause = time.Second
	}
	if r.etcd != nil {
		// DeadOwnerBound (the etcd TTL + 1s) + 500ms outlasts the workers'
		// OpTimeout (3s): every write woken after it dies on its deadline,
		// and the fence is never asked. An etcd lease is gone at most a
		// leader's expiry pass (500ms) after its TTL, so pauses from TTL +
		// 300ms up to the usual length leave some woken writes alive after
		// another Store was granted their lock: those only the fence row
		// refuses.
		ttl := r.caps.DeadOwnerBound - time.Second
		pause = ttl + 300*time.Millisecond + time.Duration(in.rng.Int64N(int64(pause-ttl-300*time.Millisecond)+1))
	}
	names := r.openNames(p)
	r.signal(p, sigStop)
	r.trouble(p.slot)
	r.countFault(faultSigstop)
	r.cfg.Logf("torture: SIGSTOP %s for %v", p.prefix, pause)
	if r.caps.LockMechanism == "session" {
		// A session lock outlives a frozen holder as long as its session:
		// end the sessions holding its locks, as a wait_timeout or a
		// dead network would, so the pause is one past the lock's life.
		if n, err := r.killLockSessions(ctx, names); err != nil {
			r.faultErr(fmt.Errorf("sigstop: kill lock sessions: %w", err))
		} else {
			r.cfg.Logf("torture: killed %d lock sessions of frozen %s", n, p.prefix)
		}
	}
	in.wg.Add(1)
	go func() {
		defer in.wg.Done()
		// Resumed even when the faults end meanwhile: the run must stop it.
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		r.signal(p, sigCont)
		r.trouble(p.slot)
	}()
	return nil
}

// quietVictim picks a running process whose Stores are open, that is not
// paused and whose slot no fault touched for d.
func (in *injector) quietVictim(d time.Duration) *wproc {
	r := in.r
	r.mu.Lock()
	var cands []*wproc
	for _, p := range r.procs {
		select {
		case <-p.exited:
			continue
		default:
		}
		if r.stopped[p.prefix] || !r.hello[p.prefix] {
			continue
		}
		cands = append(cands, p)
	}
	r.mu.Unlock()
	var quiet []*wproc
	for _, p := range cands {
		busy := false
		if r.px != nil {
			r.px.mu.Lock()
			busy = r.px.busy[p.slot]
			r.px.mu.Unlock()
		}
		if !busy && r.quietSince(p.slot, d) {
			quiet = append(quiet, p)
		}
	}
	if len(quiet) == 0 {
		return nil
	}
	return quiet[in.rng.IntN(len(quiet))]
}

// dupOwner opens a Store with the lock_owner identity of a live, running
// process whose network is whole: the backend must refuse it
// (store.ErrDuplicate). Accepting it would let two Stores evict each
// other's locks.
func (in *injector) dupOwner(ctx context.Context) error {
	r := in.r
	// Only an owner that has renewed undisturbed for a while is surely
	// live: a pause, a partition, a cut or a crash may have ended its
	// incarnation, and then a newcomer rightly takes the identity over.
	// No other fault starts while this one waits for such an owner.
	var p *wproc
	for deadline := time.Now().Add(4 * time.Second); p == nil; {
		p = in.quietVictim(1500 * time.Millisecond)
		if p == nil && (time.Now().After(deadline) || !sleepCtx(ctx, 50*time.Millisecond)) {
			return nil
		}
	}
	// A worker process of its own, opening what the owner's slot opens:
	// the same DSN (the same lock_owner identity, the same database file),
	// through the same proxies.
	dup := fmt.Sprintf("d%d.%d", p.slot, in.dups)
	in.dups++
	start := time.Now()
	d, err := r.spawn(workerConfig{Proc: dup, DSN: r.slotDSN(p.slot), DupOf: p.prefix, OpTimeout: r.cfg.OpTimeout})
	if err != nil {
		return err
	}
	r.countFault(faultDupOwner)
	select {
	case <-d.exited:
	case <-time.After(r.cfg.OpTimeout + 15*time.Second):
		r.signal(d, syscall.SIGKILL)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.dupSeen[p.prefix] {
		// It died before it could tell: not judged.
		r.history = append(r.history, event{K: "dupowner", P: p.prefix, S: nanos(start), T: nanos(time.Now()), E: "other", Msg: fmt.Sprintf("duplicate process %s: %v\n%s", dup, d.err, d.stderr)})
	}
	delete(r.dupSeen, p.prefix)
	r.cfg.Logf("torture: duplicate process %s of %s (identity %s) exited: %v", dup, p.prefix, slotOwner(p.slot), d.err)
	return nil
}

// killLockSessions kills the MySQL sessions holding the named locks.
// store/mysql documents a lock's server name: "gomogile:" and the SHA-256
// of the database name, NUL, the lock name, in lower-case base32.
func (r *run) killLockSessions(ctx context.Context, names []string) (int, error) {
	db, ok := sqlaccess.DB(r.admin)
	if !ok {
		return 0, fmt.Errorf("%T is not an SQL store", r.admin)
	}
	var database string
	if err := db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&database); err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		h := sha256.New()
		h.Write([]byte(database))
		h.Write([]byte{0})
		h.Write([]byte(name))
		server := "gomogile:" + base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil))
		var id sql.NullInt64
		if err := db.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", server).Scan(&id); err != nil {
			return n, err
		}
		if !id.Valid {
			continue
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf("KILL %d", id.Int64)); err == nil {
			n++
		}
	}
	return n, nil
}

// probe takes name from the coordinator's own Store, to measure how soon a
// killed holder's lock is free. The holding joins the history like any.
func (r *run) probe(ctx context.Context, name string, killed time.Time) {
	bound := r.caps.DeadOwnerBound + r.cfg.RecoverySlack
	r.probes.Add(1)
	go func() {
		defer r.probes.Done()
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound+r.cfg.OpTimeout)
		defer cancel()
		start := time.Now()
		l, err := r.admin.Lock(pctx, name, bound-time.Since(killed))
		// A probe's own session may be killed or cut by another fault
		// while it waits: like a tracker, it tries again, within the
		// bound; only the lock staying taken is the dead owner's doing.
		for errors.Is(err, store.ErrUnavailable) && time.Since(killed) < bound && sleepCtx(pctx, 10*time.Millisecond) {
			l, err = r.admin.Lock(pctx, name, max(bound-time.Since(killed), 0))
		}
		got := time.Now()
		ev := event{K: "probe", P: "coord", N: name, S: nanos(killed), E: kindOf(err)}
		if err == nil {
			ev.T = nanos(got)
		}
		r.record(ev)
		r.record(event{K: "op", P: "coord", Op: "probe_lock", S: nanos(start), T: nanos(got), E: kindOf(err)})
		if err != nil {
			return
		}
		r.mu.Lock()
		r.probeID++
		id := r.probeID
		r.mu.Unlock()
		r.record(event{K: "grant", P: "coord", N: name, H: id, Tok: tokenOf(l), T: nanos(got)})
		r.record(event{K: "end", P: "coord", N: name, H: id, Msg: "released", T: nanos(time.Now())})
		if err := l.Release(pctx); err != nil && !errors.Is(err, context.Canceled) {
			r.cfg.Logf("torture: release probe %q: %v", name, err)
		}
	}()
}

// trouble marks a fault that touched slot (-1: every slot) ending now.
func (r *run) trouble(slot int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.troubled == nil {
		r.troubled = map[int]time.Time{}
	}
	r.troubled[slot] = time.Now()
}

// quietSince reports whether no fault touched slot for d.
func (r *run) quietSince(slot int, d time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cut := time.Now().Add(-d)
	return r.troubled[slot].Before(cut) && r.troubled[-1].Before(cut)
}

func (r *run) countFault(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rep.Faults.Count == nil {
		r.rep.Faults.Count = map[string]int{}
	}
	r.rep.Faults.Count[kind]++
}

func (r *run) faultErr(err error) {
	r.cfg.Logf("torture: fault: %v", err)
	r.mu.Lock()
	defer r.mu.Unlock()
	// The first few, and always the latest: the one that broke a run is
	// often the last.
	if len(r.rep.Faults.Errors) < 5 {
		r.rep.Faults.Errors = append(r.rep.Faults.Errors, err.Error())
	} else {
		r.rep.Faults.Errors[4] = "latest: " + err.Error()
	}
	r.rep.Faults.ErrorCount++
}

// sessionKiller holds the coordinator's own connection, from which it kills
// every other session of the test database: a connection of its own so it
// can name itself and survive.
type sessionKiller struct {
	conn *sql.Conn
	list string // query: ids of the database's other sessions
	kill func(ctx context.Context, id int64) error
}

func (k *sessionKiller) close() { _ = k.conn.Close() }

func (r *run) newKiller(ctx context.Context) (*sessionKiller, error) {
	db, ok := sqlaccess.DB(r.admin)
	if !ok {
		return nil, fmt.Errorf("%T is not an SQL store", r.admin)
	}
	var k sessionKiller
	switch r.driver {
	case "mysql", "mariadb":
		k.list = "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()"
		k.kill = func(ctx context.Context, id int64) error {
			_, err := k.conn.ExecContext(ctx, fmt.Sprintf("KILL %d", id))
			return err
		}
	case "postgres":
		k.list = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
		k.kill = func(ctx context.Context, id int64) error {
			var ok bool
			return k.conn.QueryRowContext(ctx, fmt.Sprintf("SELECT pg_terminate_backend(%d)", id)).Scan(&ok)
		}
	default:
		return nil, fmt.Errorf("no sessions to kill on %s", r.driver)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("killer connection: %w", err)
	}
	k.conn = conn
	return &k, nil
}

// kill ends database sessions of the test database: all of them, or a
// random half.
func (r *run) kill(ctx context.Context, rng *rand.Rand, k *sessionKiller) error {
	rows, err := k.conn.QueryContext(ctx, k.list)
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("list sessions: %w", err)
		}
		ids = append(ids, id)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	all := rng.IntN(3) == 0
	killed := 0
	for _, id := range ids {
		if !all && rng.IntN(2) == 0 {
			continue
		}
		// A session may end by itself between the listing and the kill;
		// only a failure of our own connection matters.
		if err := k.kill(ctx, id); err == nil {
			killed++
		} else if errors.Is(err, sql.ErrConnDone) {
			return fmt.Errorf("kill session %d: %w", id, err)
		}
	}
	r.countFault(faultSessions)
	r.trouble(-1)
	r.mu.Lock()
	r.rep.Faults.SessionsKilled += killed
	r.mu.Unlock()
	r.cfg.Logf("torture: killed %d of %d sessions", killed, len(ids))
	return nil
}
