package leaselock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// Timings of the machinery.
const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = 100 * time.Millisecond

	// A waiter that no release elsewhere can wake (no Notifier, or
	// lock_notify=false behind a transaction pooler) learns of one only by
	// polling. Locks are mostly held briefly, so for the first pollShortFor
	// of its wait it polls from pollMin doubling to pollShortMax, which
	// bounds a handoff after a short holding by a few milliseconds; after
	// that it backs off to maxBackoff as a listening waiter's fallback
	// does.
	pollMin      = time.Millisecond
	pollShortMax = 4 * time.Millisecond
	pollShortFor = 200 * time.Millisecond

	// closeTimeout bounds the release of a Store's locks in Close, which has
	// no context; a release that cannot finish is left to the reaper.
	closeTimeout = 5 * time.Second
)

// errSessionClosed is why locks were lost when a session ended without an
// error of its own.
var errSessionClosed = errors.New("leaselock: lock session closed")

// Locks is the sqlstore.LockBackend of one Store: one owner incarnation at
// a time, renewed by a background goroutine on its own session, plus an
// optional listener session. It also implements sqlstore.LockStarter and
// sqlstore.LockFaults.
type Locks struct {
	db       DB
	cfg      Config
	hostname string
	pid      int

	ctx    context.Context // ends at Close or crash
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{} // asks the renewer to renew now

	mu      sync.Mutex
	cur     *incarnation  // nil between a loss and the next registration
	lastID  int64         // the newest incarnation, current or lost
	ready   chan struct{} // closed when cur is set
	closed  bool
	crashed bool
	regErr  error // the last failed registration, nil once one succeeds

	wmu     sync.Mutex
	waiters map[string]map[chan struct{}]struct{}

	notifyWakeups atomic.Int64 // waits ended by a notification or a local release (Status)
	reaped        atomic.Int64 // locks of expired owners freed (LockStats)
}

var (
	_ sqlstore.LockBackend = (*Locks)(nil)
	_ sqlstore.LockStarter = (*Locks)(nil)
	_ sqlstore.LockFaults  = (*Locks)(nil)
)

// incarnation is one registration of the owner: a sentinel row and the
// locks that reference it.
type incarnation struct {
	id int64
	// timer fires expire at deadline, whatever the renewer is doing
	// (blocked in a query, reconnecting, cut off without a FIN): the
	// promise that Lost comes before the lease can run out on the server
	// must not depend on the connection.
	timer *time.Timer
	// Guarded by Locks.mu.
	deadline time.Time // local, monotonic: give the locks up at this time
	locks    map[*lock]struct{}
	gone     bool
}

type lockState int

const (
	held lockState = iota
	released
	lost
)

// lock is a held lock: a row (name, owner, token).
type lock struct {
	b     *Locks
	name  string
	inc   *incarnation
	token int64 // this Acquire's own, telling its row from another's
	fence int64 // the fencing token DB.Acquire gave the grant, 0 if none
	lost  chan struct{}
	relMu sync.Mutex // one Release at a time
	// tried records a Release that failed after its DELETE may have been
	// applied, so a missing row later is ours gone, not a loss.
	tried bool      // guarded by relMu
	state lockState // guarded by b.mu
}

var _ sqlstore.FencedLock = (*lock)(nil)

func (l *lock) Name() string          { return l.name }
func (l *lock) Lost() <-chan struct{} { return l.lost }
func (l *lock) FenceToken() int64     { return l.fence }

// New returns the lock backend of one Store on db; nothing runs until
// Start (which sqlstore.New calls once the schema exists).
func New(db DB, cfg Config) *Locks {
	ctx, cancel := context.WithCancel(context.Background())
	host, _ := os.Hostname()
	return &Locks{
		db:       db,
		cfg:      cfg.WithDefaults(),
		hostname: host,
		pid:      os.Getpid(),
		ctx:      ctx,
		cancel:   cancel,
		kick:     make(chan struct{}, 1),
		ready:    make(chan struct{}),
		waiters:  map[string]map[chan struct{}]struct{}{},
	}
}

