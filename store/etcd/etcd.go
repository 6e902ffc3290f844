// Package etcd keeps a Store's named locks in etcd: an outside lock service
// (store.LockService) for installations whose metadata database cannot
// keep them — a MariaDB Galera cluster, whose GET_LOCK is per node — or
// that want them apart. A tracker names it with lock_dsn:
//
//	lock_dsn = etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/gomogile?ttl=5
//
// and every tracker of the installation must name the same service and
// prefix (the database records which, and refuses a Store that differs).
// The package registers the lock service "etcd" in its init; cmd/mogilefsd
// imports it.
//
// # DSN
//
// etcd://[user:password@]host[:port][,host[:port]…][/prefix][?param=value&…]
//
//   - hosts: the cluster's client endpoints (port 2379 when none). Name
//     every member: a client given one endpoint loses its session when that
//     member dies, one given all fails over.
//   - prefix: the key prefix of the locks (default /gomogile); a lock
//     name's key is prefix/lock/<hex of the name>/<lease>.
//   - ttl: the session's lease, whole seconds or a Go duration, at least 2 s
//     (default 5 s). Measured here on a 3-member cluster on loopback: with
//     2 s the session was lost when the leader was killed in 4 of 7 trials,
//     with 5 s in none of 5, because an election can hold keep-alives back
//     for a few seconds. A dead tracker's locks are free within ttl + 1 s.
//   - dial_timeout: connecting at start (default 5 s).
//   - cacert, cert, key: TLS, with files of PEM (cacert alone: the server is
//     verified, no client certificate); tls=1 uses TLS with the system's
//     roots. user and password in the URL authenticate.
//
// # Locks
//
// A Store opens one etcd client and one lease, its owner identity, kept
// alive for the Store's life: each lock is a concurrency.Mutex on that
// lease, so a dead tracker's locks go with its lease. Its fencing token is
// the etcd revision at the grant, which grows across every grant of every
// name and across leader changes; the Store raises its metadata database's
// fence row of the name to it before Lock returns.
//
// Lost fires by the holder's own deadline: a keep-alive sent at t and
// answered with TTL d renews the lease until t+d at the earliest on the
// server, and Lost fires at t+d-d/5 unless a later keep-alive was answered
// first, so another Store can be granted the name only after Lost fired,
// whatever the network did, as long as the holder's process runs. A lease
// revoked at the server (an operator's etcdctl lease revoke) frees its
// keys at once, and Lost follows at the next keep-alive (at most ttl/3):
// there fencing is what keeps a late write out. After a loss the Store
// takes a new lease for its next grants.
//
// A lock is not reentrant: a second Lock of a name the Store holds waits
// in the Store for the first to be released (etcd's Mutex would hand the
// same key back), then in etcd like any other.
package etcd

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gomogile/gomogile/store"
)

func init() { store.RegisterLockService("etcd", Driver{}) }

// Driver opens etcd lock services; registered as "etcd".
type Driver struct{}

// Service is one Store's presence in etcd: a client, a lease (renewed for
// as long as it can be vouched for, then replaced), and the grants made
// on it.
type Service struct {
	cfg     Config
	cli     *clientv3.Client
	version string

	stop   context.Context // ended by Close and Crash: every loop stops
	cancel context.CancelFunc
	wg     sync.WaitGroup
	bg     sync.WaitGroup // dropLater's: waited for after the client closes

	mu      sync.Mutex
	closed  bool
	crashed bool
	gen     *generation      // the current lease; nil or lost: take a new one
	taking  chan struct{}    // closed when the new lease one caller takes is ready
	gates   map[string]*gate // per name: this Store's one holder or taker
}

var _ store.LockService = (*Service)(nil)

// generation is one lease of the Service and its concurrency.Session.
type generation struct {
	sess *concurrency.Session
	lost chan struct{} // closed once the lease cannot be vouched for
	once sync.Once
}

func (g *generation) lose() { g.once.Do(func() { close(g.lost) }) }

func (g *generation) isLost() bool {
	select {
	case <-g.lost:
		return true
	default:
		return false
	}
}

// Open connects with cfg (ParseConfig's) and takes the first lease.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Username:    cfg.Username,
		Password:    cfg.Password,
		TLS:         cfg.TLS,
		Logger:      zap.NewNop(),
		Context:     context.WithoutCancel(ctx),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: connect %s: %w: %w", strings.Join(cfg.Endpoints, ","), store.ErrUnavailable, err)
	}
	s := &Service{cfg: cfg, cli: cli, gates: map[string]*gate{}}
	s.stop, s.cancel = context.WithCancel(context.Background())
	sctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	var lastErr error
	for _, ep := range cfg.Endpoints {
		st, err := cli.Status(sctx, ep)
		if err == nil {
			s.version = st.Version
			break
		}
		lastErr = err
	}
	if s.version == "" {
		cli.Close()
		return nil, fmt.Errorf("etcd: no endpoint of %s answers: %w: %w", strings.Join(cfg.Endpoints, ","), store.ErrUnavailable, lastErr)
	}
	if _, err := s.current(ctx); err != nil {
		s.cancel()
		cli.Close()
		return nil, err
	}
	return s, nil
}

