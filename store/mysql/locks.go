package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// The GET_LOCK lock backend, by file:
//
//   - locks.go: the timing budget, the backend's life (Start, Close) and
//     Acquire, step by step.
//   - locksession.go: the pinned sessions and their free list.
//   - lockhandoff.go: holderTable, and the grace a grant waits out after a
//     holding that ended underneath its holder.
//   - lockfence.go: the backend's own fencing tokens (stripes, epochs).
//   - lockheld.go: a held lock, the watcher that sees its loss, Release.
//   - lockfaults.go: KILL clean-up of sessions that may hold a lock, and
//     the fault hooks (sqlstore.LockFaults).
//   - lockname.go: gomogile lock names as GET_LOCK names.
//   - lockpeer*.go: watching a session's socket for the server's close.

// Lock tuning. watchEvery is the watcher's ping period, which bounds how
// late Lost fires where the socket cannot be watched; pingTimeout is how
// long a ping may go unanswered before the session is given up and closed,
// so a lock reported lost is always on its way to being freed: the watcher
// gives up when no answer came within watchEvery + pingTimeout of sending
// the last answered statement, and handoffGrace is built on that. It must
// stay below lockSessionIdle: the server frees a silent session's lock
// (for another grant) only after lockSessionIdle of silence, and a live
// holder's pings keep that from happening.
const (
	watchEvery     = 200 * time.Millisecond
	pingTimeout    = time.Second
	tailPoll       = 20 * time.Millisecond
	releaseTimeout = 5 * time.Second
	killTimeout    = 2 * time.Second
	killWait       = 250 * time.Millisecond // a KILL round trip on a healthy, busy server
	maxIdle        = 4
	idleFor        = time.Second // below lockSessionIdle, so the server rarely closes a free session first

	// lockSessionIdle is the lock sessions' wait_timeout (whole seconds):
	// how long the server keeps the lock of a holder that fell silent
	// without closing its connection — its host vanished, it died behind
	// a partition (its FIN held), it is paused. Ten times the ping period,
	// so a live holder's session never reaches it, and short, because it
	// is what such a dead holder's lock costs everyone else.
	lockSessionIdle = 2 * time.Second

	// deadOwnerBound is what Capabilities report: the time, after a holder
	// dies, until its lock is granted again. The server frees the lock the
	// moment it sees the session end, or lockSessionIdle after the last
	// ping (at most watchEvery before the death) when the death cannot
	// reach it, and the next grant then waits out handoffGrace: 3.7s, plus
	// margin for a loaded host.
	deadOwnerBound = 4500 * time.Millisecond

	// handoffGrace is how long a grant waits after a holding that ended
	// without a clean release (see holderTable): a holder's watcher fires
	// Lost at most watchEvery + pingTimeout after it last sent a statement
	// the server answered, which was before its session ended, which was
	// before this grant; the rest is margin for timers and clock rates.
	handoffGrace = watchEvery + pingTimeout + 300*time.Millisecond
)

// lockBackend implements store.LockService (sqlstore.Config.Locks) with GET_LOCK.
//
// Each held lock pins its own session from a *sql.DB used for nothing else
// and configured to keep no idle connections of its own: a connection that
// may hold a lock is never in any pool, so no other code can run on it
// (which would release or double-grant) and returning it cannot leak the
// lock. Sessions known to hold nothing (after RELEASE_LOCK returned 1, or
// GET_LOCK returned 0) are kept on a short free list to save a handshake.
type lockBackend struct {
	db       *sql.DB // the lock pool
	dialer   *dialer // the lock pool's, to find a session's socket
	admin    *sql.DB // the Store's pool, for KILL of abandoned sessions
	database string  // canonical database name, hashed into lock names

	// pingTimeout is the watchers' (the constant, but for tests that must
	// not wait 1s for a stalled ping).
	pingTimeout time.Duration
	// ignoreCluster skips every Galera check (galera.go), for the test
	// that shows what the checks prevent.
	ignoreCluster bool
	clusterWatch  sync.Once     // starts watchCluster
	refusedCh     chan struct{} // closed when refused is set

	closing context.Context // done once Close starts: ends waiting Acquires
	stop    context.CancelFunc
	wg      sync.WaitGroup // watchers
	calls   sync.WaitGroup // Acquires in progress

	mu     sync.Mutex
	closed bool
	held   map[*lock]struct{}
	free   []*session
	// refused is set (refuseLocks) once the server is seen in a Galera
	// cluster of more than one node: every Lock fails with it.
	refused error
}