// Start registers the first incarnation (evicting an older one of the same
// identity) and starts the renewer and, with notifications, the listener.
// The lock tables must exist.
func (b *Locks) Start(ctx context.Context) error {
	conn, err := b.db.Session(ctx)
	if err != nil {
		return fmt.Errorf("%s: lock session: %w", b.cfg.Name, err)
	}
	if err := b.register(ctx, conn); err != nil {
		conn.Close()
		return err
	}
	var lconn Listener
	if _, ok := b.db.(Notifier); ok && !b.cfg.NoListen {
		if lconn, err = b.listenConn(ctx); err != nil {
			conn.Close()
			b.evictSelf()
			return err
		}
	}
	b.wg.Add(1)
	go b.renewLoop(conn)
	if lconn != nil {
		b.wg.Add(1)
		go b.listenLoop(lconn)
	}
	return nil
}

// register creates a fresh incarnation on conn, freeing at once the locks of
// this Store's previous one (after a loss) and of any expired incarnation of
// the identity (a restarted tracker's predecessor). While another
// incarnation of the identity is alive it waits: if that one renews, a
// live Store has the identity and register refuses it (store.ErrDuplicate);
// if it expires, its Store is dead, and register takes over at once.
func (b *Locks) register(ctx context.Context, conn Session) error {
	err := b.registerOnce(ctx, conn)
	b.mu.Lock()
	b.regErr = err
	b.mu.Unlock()
	return err
}

func (b *Locks) registerOnce(ctx context.Context, conn Session) error {
	var seen *time.Time // the other incarnation's expires_at when first seen
	for {
		b.mu.Lock()
		prev := b.lastID
		b.mu.Unlock()
		id := rand.Int64()
		sent := time.Now()
		reg, err := conn.Register(ctx, Owner{ID: id, Identity: b.cfg.Identity, Hostname: b.hostname, PID: b.pid}, prev, b.cfg.Lease)
		if err != nil {
			if errors.Is(err, store.ErrDuplicate) && ctx.Err() == nil {
				continue // owner_id collision: draw again
			}
			return fmt.Errorf("%s: register lock owner %q: %w", b.cfg.Name, b.cfg.Identity, err)
		}
		until := reg.LiveUntil
		if reg.Registered {
			b.install(id, sent)
			return nil
		}
		if until == nil {
			continue // it expired between the statement's two looks
		}
		if seen != nil && until.After(*seen) {
			return fmt.Errorf("%w: %s: lock owner identity %q is in use by another live Store (it renews its lease); "+
				"give every Store on this database its own identity with the DSN parameter lock_owner "+
				"(e.g. lock_owner=<host>:<port>, unique among trackers; the default, hostname:pid:n, repeats in containers with a fixed hostname)",
				store.ErrDuplicate, b.cfg.Name, b.cfg.Identity)
		}
		if seen == nil {
			seen = until
		}
		if !sleepCtx(ctx, b.cfg.Lease/20) {
			return fmt.Errorf("%s: register lock owner %q: waiting for the identity's previous owner to renew or expire: %w", b.cfg.Name, b.cfg.Identity, ctx.Err())
		}
	}
}

// install makes id, just registered, the current incarnation.
func (b *Locks) install(id int64, sent time.Time) {
	inc := &incarnation{id: id, deadline: sent.Add(b.cfg.Lease - b.cfg.margin()), locks: map[*lock]struct{}{}}
	b.mu.Lock()
	defer b.mu.Unlock()
	inc.timer = time.AfterFunc(time.Until(inc.deadline), func() { b.expire(inc) })
	b.cur = inc
	b.lastID = id
	close(b.ready)
}

// expire runs at inc's deadline: unless a renewal moved the deadline on
// meanwhile, the locks are given up now.
func (b *Locks) expire(inc *incarnation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if inc.gone || b.closed || b.crashed {
		return
	}
	if d := time.Until(inc.deadline); d > 0 {
		inc.timer.Reset(d)
		return
	}
	b.loseLocked(inc)
	b.poke() // the renewer registers a new incarnation
}

