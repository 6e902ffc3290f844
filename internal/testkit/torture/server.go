package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
)

// Private servers: the program starts its own database server for a run
// (Config.Private), from the installed binaries, in a temporary directory
// on its own port, and crashes it at will.
const (
	// PrivatePostgres is a private PostgreSQL primary with a synchronous
	// streaming standby, reached through a multi-host DSN: dbcrash =
	// SIGKILL of the primary and a restart, failover = SIGKILL of the
	// primary, promotion of the standby and the old primary rebuilt as the
	// new one's standby, so that it fails over again and again.
	PrivatePostgres  = "postgres"
	PrivateMySQL     = "mysql"              // a private MariaDB; dbcrash = SIGKILL and restart
	PrivatePgBouncer = "postgres-pgbouncer" // a private PostgreSQL behind a private PgBouncer in transaction mode (a deployment: dbcrash, no standby)
	// PrivateGalera is a private 3-node MariaDB Galera cluster, its locks
	// in etcd (Config.Locks = LocksEtcd: Galera's GET_LOCK is per node).
	// Slot i's processes open node i%3 + 1, the coordinator node 1; dbcrash
	// = SIGKILL of node 2 or 3 (one at a time, so a quorum stays) and its
	// restart, rejoining the cluster by a state transfer.
	PrivateGalera = "galera"
)

// servers is a run's private servers.
type servers struct {
	mode    string
	pg      *dbinstance.Postgres // the primary
	standby *dbinstance.Postgres // PrivatePostgres: the standby
	my      *dbinstance.MariaDB
	galera  *dbinstance.Galera
	// crashed is PrivateGalera's node down after its dbcrash, nil when
	// every node runs.
	crashed *dbinstance.GaleraNode
	bouncer *dbinstance.PgBouncer
	nodes   []string // PrivatePostgres: the nodes' addresses, in the DSN's order
	// PrivatePgBouncer: the parent of the pooler's instance directory,
	// and the watch that starts the pooler again when it dies (pooler.go).
	bouncerDir string
	watch      *poolerWatch

	mu        sync.Mutex
	down      []window // when the database was crashed or failing over
	failovers []window // the failovers among them
}

type window struct{ from, to time.Time }

// startServers starts the private servers of cfg.Private and returns the
// DSN the coordinator opens and the one the workers open.
func (r *run) startServers(ctx context.Context) error {
	mode := r.cfg.Private
	logf := func(format string, args ...any) { r.cfg.Logf("torture: "+format, args...) }
	s := &servers{mode: mode}
	r.srv = s
	switch mode {
	case PrivatePgBouncer:
		pg, err := dbinstance.StartPostgres(ctx, dbinstance.PGOptions{Logf: logf})
		if err != nil {
			return fmt.Errorf("torture: private postgres: %w", err)
		}
		s.pg = pg
		r.cfg.DSN = pg.DSN("test")
		dir, err := newPoolerDir()
		if err != nil {
			return err
		}
		s.bouncerDir = dir
		b, err := dbinstance.StartPgBouncer(ctx, pg.Addr(), dbinstance.BouncerOptions{PoolMode: "transaction", Dir: dir, Logf: logf})
		if err != nil {
			return fmt.Errorf("torture: private pgbouncer: %w", err)
		}
		s.bouncer = b
		s.watchPooler(logf, func() { r.trouble(-1) })
		// store/postgres's # Poolers: no named statements, no LISTEN.
		r.workerBase = withParams(b.DSN("test"), "default_query_exec_mode", "simple_protocol", "lock_notify", "false")
	case PrivatePostgres:
		pg, err := dbinstance.StartPostgres(ctx, dbinstance.PGOptions{Logf: logf})
		if err != nil {
			return fmt.Errorf("torture: private postgres: %w", err)
		}
		s.pg = pg
		sb, err := pg.StartStandby(ctx)
		if err != nil {
			return fmt.Errorf("torture: private standby: %w", err)
		}
		s.standby = sb
		// Synchronous replication: a commit is acknowledged only once the
		// standby has it, so promoting the standby loses no acknowledged
		// commit (asynchronous streaming could). Set once the standby
		// streams: before, every commit would wait.
		if err := pg.SetSynchronousStandby(ctx, true); err != nil {
			return fmt.Errorf("torture: private postgres: %w", err)
		}
		// Every Store names both nodes: pgx tries them in turn and
		// target_session_attrs=read-write skips one that is down or a
		// standby, so after a promotion the pool, the lock renewer and
		// the listener all reconnect to the new primary by themselves.
		s.nodes = []string{pg.Addr(), sb.Addr()}
		r.cfg.DSN = dbinstance.FailoverDSN("test", pg, sb)
	case PrivateMySQL:
		my, err := dbinstance.StartMariaDB(ctx, dbinstance.MyOptions{Logf: logf})
		if err != nil {
			return fmt.Errorf("torture: private mariadb: %w", err)
		}
		s.my = my
		r.cfg.DSN = my.DSN("test")
	case PrivateGalera:
		g, err := dbinstance.StartGalera(ctx, dbinstance.GaleraOptions{Logf: logf})
		if err != nil {
			return fmt.Errorf("torture: private galera: %w", err)
		}
		s.galera = g
		r.cfg.DSN = g.Nodes()[0].DSN("test")
	default:
		return fmt.Errorf("torture: unknown private server %q (want %s, %s, %s or %s)", mode, PrivatePostgres, PrivateMySQL, PrivatePgBouncer, PrivateGalera)
	}
	return nil
}

