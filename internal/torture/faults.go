package torture

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gomogile/gomogile/store/sqlstore"
)

// inject runs the fault schedule until ctx ends: every KillEvery it kills
// database sessions, every CrashEvery it closes a tracker that holds locks
// and opens a new one in its place.
func (r *run) inject(ctx context.Context) {
	cfg := r.cfg
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	var killC, crashC <-chan time.Time
	if cfg.KillEvery > 0 {
		t := time.NewTicker(cfg.KillEvery)
		defer t.Stop()
		killC = t.C
	}
	if cfg.CrashEvery > 0 {
		t := time.NewTicker(cfg.CrashEvery)
		defer t.Stop()
		crashC = t.C
	}
	var killer *sessionKiller
	defer func() {
		if killer != nil {
			killer.close()
		}
	}()
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case <-killC:
			if killer == nil {
				killer, err = r.newKiller(ctx)
			}
			if err == nil {
				err = r.kill(ctx, rng, killer)
			}
			if err != nil && killer != nil {
				// Our own connection may be what broke: take a new one next time.
				killer.close()
				killer = nil
			}
		case <-crashC:
			err = r.crash(ctx, rng, true)
		}
		if err != nil && ctx.Err() == nil {
			r.faultErr(err)
		}
	}
}

func (r *run) faultErr(err error) {
	r.cfg.Logf("torture: fault: %v", err)
	r.faultsMu.Lock()
	defer r.faultsMu.Unlock()
	if len(r.rep.Faults.Errors) < 5 {
		r.rep.Faults.Errors = append(r.rep.Faults.Errors, err.Error())
	}
}

// crash closes a tracker's Store under its workers, without warning them,
// and opens a new one in its slot. With holders it prefers a tracker that
// holds locks (the lock holder dies); otherwise any tracker.
func (r *run) crash(ctx context.Context, rng *rand.Rand, holders bool) error {
	victim := r.slots[rng.IntN(len(r.slots))].current()
	// Locks are held for milliseconds: look for a holder for a while.
	for deadline := time.Now().Add(500 * time.Millisecond); holders && time.Now().Before(deadline); {
		held := r.locks.holding()
		var cands []*tracker
		for _, s := range r.slots {
			if tr := s.current(); held[tr] > 0 {
				cands = append(cands, tr)
			}
		}
		if len(cands) > 0 {
			victim = cands[rng.IntN(len(cands))]
			break
		}
		if !sleepCtx(ctx, time.Millisecond) {
			break
		}
	}
	n := r.locks.crash(victim)
	cerr := victim.st.Close()
	r.faultsMu.Lock()
	if holders {
		r.rep.Faults.Crashes++
		r.rep.Faults.HoldsCrashed += n
	} else {
		r.rep.Faults.Closes++
	}
	r.faultsMu.Unlock()
	r.cfg.Logf("torture: closed %s holding %d locks (close: %v)", victim, n, cerr)
	// A replacement may fail to open while sessions are being killed;
	// retry until it opens or the faults stop.
	backoff := 20 * time.Millisecond
	for {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		st, err := r.open(octx)
		cancel()
		if err == nil {
			tr := victim.slot.replace(st)
			r.faultsMu.Lock()
			r.rep.Faults.Reopens++
			r.faultsMu.Unlock()
			r.cfg.Logf("torture: %s replaces %s", tr, victim)
			return nil
		}
		if ctx.Err() != nil {
			// Faults are over; the slot still needs a Store for the drain.
			st, err2 := r.open(context.WithoutCancel(ctx))
			if err2 != nil {
				return errors.Join(err, err2)
			}
			victim.slot.replace(st)
			return nil
		}
		r.faultErr(err)
		if !sleepCtx(ctx, backoff) {
			continue
		}
		backoff = min(2*backoff, time.Second)
	}
}

// sessionKiller holds the checker's own connection, from which it kills
// every other session of the test database: a connection of its own so it
// can name itself and survive.
type sessionKiller struct {
	conn *sql.Conn
	list string // query: ids of the database's other sessions
	kill func(ctx context.Context, id int64) error
}

func (k *sessionKiller) close() { _ = k.conn.Close() }

func (r *run) newKiller(ctx context.Context) (*sessionKiller, error) {
	ss, ok := r.admin.(*sqlstore.Store)
	if !ok {
		return nil, nil
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
		// SQLite: no sessions; a kill closes a random tracker instead.
		return nil, nil
	}
	conn, err := ss.DB().Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("killer connection: %w", err)
	}
	k.conn = conn
	return &k, nil
}

// kill ends database sessions of the test database: all of them, or a
// random half. Without sessions to kill (SQLite, or a Store that is not
// SQL) it closes a random tracker without warning instead.
func (r *run) kill(ctx context.Context, rng *rand.Rand, k *sessionKiller) error {
	if k == nil {
		return r.crash(ctx, rng, false)
	}
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
	r.faultsMu.Lock()
	r.rep.Faults.KillRounds++
	r.rep.Faults.SessionsKilled += killed
	r.faultsMu.Unlock()
	r.cfg.Logf("torture: killed %d of %d sessions", killed, len(ids))
	return nil
}