// renewLoop keeps the incarnation alive, reaps dead owners, and replaces the
// incarnation after a loss. It owns conn.
func (b *Locks) renewLoop(conn Session) {
	defer b.wg.Done()
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	every := b.cfg.renewEvery()
	nextRenew := time.Now().Add(every)
	nextReap := time.Now().Add(b.cfg.Reap)
	retry := minBackoff
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		b.mu.Lock()
		inc := b.cur
		b.mu.Unlock()

		if conn == nil || conn.Closed() || inc == nil {
			if conn != nil && conn.Closed() {
				// The renewer's session died (a reaper pass or the
				// listener found it so): as in renew, that forfeits.
				if inc != nil {
					b.loseSession(inc, nil)
				}
				conn.Close()
				conn = nil
			}
			err := b.reconnect(&conn)
			if err == nil {
				retry = minBackoff
				nextRenew = time.Now().Add(every)
				continue
			}
			if b.ctx.Err() != nil {
				return
			}
			if !sleepCtx(b.ctx, retry) {
				return
			}
			retry = min(retry*2, time.Second)
			continue
		}

		timer.Reset(max(min(time.Until(nextRenew), time.Until(nextReap)), 0))
		kicked := false
		select {
		case <-b.ctx.Done():
			return
		case <-b.kick:
			kicked = true
		case <-timer.C:
		}
		timer.Stop() // since Go 1.23 no stale tick survives Stop
		b.mu.Lock()
		gone := inc.gone
		b.mu.Unlock()
		if gone {
			continue // expired meanwhile: register anew
		}

		now := time.Now()
		if kicked || !now.Before(nextRenew) {
			sent := now
			if b.renew(conn, inc) {
				// Counted from the sending, not the reply: slow round
				// trips must not eat the attempts left before the
				// deadline (lease - lease/5 after this sending).
				nextRenew = sent.Add(every)
			} else {
				// A failure that was not a loss: try again soon, but the
				// deadline check in renew still applies.
				nextRenew = time.Now().Add(min(every/4, 50*time.Millisecond))
			}
			continue
		}
		if !now.Before(nextReap) {
			b.reapOn(conn, inc)
			nextReap = time.Now().Add(b.cfg.Reap)
		}
	}
}

// reconnect opens the renewer's session if needed and registers a new
// incarnation. Nothing is held meanwhile (the renewer comes here only without
// an incarnation), so a lease is as long as it may take.
func (b *Locks) reconnect(conn *Session) error {
	ctx, cancel := context.WithTimeout(b.ctx, b.cfg.Lease)
	defer cancel()
	if *conn == nil {
		c, err := b.db.Session(ctx)
		if err != nil {
			if b.ctx.Err() == nil && ctx.Err() != nil {
				// No answer within a lease: a partition or a hung server.
				err = fmt.Errorf("%w: no answer within %v: %w", store.ErrUnavailable, b.cfg.Lease, err)
			}
			err = fmt.Errorf("%s: lock session: %w", b.cfg.Name, err)
			b.mu.Lock()
			b.regErr = err
			b.mu.Unlock()
			return err
		}
		*conn = c
	}
	b.mu.Lock()
	needs := b.cur == nil
	b.mu.Unlock()
	if !needs {
		return nil
	}
	err := b.register(ctx, *conn)
	if err != nil && (*conn).Closed() {
		(*conn).Close()
		*conn = nil
	}
	return err
}

// renew extends inc's lease. It reports whether the lease was extended; on
// a loss it has already fired Lost and cleared the incarnation.
func (b *Locks) renew(conn Session, inc *incarnation) bool {
	b.mu.Lock()
	deadline := inc.deadline
	b.mu.Unlock()
	ctx, cancel := context.WithDeadline(b.ctx, deadline)
	defer cancel()
	sent := time.Now()
	ok, err := conn.Renew(ctx, inc.id, b.cfg.Lease)
	switch {
	case b.ctx.Err() != nil:
		return false
	case err == nil && ok:
		b.mu.Lock()
		if !inc.gone {
			inc.deadline = sent.Add(b.cfg.Lease - b.cfg.margin())
		}
		b.mu.Unlock()
		return true
	case err == nil:
		// The sentinel is gone: reaped after expiring, or evicted by a
		// Store claiming our identity. Its locks went with it.
		b.lose(inc)
		return false
	case conn.Closed():
		// The renewer's session died (terminated, server restart). Our
		// rows may outlive it until they expire; re-registration evicts
		// them at once instead.
		b.loseSession(inc, err)
		return false
	case !time.Now().Before(deadline):
		b.lose(inc) // expire has done so, or is about to
		return false
	}
	return false
}