// current is the generation to grant on: the live one, or a new lease.
// One caller takes a new lease at a time, the others wait for it as long
// as their ctx lets them: no caller waits on another's deadline.
func (s *Service) current(ctx context.Context) (*generation, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, store.ErrClosed
		}
		if s.gen != nil && !s.gen.isLost() {
			g := s.gen
			s.mu.Unlock()
			return g, nil
		}
		if taking := s.taking; taking != nil {
			s.mu.Unlock()
			select {
			case <-taking:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		taking := make(chan struct{})
		s.taking = taking
		s.mu.Unlock()
		g, err := s.newGeneration(ctx)
		s.mu.Lock()
		s.taking = nil
		s.mu.Unlock()
		close(taking)
		return g, err
	}
}

// newGeneration takes a new lease and makes it the current generation.
func (s *Service) newGeneration(ctx context.Context) (*generation, error) {
	secs := int64(s.cfg.TTL / time.Second)
	sent := time.Now()
	lease, err := s.cli.Grant(ctx, secs)
	if err != nil {
		return nil, fmt.Errorf("etcd: grant a lease: %w", s.classify(ctx, err))
	}
	sess, err := concurrency.NewSession(s.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(int(secs)), concurrency.WithContext(s.stop))
	if err != nil {
		return nil, fmt.Errorf("etcd: session: %w", s.classify(ctx, err))
	}
	g := &generation{sess: sess, lost: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// Closed meanwhile: the lease is nobody's; it expires.
		sess.Orphan()
		return nil, store.ErrClosed
	}
	s.gen = g
	s.wg.Add(1)
	go s.keepAlive(g, lease.ID, sent.Add(time.Duration(lease.TTL)*time.Second))
	return g, nil
}

// keepAlive renews g's lease every ttl/3 and loses g when it can no
// longer be vouched for: at the deadline the last answered renewal gives
// (its send time plus the TTL it was granted, minus a fifth of the TTL),
// or at once when etcd says the lease is gone. The deadline is a timer of
// its own, so that it fires on time while a renewal hangs on a dead
// connection. (The Session renews the lease too; its renewals can only
// keep the lease alive longer.)
func (s *Service) keepAlive(g *generation, id clientv3.LeaseID, expiry time.Time) {
	defer s.wg.Done()
	margin := s.cfg.TTL / 5
	deadline := time.AfterFunc(time.Until(expiry.Add(-margin)), g.lose)
	defer deadline.Stop()
	tick := time.NewTicker(s.cfg.TTL / 3)
	defer tick.Stop()
	defer s.retire(g)
	for {
		select {
		case <-s.stop.Done():
			return
		case <-g.lost:
			return
		case <-tick.C:
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(s.stop, s.cfg.TTL/3)
		resp, err := s.cli.KeepAliveOnce(ctx, id)
		cancel()
		switch {
		case errors.Is(err, rpctypes.ErrLeaseNotFound), err == nil && resp.TTL <= 0:
			return
		case err != nil:
			continue // the deadline decides
		}
		if !deadline.Stop() {
			return // it fired meanwhile: g is lost, whatever this renewal says
		}
		deadline.Reset(time.Until(sent.Add(time.Duration(resp.TTL)*time.Second - margin)))
	}
}

// retire loses g: every grant made on it fires Lost and frees its name in
// the Store, and the lease is no longer renewed (revoked when the cluster
// still answers, so the names free at once).
func (s *Service) retire(g *generation) {
	g.lose()
	s.mu.Lock()
	crashed := s.crashed
	s.mu.Unlock()
	if crashed {
		return
	}
	id := g.sess.Lease()
	g.sess.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.TTL/2)
	defer cancel()
	_, _ = s.cli.Revoke(ctx, id)
}

// classify makes an error of the client's a store error where it can.
func (s *Service) classify(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, rpctypes.ErrTimeout), errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail),
		errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost), errors.Is(err, rpctypes.ErrNoLeader),
		errors.Is(err, rpctypes.ErrLeaseNotFound),
		status.Code(err) == codes.Unavailable, status.Code(err) == codes.DeadlineExceeded:
		// The cluster did not answer (an election, a partition): the
		// request may or may not have applied, and a retry may succeed.
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// key is the lock prefix of name: hex, so that no name is a prefix of
// another's keys whatever bytes it holds.
func (s *Service) key(name string) string {
	return s.cfg.Prefix + "/lock/" + hex.EncodeToString([]byte(name))
}

