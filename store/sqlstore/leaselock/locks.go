package leaselock

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// The backend of one Store: its state, its lifecycle (New, Start, Close,
// Crash), the fault hooks and what it reports. Beside it: the owner's
// incarnations (owner.go), the renewer (renew.go), the reaper (reaper.go),
// Acquire (acquire.go), waits (wait.go), a held lock (lock.go) and the
// listener (listen.go).

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

// Locks is the lock mechanism (a store.LockService, sqlstore.Config.Locks) of one Store: one owner incarnation at
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

	notifyWakeups atomic.Int64 // waits ended by a notification or a local release (LockStats)
	reaped        atomic.Int64 // locks of expired owners freed (LockStats)
}

var (
	_ store.LockService    = (*Locks)(nil)
	_ sqlstore.LockStarter = (*Locks)(nil)
	_ sqlstore.LockFaults  = (*Locks)(nil)
)

// Describe implements store.LockService.
func (b *Locks) Describe() string {
	return fmt.Sprintf("database (lease table, lock_lease %v)", b.cfg.Lease)
}

// DeadOwnerBound implements store.LockService (Config.DeadOwnerBound).
func (b *Locks) DeadOwnerBound() time.Duration { return b.cfg.DeadOwnerBound() }

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

// Close implements store.LockService: it stops the background work and
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
func (b *Locks) KillSession(ctx context.Context, _ store.LockGrant) error {
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