// lose fires Lost on every lock of inc and clears it, so the renewer
// registers a fresh incarnation (which deletes inc's rows) and Acquire waits.
func (b *Locks) lose(inc *incarnation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loseLocked(inc)
}

// loseSession is lose for an incarnation whose renewer's session ended
// (with err, if known): until the next registration, that is also why
// Acquire cannot lend a lock.
func (b *Locks) loseSession(inc *incarnation, err error) {
	if err == nil {
		err = errSessionClosed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !inc.gone {
		b.regErr = fmt.Errorf("%s: lock session ended: %w: %w", b.cfg.Name, store.ErrUnavailable, err)
	}
	b.loseLocked(inc)
}

func (b *Locks) loseLocked(inc *incarnation) {
	if inc.gone {
		return
	}
	inc.gone = true
	if inc.timer != nil {
		inc.timer.Stop()
	}
	if b.cur == inc {
		b.cur = nil
		b.ready = make(chan struct{})
	}
	for l := range inc.locks {
		if l.state == held {
			l.state = lost
			close(l.lost)
		}
	}
	inc.locks = nil
}

// reapOn frees the locks of every owner whose lease has expired. A failure
// needs no handling here: if it broke the session, the renewer's loop finds
// it closed; the deadline is expire's to enforce.
func (b *Locks) reapOn(conn Session, inc *incarnation) {
	b.mu.Lock()
	deadline := inc.deadline
	b.mu.Unlock()
	ctx, cancel := context.WithDeadline(b.ctx, deadline)
	defer cancel()
	if n, err := conn.EvictExpired(ctx); err == nil {
		b.reaped.Add(n)
	}
}

// current returns the live incarnation; or nil and, between a loss and the
// next registration, a channel closed at that registration and why the last
// registration failed (nil if none has yet).
func (b *Locks) current() (*incarnation, <-chan struct{}, error, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed || b.crashed:
		return nil, nil, nil, store.ErrClosed
	case b.cur == nil && errors.Is(b.regErr, store.ErrDuplicate):
		// Another live Store took the identity over: this one cannot
		// register again until that one is gone.
		return nil, nil, nil, b.regErr
	case b.cur == nil:
		return nil, b.ready, b.regErr, nil
	case !time.Now().Before(b.cur.deadline):
		// Renewal is late: the lease is no longer safe to lend out. The
		// renewer is about to renew or give the incarnation up.
		b.poke()
		return nil, nil, nil, nil
	}
	return b.cur, nil, nil, nil
}

type tryResult int

const (
	tryTaken tryResult = iota
	tryAcquired
	tryHolderDead
	tryOwnerGone
	tryGated // the lock epoch is younger than a lease
)

