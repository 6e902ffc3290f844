package mysql

import (
	"context"
	"fmt"
	"net"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// Hooks for the external tests: the harness's fault injection and the
// backend-only checks reach unexported state only through these.

var ServerLockName = serverLockName

const (
	DeadOwnerBound = deadOwnerBound
	WatchEvery     = watchEvery
	TailPoll       = tailPoll
	KillTimeout    = killTimeout
)

func Configure(d *store.DSN) (main, lock *gomysql.Config, err error) {
	c, _, err := configure(d)
	if err != nil {
		return nil, nil, err
	}
	return c, lockConfig(c), nil
}

func backendOf(s *store.Store) (*sqlstore.Store, *lockBackend, error) {
	ss, ok := sqlaccess.Backend(s)
	if !ok {
		return nil, nil, fmt.Errorf("%T is not a *sqlstore.Store", s)
	}
	p, _ := sqlaccess.Of(s)
	b, ok := p.Locks.(*lockBackend)
	if !ok {
		return nil, nil, fmt.Errorf("%T is not this package's lock backend", p.Locks)
	}
	return ss, b, nil
}

// LockSessionID is the CONNECTION_ID of the session holding l for s.
func LockSessionID(s *store.Store, l store.Lock) (uint64, error) {
	_, b, err := backendOf(s)
	if err != nil {
		return 0, err
	}
	if id, ok := b.heldSession(l.Name()); ok {
		return id, nil
	}
	return 0, fmt.Errorf("lock %q is not held by this store", l.Name())
}

// FreeSessionIDs lists the sessions s keeps for reuse.
func FreeSessionIDs(s *store.Store) ([]uint64, error) {
	_, b, err := backendOf(s)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []uint64
	for _, f := range b.free {
		ids = append(ids, f.id)
	}
	return ids, nil
}

// Crash drops s's lock sessions and pool without releasing anything.
func Crash(s *store.Store) error {
	ss, _, err := backendOf(s)
	if err != nil {
		return err
	}
	return ss.CrashOwner(context.Background())
}

// StoreDialect is the dialect s was opened with.
func StoreDialect(s *store.Store) (sqlstore.Dialect, error) {
	p, ok := sqlaccess.Of(s)
	if !ok {
		return nil, fmt.Errorf("%T is not a *sqlstore.Store", s)
	}
	d, ok := p.Dialect.(sqlstore.Dialect)
	if !ok {
		return nil, fmt.Errorf("%T is not a sqlstore.Dialect", p.Dialect)
	}
	return d, nil
}

// FreezeWatchers stops s's watchers and leaves its lock sessions open and
// silent, as when the holder's host vanishes.
func FreezeWatchers(s *store.Store) error {
	_, b, err := backendOf(s)
	if err != nil {
		return err
	}
	b.mu.Lock()
	held := make([]*lock, 0, len(b.held))
	for l := range b.held {
		held = append(held, l)
	}
	b.mu.Unlock()
	for _, l := range held {
		l.stopWatcher()
	}
	return nil
}

// SniffGreeting feeds chunks to a tracked connection as reads would and
// reports the connection id it registered.
func SniffGreeting(chunks ...[]byte) (uint32, bool) {
	d := newDialer()
	c := &trackedConn{d: d}
	for _, ch := range chunks {
		if !c.done {
			c.sniff(ch)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return c.id, c.known && d.conns[c.id] == c
}

// SetPingTimeout sets how long s's watchers wait for a ping before giving
// the session up (pingTimeout in production). Call it before s takes any
// lock.
func SetPingTimeout(s *store.Store, d time.Duration) error {
	_, b, err := backendOf(s)
	if err != nil {
		return err
	}
	b.pingTimeout = d
	return nil
}

// LockSessionLocalAddr is the local address of the socket of the session
// holding l for s, which a proxy in between sees as the client's address.
func LockSessionLocalAddr(s *store.Store, l store.Lock) (net.Addr, error) {
	_, b, err := backendOf(s)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for ml := range b.held {
		if ml.name == l.Name() {
			if ml.s.sock == nil {
				return nil, fmt.Errorf("lock %q: the session's socket is unknown", l.Name())
			}
			return ml.s.sock.LocalAddr(), nil
		}
	}
	return nil, fmt.Errorf("lock %q is not held by this store", l.Name())
}

// KillSession runs s's guarded KILL of session id for the lock name.
func KillSession(s *store.Store, name string, id uint64) error {
	_, b, err := backendOf(s)
	if err != nil {
		return err
	}
	b.killSession(serverLockName(b.database, name), id)
	return nil
}

// OpenIgnoringCluster opens a Store as Driver.Open does, with every Galera
// check of its lock backend off, to show what the checks prevent.
func OpenIgnoringCluster(ctx context.Context, dsn string) (*store.Store, error) {
	return openEdited(ctx, dsn, func(b *lockBackend) { b.ignoreCluster = true })
}

// OpenWithoutClusterWatch opens a Store whose lock backend never starts
// its periodic Galera check, so that only its new sessions see the
// cluster grow.
func OpenWithoutClusterWatch(ctx context.Context, dsn string) (*store.Store, error) {
	return openEdited(ctx, dsn, func(b *lockBackend) { b.clusterWatch.Do(func() {}) })
}

// openEdited is Driver.Open with edit applied to the lock backend before
// the Store starts.
func openEdited(ctx context.Context, dsn string, edit func(*lockBackend)) (*store.Store, error) {
	d, err := store.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg, err := NewConfig(ctx, d)
	if err != nil {
		return nil, err
	}
	edit(cfg.Locks.(*lockBackend))
	b, err := sqlstore.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return store.New(b, nil), nil
}

// GrantWithContextEnded takes name for s on a session of its own, then
// finishes that grant as Acquire does but with a context that has already
// ended — the race in which the driver may close the session as GET_LOCK's
// answer comes back — and returns what the grant returns.
func GrantWithContextEnded(s *store.Store, name string) (store.Lock, error) {
	_, b, err := backendOf(s)
	if err != nil {
		return nil, err
	}
	a := &acquisition{b: b, name: name, key: serverLockName(b.database, name), timeout: 5 * time.Second, deadline: time.Now().Add(5 * time.Second)}
	ctx := context.Background()
	if a.s, a.reused, err = b.session(ctx); err != nil {
		return nil, err
	}
	got, look, fence, err := a.s.getLock(ctx, a.key, 5, true)
	if err != nil || !got {
		return nil, fmt.Errorf("GET_LOCK: got %v, %v", got, err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	l, _, err := a.granted(ended, look, fence)
	if l != nil {
		return l, err
	}
	return nil, err
}

// heldSession returns the CONNECTION_ID of the session holding name for
// this Store, for the harness's KILL.
func (b *lockBackend) heldSession(name string) (uint64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for l := range b.held {
		if l.name == name {
			return l.s.id, true
		}
	}
	return 0, false
}