func withParams(dsn string, kv ...string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *servers) cleanup() {
	if s == nil {
		return
	}
	var errs []error
	s.stopWatch()
	if s.bouncer != nil {
		errs = append(errs, s.bouncer.Cleanup())
	}
	if s.bouncerDir != "" {
		errs = append(errs, os.RemoveAll(s.bouncerDir))
	}
	if s.standby != nil {
		errs = append(errs, s.standby.Cleanup())
	}
	if s.pg != nil {
		errs = append(errs, s.pg.Cleanup())
	}
	if s.my != nil {
		errs = append(errs, s.my.Cleanup())
	}
	if s.galera != nil {
		errs = append(errs, s.galera.Cleanup())
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "torture: clean up private servers:", err)
	}
}

// slotTargets are the servers slot's proxies lead to: on PrivateGalera
// the slot's own node (slot i, node i%3 + 1), so that the processes write
// through every node; else targets, the DSN's.
func (s *servers) slotTargets(slot int, targets []string) []string {
	if s == nil || s.galera == nil {
		return targets
	}
	nodes := s.galera.Nodes()
	return []string{nodes[slot%len(nodes)].Addr()}
}

// primaryNode is the index, in the DSN's host list, of the node that is
// primary now (0 when the DSN names one node).
func (s *servers) primaryNode() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, n := range s.nodes {
		if s.pg != nil && n == s.pg.Addr() {
			return i
		}
	}
	return 0
}

// failoverWindows returns the run's failovers, each from the primary's
// SIGKILL to its replacement's synchronous standby streaming.
func (s *servers) failoverWindows() []window {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]window(nil), s.failovers...)
}

// kinds lists the faults the private servers can make.
func (s *servers) kinds() []string {
	if s == nil {
		return nil
	}
	if s.mode == PrivatePostgres {
		return []string{faultDBCrash, faultFailover}
	}
	return []string{faultDBCrash}
}

// crashDuring reports the start of a crash within [from, to] (to zero: no
// end).
func (s *servers) crashDuring(from, to time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.down {
		if !w.from.Before(from) && (to.IsZero() || w.from.Before(to)) {
			return w.from, true
		}
	}
	return time.Time{}, false
}

// wasDown reports whether the database was crashed or failing over
// within [from, to].
func (s *servers) wasDown(from, to time.Time) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return overlapsWindow(s.down, from, to)
}

// poolerWasDown reports whether the pooler was dead within [from, to].
func (s *servers) poolerWasDown(from, to time.Time) bool {
	var ws []window
	for _, d := range s.poolerDeaths() {
		ws = append(ws, d.window)
	}
	return overlapsWindow(ws, from, to)
}

// downWindows returns when the database (crashed, failing over) or the
// pooler in front of it (dead) was down.
func (s *servers) downWindows() []window {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	ws := append([]window(nil), s.down...)
	s.mu.Unlock()
	for _, d := range s.poolerDeaths() {
		ws = append(ws, d.window)
	}
	return ws
}

