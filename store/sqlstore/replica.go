package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Replicas is how a backend opens and measures read replicas
// (Config.Replicas; see "Read replicas" in package store). The lag of a
// replica is measured only by replication position: the Store samples the
// primary's position now and then, and a replica that has applied a
// sample taken at t is at most now−t behind. A replica's own report of
// its delay is not believed (PostgreSQL's replay_lag said 3 ms while
// replay was paused).
type Replicas struct {
	// Driver is the backend name the replicas' DSNs must name (2.73's
	// slave settings hold DBI DSNs: "DBI:mysql:…", "DBI:Pg:…").
	Driver string
	// Open opens a pool on the replica d names, its sessions read-only,
	// and pings it. It must create and change nothing there.
	Open func(ctx context.Context, d *store.DSN) (*sql.DB, error)
	// Position is a query run on the primary that returns its replication
	// position as text: every transaction committed before the query ran
	// is at or before it. NULL or "" (no binary log, say) means none can
	// be known, and no replica is used.
	Position string
	// Reached is a query run on a replica with one placeholder, a
	// Position result, returning true (or 1) when the replica has applied
	// everything up to that position, without waiting for it.
	Reached string
	// DSNs are the replicas the DSN names (store.DSN.Replicas) and MaxLag
	// the bound of their lag (store.DSN.ReplicaMaxLag;
	// store.DefaultReplicaMaxLag when 0).
	DSNs   []*store.DSN
	MaxLag time.Duration
}

const (
	// settingsEvery is how often the Store looks at slave_version for a
	// changed slave list, while reads that may use a replica arrive (2.73
	// reads its cached server settings).
	settingsEvery = 5 * time.Second
	// maxDown is the longest a failed replica is left alone before it is
	// tried again (2.73's slave_dead_retry_timeout backs off from 15 s);
	// it starts at a second and doubles.
	maxDown = 15 * time.Second
	// keptSamples is how many of the primary's positions are kept: a
	// replica that trails by a little under steady writes has applied an
	// older sample though not the newest.
	keptSamples = 4
)

// replicaSet is a Store's read replicas: those its DSN names, then those of
// the slave settings.
type replicaSet struct {
	cfg     Replicas
	primary *sql.DB
	d       Dialect
	bg      context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup

	mu         sync.Mutex
	list       []*replica
	samples    []posSample // the primary's positions, oldest first
	settingsAt time.Time   // last look at slave_version
	settingsOn bool        // a look is under way
	slaveVer   string      // slave_version the settings replicas are from
	closed     bool
}

type posSample struct {
	at  time.Time // taken no earlier than this
	pos string
}

type replica struct {
	name     string
	dsn      *store.DSN
	settings bool // from the slave settings, not the DSN
	dropped  bool // no longer in the list (guarded by replicaSet.mu)

	// Guarded by replicaSet.mu.
	db        *sql.DB
	freshAt   time.Time // the newest sample it is known to have applied
	probedAt  time.Time
	probing   bool
	downUntil time.Time
	failures  int
	err       string

	reads, fallbacks atomic.Int64
}

func newReplicaSet(cfg Replicas, primary *sql.DB, d Dialect) *replicaSet {
	if cfg.MaxLag <= 0 {
		cfg.MaxLag = store.DefaultReplicaMaxLag
	}
	bg, stop := context.WithCancel(context.Background())
	rs := &replicaSet{cfg: cfg, primary: primary, d: d, bg: bg, stop: stop}
	for _, dsn := range cfg.DSNs {
		rs.list = append(rs.list, &replica{name: dsn.Redacted(), dsn: dsn})
	}
	return rs
}

// close stops the probes and closes the replicas' pools.
func (rs *replicaSet) close() error {
	rs.mu.Lock()
	rs.closed = true
	rs.mu.Unlock()
	rs.stop()
	rs.wg.Wait()
	var errs []error
	for _, r := range rs.list {
		if r.db != nil {
			errs = append(errs, r.db.Close())
		}
	}
	return errors.Join(errs...)
}

// usable reports whether reads may go to r now; rs.mu held.
func (rs *replicaSet) usable(r *replica, now time.Time) bool {
	return r.db != nil && !now.Before(r.downUntil) && !r.freshAt.IsZero() && now.Sub(r.freshAt) <= rs.cfg.MaxLag
}