var _ store.LockService = (*lockBackend)(nil)

// LockStats implements the optional method that sqlstore.Store.LockStats
// forwards: each held lock pins one session.
func (b *lockBackend) LockStats() store.LockStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return store.LockStats{Pinned: int64(len(b.held))}
}

// newLockBackend is the lock backend of a Store whose pool is admin, its
// sessions made as cfg (lockConfig) says, through a dialer that tracks
// their sockets (lockpeer.go).
func newLockBackend(cfg *gomysql.Config, admin *sql.DB, database string) (*lockBackend, error) {
	d := newDialer()
	cfg = cfg.Clone()
	cfg.DialFunc = d.dial
	lc, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrBadDSN, err)
	}
	lockDB := sql.OpenDB(lc)
	lockDB.SetMaxIdleConns(0)
	ctx, cancel := context.WithCancel(context.Background())
	return &lockBackend{
		db:          lockDB,
		dialer:      d,
		admin:       admin,
		database:    database,
		pingTimeout: pingTimeout,
		closing:     ctx,
		stop:        cancel,
		held:        make(map[*lock]struct{}),
		refusedCh:   make(chan struct{}),
	}, nil
}

// Start, for sqlstore.LockStarter, refuses a server in a Galera cluster
// of more than one node (checkCluster), then creates the fencing tables
// (startFencing) and holderTable (startHolders), in that order.
func (b *lockBackend) Start(ctx context.Context) error {
	if err := b.checkCluster(ctx); err != nil {
		return err
	}
	if err := b.startFencing(ctx); err != nil {
		return err
	}
	return b.startHolders(ctx)
}

var _ sqlstore.LockStarter = (*lockBackend)(nil)

// Close releases every held lock, closes the lock pool and waits for the
// watchers. Locks whose session is gone need no release.
func (b *lockBackend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.stop()
	held := make([]*lock, 0, len(b.held))
	for l := range b.held {
		held = append(held, l)
	}
	free := b.free
	b.free = nil
	b.mu.Unlock()

	var errs []error
	for _, l := range held {
		if err := l.Release(context.Background()); err != nil && !errors.Is(err, store.ErrLockLost) {
			errs = append(errs, fmt.Errorf("release lock %q: %w", l.name, err))
		}
	}
	for _, s := range free {
		s.close(false)
	}
	// Acquires still running were cancelled by stop; wait for them to
	// give back what they got (and KILL what they abandoned) while the
	// pools are open.
	b.calls.Wait()
	b.wg.Wait()
	if err := b.db.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Acquire waits in GET_LOCK on a session of its own, so a second Acquire of
// a name this Store holds waits like any other session: the server's
// per-session nesting count never comes into play.
//
// GET_LOCK's timeout is whole seconds on MySQL (MariaDB takes fractions), so
// the server waits only the whole seconds left and the rest is polled with
// GET_LOCK(name, 0) every few milliseconds: the call never fails before
// timeout and fails within one poll after it, on either server. A waiting
// session holds no lock, so MySQL's deadlock detection between user locks
// (ER_USER_LOCK_DEADLOCK) has nothing to detect.
//
// name and timeout were checked by sqlstore.Store.Lock (store.CheckLock),
// the only caller; what is MySQL's own about names, GET_LOCK's 64-character
// limit and its case rules, serverLockName's hash takes care of.
// Describe implements store.LockService.
func (b *lockBackend) Describe() string { return "database (MySQL GET_LOCK)" }

// DeadOwnerBound implements store.LockService.
func (b *lockBackend) DeadOwnerBound() time.Duration { return deadOwnerBound }

func (b *lockBackend) Acquire(ctx context.Context, name string, timeout time.Duration) (store.LockGrant, error) {
	a := &acquisition{
		b:        b,
		name:     name,
		key:      serverLockName(b.database, name),
		timeout:  timeout,
		deadline: time.Now().Add(timeout),
	}
	if err := b.enter(); err != nil {
		return nil, err
	}
	defer b.calls.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(b.closing, cancel)()

	var err error
	if a.s, a.reused, err = b.session(ctx); err != nil {
		return nil, b.acquireErr(ctx, err)
	}
	for first := true; ; first = false {
		secs := int64(max(time.Until(a.deadline), 0) / time.Second)
		// The claim goes with GET_LOCK unless this is one of the short
		// polls after a refusal, which mostly find the lock still taken
		// and would take the stripe row for nothing.
		got, look, fence, err := a.s.getLock(ctx, a.key, secs, first || secs > 0)
		if mysqlErrno(err) == erUserLockDeadlock {
			// Cannot happen while a waiting session holds nothing; should a
			// server report it anyway, it is a refusal to wait, not an
			// error: wait as for a zero answer.
			got, err, secs = false, nil, 0
		}
		switch {
		case err != nil && a.reused && ctx.Err() == nil && sessionGone(err):
			// An idle session the server closed (wait_timeout, restart)
			// holds nothing: try once more on a fresh one. Should it have
			// died after its claim's row went in, the row is nobody's.
			if err := a.renewSession(ctx); err != nil {
				return nil, err
			}
			continue
		case err != nil:
			// The driver closes the socket when ctx ends mid-query, but the
			// server may keep the session waiting, or grant it the lock at
			// that instant; KILL ends it so no lock outlives this call.
			b.discard(a.s, a.key)
			return nil, b.acquireErr(ctx, err)
		case got:
			l, again, err := a.granted(ctx, look, fence)
			if again {
				continue
			}
			if err != nil {
				return nil, err
			}
			return l, nil
		}
		a.reused = false
		if err := a.pause(ctx, secs); err != nil {
			return nil, err
		}
	}
}

// enter admits an Acquire: none after Close, nor once the server was seen
// in a Galera cluster (refuseLocks). Close waits for every call admitted
// (b.calls), which must end with b.calls.Done.
func (b *lockBackend) enter() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return store.ErrClosed
	}
	if b.refused != nil {
		return b.refused
	}
	b.calls.Add(1)
	return nil
}