// Acquire implements sqlstore.LockBackend.
func (b *Locks) Acquire(ctx context.Context, name string, timeout time.Duration) (sqlstore.BackendLock, error) {
	deadline := time.Now().Add(timeout)
	var wake chan struct{}
	if timeout > 0 {
		// Registered before the first try, so a release between that
		// try and the wait is not missed: this Store's own releases wake
		// it always (Release), other Stores' through notifications when
		// listening (without them it also polls).
		wake = b.addWaiter(name)
		defer b.removeWaiter(name, wake)
	}
	key := []byte(name)
	var marked int64 // the holding this wait marked (WaitMarker)
	start := time.Now()
	backoff := b.nextBackoff(0, 0)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		inc, ready, why, err := b.current()
		if err != nil {
			return nil, err
		}
		if inc != nil {
			var holder int64
			l, res, err := b.try(ctx, key, name, inc, &holder)
			if err != nil {
				return nil, err
			}
			switch res {
			case tryAcquired:
				return l, nil
			case tryHolderDead:
				if n, err := b.reap(ctx); err == nil && n > 0 {
					continue
				}
			case tryOwnerGone:
				b.poke()
			case tryTaken:
				if wm, ok := b.db.(WaitMarker); ok && b.listening() && (holder == 0 || holder != marked) {
					// Ask this holding's release to notify; if it went
					// meanwhile, try again at once.
					found, err := wm.MarkWaited(ctx, key)
					if err == nil && !found && time.Now().Before(deadline) {
						continue
					}
					if err == nil {
						marked = holder
					}
				}
			}
		}
		now := time.Now()
		if !now.Before(deadline) {
			if inc == nil && errors.Is(why, store.ErrUnavailable) {
				// Not a lock someone holds: no owner could be registered.
				return nil, fmt.Errorf("no lock owner registered within %v: %w", timeout, why)
			}
			return nil, fmt.Errorf("%w after %v", store.ErrLockTimeout, timeout)
		}
		wait := min(backoff, deadline.Sub(now))
		backoff = b.nextBackoff(backoff, now.Sub(start))
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-b.ctx.Done():
			return nil, store.ErrClosed
		case <-wake:
			b.notifyWakeups.Add(1)
			backoff = b.nextBackoff(0, 0)
		case <-ready:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// nextBackoff is a waiter's poll interval after prev (0: its first),
// waited elapsed so far.
func (b *Locks) nextBackoff(prev, elapsed time.Duration) time.Duration {
	switch {
	case b.listening():
		return max(min(prev*2, maxBackoff), minBackoff)
	case elapsed < pollShortFor:
		return max(min(prev*2, pollShortMax), pollMin)
	default:
		return max(min(prev*2, maxBackoff), pollMin)
	}
}

// try makes one attempt for name under inc. It waits no longer than inc's
// deadline: a grant after it could not be handed out anyway.
//
// When the name is taken, holder is set to the holding's token (which
// tells one holding from the next), if the attempt saw it.
func (b *Locks) try(ctx context.Context, key []byte, name string, inc *incarnation, holder *int64) (*lock, tryResult, error) {
	b.mu.Lock()
	deadline := inc.deadline
	b.mu.Unlock()
	qctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	token := rand.Int64()
	for attempt := 0; ; attempt++ {
		a, err := b.db.Acquire(qctx, key, inc.id, token, b.cfg.Lease)
		if err != nil {
			if ctx.Err() == nil && qctx.Err() != nil {
				// Our incarnation's deadline, not the caller's: the
				// incarnation is being lost; wait for the next.
				b.forget(key, inc.id, token)
				return nil, tryOwnerGone, nil
			}
			if errors.Is(err, store.ErrUnavailable) && attempt < 3 && ctx.Err() == nil {
				// The row may have gone in; the token recognises it.
				continue
			}
			b.forget(key, inc.id, token)
			return nil, 0, err
		}
		fence := a.Fence
		switch {
		case a.Inserted:
		case a.HolderToken != nil && *a.HolderToken == token:
			// An earlier attempt's row, whose fencing token (if any)
			// went unseen: sqlstore bumps it again.
			fence = 0
		case !a.OwnerAlive:
			return nil, tryOwnerGone, nil
		case !a.Open:
			return nil, tryGated, nil
		case a.HolderDead:
			return nil, tryHolderDead, nil
		default:
			if a.HolderToken != nil {
				*holder = *a.HolderToken
			}
			return nil, tryTaken, nil
		}
		l := &lock{b: b, name: name, inc: inc, token: token, fence: fence, lost: make(chan struct{})}
		b.mu.Lock()
		// Not past the deadline either: expire may not have run yet.
		ok := !inc.gone && !b.closed && !b.crashed && time.Now().Before(inc.deadline)
		if ok {
			inc.locks[l] = struct{}{}
		}
		b.mu.Unlock()
		if !ok {
			// The incarnation was lost while the row went in: nobody
			// may rely on it. Re-registration or Close removes it too.
			b.forget(key, inc.id, token)
			return nil, tryOwnerGone, nil
		}
		return l, tryAcquired, nil
	}
}

// forget deletes a row this Store may have inserted without handing out a
// Lock for it (the statement's outcome was unknown, or its incarnation was
// lost meanwhile), in the background and best effort: if it fails, the row
// goes with the incarnation at the next registration or Close.
func (b *Locks) forget(key []byte, owner, token int64) {
	b.mu.Lock()
	if b.closed || b.crashed {
		b.mu.Unlock()
		return
	}
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(b.ctx, closeTimeout)
		defer cancel()
		_, _ = b.db.Release(ctx, key, owner, token)
	}()
}

// reap frees the locks of every expired owner and returns how many it freed.
func (b *Locks) reap(ctx context.Context) (int64, error) {
	n, err := b.db.EvictExpired(ctx)
	if err == nil {
		b.reaped.Add(n)
	}
	return n, err
}