// pick returns a usable replica, or nil, and sets off what keeps the set
// current: a look at the slave settings, a probe of each replica due one.
func (rs *replicaSet) pick(now time.Time) *replica {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return nil
	}
	if !rs.settingsOn && now.Sub(rs.settingsAt) >= settingsEvery {
		rs.settingsOn = true
		rs.goBG(rs.readSettings)
	}
	var ok []*replica
	for _, r := range rs.list {
		if rs.usable(r, now) {
			ok = append(ok, r)
		}
		// Probe often enough that a replica keeping up stays usable:
		// four measurements within the bound.
		if !r.probing && !now.Before(r.downUntil) && now.Sub(r.probedAt) >= rs.cfg.MaxLag/4 {
			r.probing = true
			rs.goBG(func() { rs.probe(r) })
		}
	}
	if len(ok) == 0 {
		return nil
	}
	return ok[rand.IntN(len(ok))]
}

func (rs *replicaSet) goBG(f func()) {
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		f()
	}()
}

// failed marks r down after err, for longer each time in a row.
func (rs *replicaSet) failed(r *replica, err error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r.failures++
	down := time.Second << min(r.failures-1, 4)
	r.downUntil = time.Now().Add(min(down, maxDown))
	r.freshAt = time.Time{}
	r.err = err.Error()
}

// probe opens r when it is not yet open, then measures how far behind the
// primary it is.
func (rs *replicaSet) probe(r *replica) {
	ctx, cancel := context.WithTimeout(rs.bg, max(rs.cfg.MaxLag, 2*time.Second))
	defer cancel()
	err := rs.measure(ctx, r)
	rs.mu.Lock()
	r.probing = false
	r.probedAt = time.Now()
	rs.mu.Unlock()
	if err != nil && rs.bg.Err() == nil {
		rs.failed(r, err)
	}
}

func (rs *replicaSet) measure(ctx context.Context, r *replica) error {
	rs.mu.Lock()
	db := r.db
	rs.mu.Unlock()
	if db == nil {
		var err error
		if db, err = rs.open(ctx, r); err != nil {
			return err
		}
	}
	at := time.Now()
	var pos sql.NullString
	if err := rs.primary.QueryRowContext(ctx, rs.d.Rebind(rs.cfg.Position)).Scan(&pos); err != nil {
		return fmt.Errorf("read the primary's replication position: %w", err)
	}
	if !pos.Valid || pos.String == "" {
		return errors.New("the primary reports no replication position (no binary log?): a replica's lag cannot be bounded")
	}
	rs.mu.Lock()
	rs.samples = append(rs.samples, posSample{at, pos.String})
	if len(rs.samples) > keptSamples {
		rs.samples = rs.samples[len(rs.samples)-keptSamples:]
	}
	samples := append([]posSample(nil), rs.samples...)
	fresh := r.freshAt
	rs.mu.Unlock()
	// Newest first: the first one applied bounds the lag.
	for i := len(samples) - 1; i >= 0 && samples[i].at.After(fresh); i-- {
		var reached sql.NullBool
		if err := db.QueryRowContext(ctx, rs.d.Rebind(rs.cfg.Reached), samples[i].pos).Scan(&reached); err != nil {
			return fmt.Errorf("read the replica's position: %w", err)
		}
		if reached.Valid && reached.Bool {
			rs.mu.Lock()
			if samples[i].at.After(r.freshAt) {
				r.freshAt = samples[i].at
			}
			r.failures, r.err = 0, ""
			rs.mu.Unlock()
			return nil
		}
	}
	return nil // behind every kept sample: it lags, it is not down
}

