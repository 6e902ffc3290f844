package torture

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/gomogile/gomogile/internal/dbinstance"
)

// Private servers: the program starts its own database server for a run
// (Config.Private), from the installed binaries, in a temporary directory
// on its own port, and crashes it at will.
const (
	PrivatePostgres  = "postgres"           // a private PostgreSQL; dbcrash = SIGKILL and restart
	PrivateMySQL     = "mysql"              // a private MariaDB; dbcrash = SIGKILL and restart
	PrivatePgBouncer = "postgres-pgbouncer" // a private PostgreSQL behind a private PgBouncer in transaction mode
	PrivateFailover  = "postgres-failover"  // a private PostgreSQL primary with a synchronous streaming standby, reached through a multi-host DSN
)

// servers is a run's private servers.
type servers struct {
	mode    string
	pg      *dbinstance.Postgres // the primary
	standby *dbinstance.Postgres // failover mode: the standby, nil once promoted and not yet replaced
	my      *dbinstance.MariaDB
	bouncer *dbinstance.PgBouncer
	nodes   []string                       // failover mode: the nodes' addresses, in the DSN's order
	old     []interface{ Cleanup() error } // killed primaries, cleaned up at the end

	mu   sync.Mutex
	down []window // when the database was crashed or failing over
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
	case PrivatePostgres, PrivatePgBouncer:
		pg, err := dbinstance.StartPostgres(ctx, dbinstance.PGOptions{Logf: logf})
		if err != nil {
			return fmt.Errorf("torture: private postgres: %w", err)
		}
		s.pg = pg
		r.cfg.DSN = pg.DSN("test")
		if mode == PrivatePgBouncer {
			b, err := dbinstance.StartPgBouncer(ctx, pg.Addr(), dbinstance.BouncerOptions{PoolMode: "transaction", Logf: logf})
			if err != nil {
				return fmt.Errorf("torture: private pgbouncer: %w", err)
			}
			s.bouncer = b
			// store/postgres's # Poolers: no named statements, no LISTEN.
			r.workerBase = withParams(b.DSN("test"), "default_query_exec_mode", "simple_protocol", "lock_notify", "false")
		}
	case PrivateFailover:
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
	default:
		return fmt.Errorf("torture: unknown private server %q (want %s, %s, %s or %s)", mode, PrivatePostgres, PrivateMySQL, PrivatePgBouncer, PrivateFailover)
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
	if s.bouncer != nil {
		errs = append(errs, s.bouncer.Cleanup())
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
	for _, o := range s.old {
		errs = append(errs, o.Cleanup())
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "torture: clean up private servers:", err)
	}
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

// failedOverAt reports when the run's failover (if any) ended.
func (s *servers) failedOverAt() (time.Time, bool) {
	if s == nil || s.mode != PrivateFailover {
		return time.Time{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.down) == 0 || s.standby != nil {
		return time.Time{}, false
	}
	return s.down[len(s.down)-1].to, true
}

// kinds lists the faults the private servers can make.
func (s *servers) kinds() []string {
	if s == nil {
		return nil
	}
	switch s.mode {
	case PrivateFailover:
		return []string{faultFailover}
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

func (s *servers) wasDown(from, to time.Time) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.down {
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
	case s.my != nil && !s.my.Running():
		return s.restart(ctx)
	case s.pg != nil && !s.pg.Running():
		return s.restart(ctx)
	}
	return nil
}

// crash SIGKILLs the database server and starts it again (crash
// recovery), after a moment down.
func (r *run) dbcrash(ctx context.Context) error {
	s := r.srv
	from := time.Now()
	var err error
	down := 300 * time.Millisecond
	switch {
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
	r.cfg.Logf("torture: database crashed and restarted in %v", time.Since(from).Round(time.Millisecond))
	return nil
}

// failover SIGKILLs the primary and promotes the standby; the Stores find
// it through their multi-host DSN (the dead node refuses, the promoted one
// accepts writes). A run fails over once: the new primary gets a
// synchronous standby so its commits stay durable, but the run does not
// promote that one.
func (r *run) failover(ctx context.Context) error {
	s := r.srv
	if s.standby == nil {
		return nil
	}
	from := time.Now()
	if err := s.pg.Kill(); err != nil {
		return err
	}
	if err := s.standby.Promote(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	s.mu.Lock()
	s.old = append(s.old, s.pg)
	s.pg, s.standby = s.standby, nil
	s.mu.Unlock()
	// Give the new primary a standby of its own, synchronous in its turn
	// (it has a port the DSN does not name: it keeps commits durable, and
	// is not promoted in its turn).
	sb, err := s.pg.StartStandby(context.WithoutCancel(ctx))
	if err == nil {
		s.old = append(s.old, sb)
		err = s.pg.SetSynchronousStandby(context.WithoutCancel(ctx), true)
	}
	s.mu.Lock()
	s.down = append(s.down, window{from, time.Now()})
	s.mu.Unlock()
	r.trouble(-1)
	if err != nil {
		return fmt.Errorf("new standby: %w", err)
	}
	r.countFault(faultFailover)
	r.cfg.Logf("torture: failed over to %s in %v", s.pg.Addr(), time.Since(from).Round(time.Millisecond))
	return nil
}