func overlapsWindow(ws []window, from, to time.Time) bool {
	for _, w := range ws {
		if w.from.Before(to) && w.to.After(from) {
			return true
		}
	}
	return false
}

// restart starts the crashed server again, retrying: on a loaded machine
// a start may time out, and a run must not go on (or end) without its
// database. It goes on when the faults end: the checks need the server.
func (s *servers) restart(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		switch {
		case s.galera != nil:
			s.mu.Lock()
			n := s.crashed
			s.mu.Unlock()
			if n != nil {
				if err = n.Start(sctx); err == nil {
					s.mu.Lock()
					s.crashed = nil
					s.mu.Unlock()
				}
			}
		case s.my != nil:
			err = s.my.Start(sctx)
		case s.pg != nil:
			err = s.pg.Start(sctx)
		}
		cancel()
		if err == nil {
			return nil
		}
	}
	return fmt.Errorf("restart after crash: %w", err)
}

// ensureUp starts the server if a failed restart left it down.
func (s *servers) ensureUp(ctx context.Context) error {
	if s == nil {
		return nil
	}
	switch {
	case s.galera != nil:
		s.mu.Lock()
		down := s.crashed != nil
		s.mu.Unlock()
		if down {
			return s.restart(ctx)
		}
	case s.my != nil && !s.my.Running():
		return s.restart(ctx)
	case s.pg != nil && !s.pg.Running():
		return s.restart(ctx)
	}
	return nil
}

// crash SIGKILLs the database server and starts it again (crash
// recovery), after a moment down.
func (r *run) dbcrash(ctx context.Context, rng *rand.Rand) error {
	s := r.srv
	from := time.Now()
	var err error
	down := 300 * time.Millisecond
	switch {
	case s.galera != nil:
		// Node 2 or 3: node 1 is the coordinator's, which judges the run.
		n := s.galera.Nodes()[1+rng.IntN(2)]
		s.mu.Lock()
		s.crashed = n
		s.mu.Unlock()
		if err = n.Kill(); err == nil {
			sleepCtx(ctx, down)
			err = s.restart(ctx)
		}
	case s.my != nil:
		if err = s.my.Kill(); err == nil {
			sleepCtx(ctx, down)
			err = s.restart(ctx)
		}
	case s.pg != nil:
		if err = s.pg.Kill(); err == nil {
			sleepCtx(ctx, down)
			err = s.restart(ctx)
		}
	}
	s.mu.Lock()
	s.down = append(s.down, window{from, time.Now()})
	s.mu.Unlock()
	r.trouble(-1)
	if err != nil {
		return err
	}
	r.countFault(faultDBCrash)
	what := "database"
	if s.galera != nil {
		what = "a Galera node"
	}
	r.cfg.Logf("torture: %s crashed and restarted in %v", what, time.Since(from).Round(time.Millisecond))
	return nil
}

// failover SIGKILLs the primary and promotes the standby; the Stores find
// it through their multi-host DSN (the dead node refuses, the promoted one
// accepts writes). The old primary is then rebuilt from the new one as its
// synchronous standby, on the port the DSN names, so the next failover
// goes back to it. Commits wait for that standby meanwhile: the whole
// window counts as the database being down.
func (r *run) failover(ctx context.Context) error {
	s := r.srv
	ctx = context.WithoutCancel(ctx)
	from := time.Now()
	err := s.pg.Kill()
	if err == nil {
		err = s.standby.Promote(ctx)
	}
	if err == nil {
		s.mu.Lock()
		s.pg, s.standby = s.standby, s.pg
		s.mu.Unlock()
		err = s.standby.Rebuild(ctx, s.pg)
	}
	if err == nil {
		err = s.pg.SetSynchronousStandby(ctx, true)
	}
	w := window{from, time.Now()}
	s.mu.Lock()
	s.down = append(s.down, w)
	if err == nil {
		s.failovers = append(s.failovers, w)
	}
	s.mu.Unlock()
	r.trouble(-1)
	if err != nil {
		return err
	}
	r.countFault(faultFailover)
	r.cfg.Logf("torture: failed over to %s in %v", s.pg.Addr(), time.Since(from).Round(time.Millisecond))
	return nil
}