// acquisition is one Acquire in progress: what it takes, by when, and the
// session it waits on, which it trades for a fresh one when that dies
// holding nothing anyone was handed (renewSession).
type acquisition struct {
	b        *lockBackend
	name     string
	key      string // serverLockName's
	timeout  time.Duration
	deadline time.Time
	s        *session
	reused   bool // s came off the free list and has had no answer yet
}

// granted finishes a grant GET_LOCK made: the claim of its holderTable row
// with its fencing token, unless getLock made it in GET_LOCK's own round
// trip, and then the handle. again says the session died while the claim
// waited out its grace and a fresh one is to wait for the lock anew.
func (a *acquisition) granted(ctx context.Context, look holderLook, fence int64) (l *lock, again bool, err error) {
	b, s := a.b, a.s
	if fence == 0 {
		fence, err = b.claim(ctx, s, a.name, a.key, a.deadline, look)
	}
	switch {
	case err == nil && ctx.Err() != nil:
		// The caller's context ended as the grant (or its claim) came
		// back. The driver closes a connection whose context ends as its
		// query returns, so the session may already be gone and the lock
		// with it: nobody may be handed this grant. Give it back
		// (releaseUnclaimed discards a session that cannot) and report
		// the context's end.
		b.releaseUnclaimed(s, a.key)
		return nil, false, b.acquireErr(ctx, ctx.Err())
	case errors.Is(err, errGraceTimeout):
		b.releaseUnclaimed(s, a.key)
		return nil, false, fmt.Errorf("%w after %v (the last holder's session ended underneath it; waiting out its grace)", store.ErrLockTimeout, a.timeout)
	case err != nil && ctx.Err() == nil && sessionGone(err) && time.Now().Before(a.deadline):
		// The session died while the grant waited out its grace (a
		// kill, a cut): the lock went with it, so wait for it anew
		// on a fresh session, as a waiting GET_LOCK would have.
		if err := a.renewSession(ctx); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	case err != nil && ctx.Err() != nil && !sessionGone(err):
		// The caller's context ended while the grant waited out its
		// grace: the session is sound and holds the lock; give it
		// back off the caller's path.
		b.releaseUnclaimed(s, a.key)
		return nil, false, b.acquireErr(ctx, err)
	case err != nil:
		// Nobody was handed this grant: its row, if claim wrote it,
		// is nobody's to wait for. The close and KILL run off the
		// caller's path, so a Lock returns by its deadline even when
		// the server cannot be reached to KILL the session.
		b.discardLater(s, a.key)
		return nil, false, b.acquireErr(ctx, err)
	}
	if l, err = b.hold(a.name, a.key, s, fence); err != nil {
		b.forgetHolderLater(a.key, s.id)
		return nil, false, err
	}
	return l, false, nil
}