// open connects to r and checks its schema: a replica of another
// installation, or of an older one, answers no read.
func (rs *replicaSet) open(ctx context.Context, r *replica) (*sql.DB, error) {
	db, err := rs.cfg.Open(ctx, r.dsn)
	if err != nil {
		return nil, err
	}
	var v sql.NullString
	err = db.QueryRowContext(ctx, rs.d.Rebind("SELECT value FROM server_settings WHERE field = ?"), "schema_version").Scan(&v)
	if err == nil && strings.TrimSpace(v.String) != strconv.Itoa(store.SchemaVersion) {
		err = fmt.Errorf("%w: schema_version %q, want %d", store.ErrSchemaMismatch, v.String, store.SchemaVersion)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("check the replica's schema: %w", err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed || r.dropped || r.db != nil {
		db.Close()
		if rs.closed || r.dropped {
			return nil, store.ErrClosed
		}
		return r.db, nil
	}
	r.db = db
	return db, nil
}

// readSettings follows 2.73's slave list: slave_keys names keys, each
// slave_<key> holds "DSN|user|pass", and slave_version changes whenever
// one of them does.
func (rs *replicaSet) readSettings() {
	ctx, cancel := context.WithTimeout(rs.bg, 5*time.Second)
	defer cancel()
	defer func() {
		rs.mu.Lock()
		rs.settingsOn, rs.settingsAt = false, time.Now()
		rs.mu.Unlock()
	}()
	get := func(key string) (string, error) {
		var v sql.NullString
		err := rs.primary.QueryRowContext(ctx, rs.d.Rebind("SELECT value FROM server_settings WHERE field = ?"), key).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil
		}
		return v.String, err
	}
	ver, err := get("slave_version")
	rs.mu.Lock()
	same := ver == rs.slaveVer
	rs.mu.Unlock()
	if err != nil || same {
		return
	}
	keys, err := get("slave_keys")
	if err != nil {
		return
	}
	var fresh []*replica
	for _, k := range strings.FieldsFunc(keys, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		v, err := get("slave_" + k)
		if err != nil {
			return
		}
		r := &replica{name: "slave_" + k, settings: true}
		if r.dsn, err = store.SlaveDSN(rs.cfg.Driver, v); err != nil {
			// Kept, never usable, so that Info shows why.
			r.err = err.Error()
			r.downUntil = time.Now().Add(24 * 365 * time.Hour)
		}
		fresh = append(fresh, r)
	}
	rs.mu.Lock()
	if rs.closed {
		rs.mu.Unlock()
		return
	}
	var kept []*replica
	var drop []*sql.DB
	for _, r := range rs.list {
		if !r.settings {
			kept = append(kept, r)
			continue
		}
		// Gone from the list: a read or probe still using it fails and
		// falls back, as for a replica that went down.
		r.dropped = true
		if r.db != nil {
			drop = append(drop, r.db)
			r.db = nil
		}
	}
	rs.list = append(kept, fresh...)
	rs.slaveVer = ver
	rs.mu.Unlock()
	for _, db := range drop {
		db.Close() // waits for the queries under way: not under rs.mu
	}
}

// status is Info.Replicas.
func (rs *replicaSet) status() []store.ReplicaStatus {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	now := time.Now()
	var out []store.ReplicaStatus
	for _, r := range rs.list {
		st := store.ReplicaStatus{Name: r.name, Usable: rs.usable(r, now), Reads: r.reads.Load(), Fallbacks: r.fallbacks.Load(), Err: r.err}
		if !r.freshAt.IsZero() {
			st.Lag = r.probedAt.Sub(r.freshAt)
		}
		out = append(out, st)
	}
	return out
}

// readAny runs the read fn on a replica when ctx allows it (AllowReplica)
// and one is usable, else, and whenever the replica fails or misses
// (fn's sql.ErrNoRows, or missed() after it), on the primary, as s.read
// does. fn must reset what it fills on every call.
func (s *Store) readAny(ctx context.Context, fn func(ctx context.Context, q querier) error, missed func() bool) error {
	if s.replicas != nil && store.ReplicaAllowed(ctx) {
		if r := s.replicas.pick(time.Now()); r != nil {
			// Half of what is left, so that the primary gets the rest
			// when the replica hangs.
			rctx, cancel := ctx, context.CancelFunc(func() {})
			if dl, ok := ctx.Deadline(); ok {
				rctx, cancel = context.WithTimeout(ctx, time.Until(dl)/2)
			}
			s.replicas.mu.Lock()
			db := r.db
			s.replicas.mu.Unlock()
			err := fn(rctx, db)
			cancel()
			switch {
			case err == nil && (missed == nil || !missed()):
				r.reads.Add(1)
				return nil
			case err != nil && !errors.Is(err, sql.ErrNoRows) && ctx.Err() == nil:
				s.replicas.failed(r, err)
			}
			r.fallbacks.Add(1)
		}
	}
	return s.read(ctx, func() error { return fn(ctx, s.db) })
}