// Acquire implements store.LockService.
func (s *Service) Acquire(ctx context.Context, name string, timeout time.Duration) (store.LockGrant, error) {
	deadline := time.Now().Add(timeout)
	try := timeout == 0
	gt, err := s.enter(ctx, name, try, deadline)
	if err != nil {
		return nil, err
	}
	g, err := s.current(ctx)
	if err != nil {
		s.leave(name, gt, true)
		return nil, err
	}
	m := concurrency.NewMutex(g.sess, s.key(name))
	var pending chan error // a wait given up on: its outcome comes later
	if try {
		err = m.TryLock(ctx)
		if errors.Is(err, concurrency.ErrLocked) {
			// TryLock took its key out again.
			s.leave(name, gt, true)
			return nil, fmt.Errorf("%w: %q is held", store.ErrLockTimeout, name)
		}
	} else {
		pending, err = s.wait(ctx, g, m, deadline)
		switch {
		case err == nil:
		case g.isLost():
			err = fmt.Errorf("etcd: the lease was lost while waiting for %q: %w", name, store.ErrUnavailable)
		case ctx.Err() != nil:
			err = ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			err = fmt.Errorf("%w: %q still held after %v", store.ErrLockTimeout, name, timeout)
		}
	}
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		// The lease went at the server before this Service saw it go
		// (revoked): its generation is lost, and the next call takes a
		// new one.
		g.lose()
	}
	if err == nil && g.isLost() {
		// Granted on a lease that lapsed meanwhile: no grant.
		err = fmt.Errorf("etcd: the lease was lost while taking %q: %w", name, store.ErrUnavailable)
	}
	if err != nil {
		// Whatever happened, this Store's key for name may be in etcd,
		// queued or even granted; it must go before the name is this
		// Store's to take again, without holding the caller up.
		s.dropLater(name, gt, g, m, pending)
		if !errors.Is(err, store.ErrLockTimeout) && !errors.Is(err, store.ErrUnavailable) && ctx.Err() == nil {
			err = s.classify(ctx, err)
		}
		return nil, err
	}
	l := &grant{s: s, name: name, m: m, g: g, gate: gt, token: m.Header().Revision, done: make(chan struct{})}
	s.wg.Add(1)
	go l.watch()
	return l, nil
}

// grant is one lock held: an etcd Mutex on a generation's lease.
type grant struct {
	s     *Service
	name  string
	m     *concurrency.Mutex
	g     *generation
	gate  *gate
	token int64

	mu       sync.Mutex
	released bool
	done     chan struct{} // closed by Release: the watch ends
}

func (l *grant) Name() string          { return l.name }
func (l *grant) Token() int64          { return l.token }
func (l *grant) Lost() <-chan struct{} { return l.g.lost }

// watch frees the name in the Store once the grant is lost.
func (l *grant) watch() {
	defer l.s.wg.Done()
	select {
	case <-l.g.lost:
		l.mu.Lock()
		if !l.released {
			l.released = true
			l.s.leave(l.name, l.gate, true)
		}
		l.mu.Unlock()
	case <-l.done:
	}
}

// Release implements store.LockGrant.
func (l *grant) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.g.isLost() {
		return fmt.Errorf("etcd: %q: %w", l.name, store.ErrLockLost)
	}
	if l.released {
		return nil
	}
	l.released = true
	close(l.done)
	if err := l.m.Unlock(ctx); err != nil {
		// etcd did not answer in time: the key goes in the background,
		// and the name is this Store's again once it went.
		l.s.dropLater(l.name, l.gate, l.g, l.m, nil)
		return fmt.Errorf("etcd: release %q (finishing in the background): %w", l.name, l.s.classify(ctx, err))
	}
	l.s.leave(l.name, l.gate, true)
	return nil
}

// Describe implements store.LockService.
func (s *Service) Describe() string {
	return fmt.Sprintf("etcd %s at %s prefix %s ttl %v", s.version, strings.Join(s.cfg.Endpoints, ","), s.cfg.Prefix, s.cfg.TTL)
}

// DeadOwnerBound implements store.LockService: a dead owner's lease
// expires at most ttl after its last renewal, and waiters see the keys go
// at once.
func (s *Service) DeadOwnerBound() time.Duration { return s.cfg.TTL + time.Second }

// Close implements store.LockService: every grant is lost (Lost fires),
// then the lease is revoked, freeing the names, and the client closes.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	g := s.gen
	s.mu.Unlock()
	if g != nil {
		g.lose()
	}
	s.cancel()
	s.wg.Wait()
	err := s.cli.Close()
	s.bg.Wait() // a Mutex's own clean-up ends with the client
	return err
}