// renewSession trades the session, which died holding nothing anyone was
// handed, for a fresh one. Its holderTable row, should its claim have
// written one, is nobody's.
func (a *acquisition) renewSession(ctx context.Context) error {
	a.b.discard(a.s, "")
	a.b.forgetHolderLater(a.key, a.s.id)
	s, err := a.b.newSession(ctx)
	if err != nil {
		return a.b.acquireErr(ctx, err)
	}
	a.s, a.reused = s, false
	return nil
}

// pause follows a GET_LOCK that did not grant: at the deadline the call
// fails, giving its session (which holds nothing) back to the free list;
// before it, where GET_LOCK waited no whole second on the server, the
// next poll comes tailPoll later.
func (a *acquisition) pause(ctx context.Context, secs int64) error {
	if !time.Now().Before(a.deadline) {
		a.b.release(a.s)
		return fmt.Errorf("%w after %v", store.ErrLockTimeout, a.timeout)
	}
	if secs == 0 {
		t := time.NewTimer(min(tailPoll, time.Until(a.deadline)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			a.b.release(a.s)
			return a.b.acquireErr(ctx, ctx.Err())
		}
	}
	return nil
}

// acquireErr says what ended a failed Acquire, preferring Close, then the
// caller's context, then the database. The shared layer adds the verb and
// the lock's name, so no text here repeats them.
//
// Every database failure is store.ErrUnavailable, with the driver's error
// beside it: on this path the statements are CONNECTION_ID(), GET_LOCK and
// the holder row's, which fail only when the session or the server does
// (killed, cut, shut down, out of connections or memory), and the fencing
// bump, which may also time out or deadlock behind a fenced write; never
// because of the caller's arguments, and in every such case the lock was
// not obtained and the call may be made again.
func (b *lockBackend) acquireErr(ctx context.Context, err error) error {
	if b.closing.Err() != nil {
		return store.ErrClosed
	}
	if errors.Is(err, ErrNodeLocalLocks) {
		return err
	}
	if cerr := context.Cause(ctx); cerr != nil {
		return cerr
	}
	return fmt.Errorf("%w: mysql: GET_LOCK: %w", store.ErrUnavailable, err)
}

// hold registers a granted lock and starts its watcher; if Close won the
// race it gives the lock back at once.
func (b *lockBackend) hold(name, key string, s *session, fence int64) (*lock, error) {
	l := &lock{
		b:     b,
		name:  name,
		key:   key,
		s:     s,
		fence: fence,
		lost:  make(chan struct{}),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	b.mu.Lock()
	if b.closed || b.refused != nil {
		err := store.ErrClosed
		if !b.closed {
			// The cluster grew while this grant was made: a lock granted
			// on one node may be held on another too.
			err = b.refused
		}
		b.mu.Unlock()
		b.discard(s, key)
		return nil, err
	}
	b.held[l] = struct{}{}
	b.wg.Add(1)
	b.mu.Unlock()
	go l.watch()
	return l, nil
}

func (b *lockBackend) forget(l *lock) {
	b.mu.Lock()
	delete(b.held, l)
	b.mu.Unlock()
}

// lockConfig is the driver settings of the lock sessions: the Store pool's
// (main), but for these.
func lockConfig(main *gomysql.Config) *gomysql.Config {
	lock := main.Clone()
	// A lock session sits in GET_LOCK for as long as the caller's timeout:
	// a read timeout would break it, and the watcher bounds silence anyway.
	lock.ReadTimeout = 0
	// Killed lock sessions are expected and reported through Lost and
	// errors; the driver's own log lines about them would only be noise.
	lock.Logger = &gomysql.NopLogger{}
	// The watcher pings a held lock's session every watchEvery, so only a
	// session whose client is gone (a vanished host) idles this long: the
	// server then ends it and frees its lock instead of waiting for the
	// default eight hours or TCP keepalive.
	lock.Params = map[string]string{"wait_timeout": strconv.Itoa(int(lockSessionIdle / time.Second))}
	// Nothing but the lock backend's own SQL runs on a lock session, and
	// several statements per query save round trips: GET_LOCK with the
	// holder-row read after it, the holder row with the fencing bump, the
	// row's DELETE with RELEASE_LOCK.
	lock.MultiStatements = true
	return lock
}