// Release implements store.Lock.
func (l *lock) Release(ctx context.Context) error {
	b := l.b
	l.relMu.Lock()
	defer l.relMu.Unlock()
	b.mu.Lock()
	st := l.state
	b.mu.Unlock()
	switch st {
	case released:
		return nil
	case lost:
		return store.ErrLockLost
	}
	for attempt := 0; ; attempt++ {
		found, err := b.db.Release(ctx, []byte(l.name), l.inc.id, l.token)
		if err != nil {
			l.tried = true
			if errors.Is(err, store.ErrUnavailable) && attempt < 3 && ctx.Err() == nil {
				continue
			}
			return err
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		// After a failed attempt, a missing row is most likely that
		// attempt's DELETE having committed; had the lock been reaped,
		// the renewer would have marked it lost.
		if found || l.tried && l.state == held {
			l.state = released
			delete(l.inc.locks, l)
			// This Store's waiters for the name try at once, whether
			// or not a notification would reach them (behind a
			// transaction pooler none does). A wake-up only brings a
			// try forward; the database still decides who gets it.
			b.wake(l.name)
			return nil
		}
		if l.state == held {
			l.state = lost
			close(l.lost)
			delete(l.inc.locks, l)
		}
		return store.ErrLockLost
	}
}

// Close implements sqlstore.LockBackend: it stops the background work and
// deletes this Store's owner row and locks.
func (b *Locks) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	crashed := b.crashed
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
	if crashed {
		return nil
	}
	b.mu.Lock()
	inc, id := b.cur, b.lastID
	b.mu.Unlock()
	var err error
	if id != 0 {
		// The newest incarnation: the current one, or one lost and not
		// yet replaced, whose rows are still there until they expire.
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err = b.db.EvictOwner(ctx, id); err != nil {
			err = fmt.Errorf("%s: release locks of %q: %w", b.cfg.Name, b.cfg.Identity, err)
		}
	}
	b.mu.Lock()
	if inc != nil {
		inc.gone = true
		inc.timer.Stop()
		for l := range inc.locks {
			l.state = released
		}
		inc.locks = nil
	}
	b.mu.Unlock()
	return err
}

// evictSelf undoes a registration when start fails half-way.
func (b *Locks) evictSelf() {
	b.mu.Lock()
	inc := b.cur
	if inc != nil {
		b.loseLocked(inc) // holds no locks yet: this only stops its timer
	}
	b.mu.Unlock()
	if inc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = b.db.EvictOwner(ctx, inc.id)
}

// KillSession ends the renewer's session, whose death forfeits every lock
// of the Store, and the listener's, through the DB's SessionKiller
// (sqlstore.LockFaults).
func (b *Locks) KillSession(ctx context.Context, _ sqlstore.BackendLock) error {
	k, ok := b.db.(SessionKiller)
	if !ok {
		return fmt.Errorf("%s: kill lock session: %T cannot end sessions: %w", b.cfg.Name, b.db, store.ErrInvalid)
	}
	return k.KillSessions(ctx)
}

// Crash stops renewal and drops the lock sessions without deleting
// anything, as a tracker that dies does (sqlstore.LockFaults); the pool is
// the caller's to drop.
func (b *Locks) Crash() {
	b.mu.Lock()
	if b.closed || b.crashed {
		b.mu.Unlock()
		return
	}
	b.crashed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
	b.mu.Lock()
	if b.cur != nil {
		b.loseLocked(b.cur)
	}
	b.mu.Unlock()
}

// Status is what a Store's locks report about themselves, for logs and
// operators.
type Status struct {
	Identity string // the owner identity
	Owner    int64  // the current incarnation id, 0 between a loss and the next registration
	// NotifyWakeups counts the lock waits a notification or a release by
	// this Store ended (rather than a poll), a measure of whether the
	// listener works.
	NotifyWakeups int64
}

// Status reports the locks' owner and counters.
func (b *Locks) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := Status{Identity: b.cfg.Identity, NotifyWakeups: b.notifyWakeups.Load()}
	if b.cur != nil {
		st.Owner = b.cur.id
	}
	return st
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// LockStats implements the optional method that sqlstore.Store.LockStats
// forwards: how many locks of expired owners this Store's reaps freed.
func (b *Locks) LockStats() store.LockStats {
	return store.LockStats{Reaped: b.reaped.Load()}
}
