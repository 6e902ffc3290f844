package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/base32"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

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

// holderTable records which session holds each lock, so a grant can tell a
// handoff after a clean release from one after a session that ended
// underneath its holder: killed by an operator, or lost with a server
// crash, while its holder was cut off (a partition) and so could not yet
// know. A session lock is freed by the server the moment its session
// ends, but the holder hears of it only at its watcher's next answer or
// ping timeout; after such an end the next grant waits out handoffGrace
// (from when the stale row was first seen, on the server's clock) before
// it returns, so the old holder's Lost has fired before the new holder
// runs. Release deletes the row before RELEASE_LOCK. The table is MEMORY:
// a server restart empties it, which is exactly when every earlier holding
// ended underneath its holder. A sentinel row (an empty name) says the rows
// are complete: it is written when the table is first created, and again
// by the first grant made handoffGrace or more after a server start; while
// it is missing, a grant whose name has no row waits until handoffGrace
// after the server's start. Writes to it are never durable commits.
//
// The table also keeps the fencing tokens (see fenceStripeTable): a row's
// token is its grant's, and the sentinel's token is the counter every
// grant takes its token from.
const holderTable = "gomogile_lock_holder"

const holderTableDDL = "CREATE TABLE IF NOT EXISTS " + holderTable + ` (
	name      VARBINARY(64) NOT NULL PRIMARY KEY,
	conn      BIGINT UNSIGNED NOT NULL,
	seen_free DOUBLE NULL,
	token     BIGINT NOT NULL DEFAULT 0
) ENGINE=MEMORY`

// Fencing tokens (sqlstore.FenceChecker). A grant's token comes from a
// counter in the sentinel row of holderTable and is written into the
// grant's row, so a bump is no durable commit: the rows are MEMORY, like
// the GET_LOCKs they describe. Tokens still grow across the server
// restarts that empty the table through epochs: the sentinel is written
// only with a new epoch from fenceEpochTable (InnoDB), committed durably
// first, as its counter's start, epoch << sqlstore.FenceEpochShift.
//
// A fenced write must be ordered against the next grant, which MEMORY
// tables (table locks held for a statement, no transactions) cannot do,
// so the ordering comes from InnoDB rows that never change:
// fenceStripeTable holds fenceStripes rows, and a name maps to one of
// them. A grant writes its token with that row locked FOR UPDATE, in a
// transaction that changes no InnoDB row (so its COMMIT flushes nothing);
// a fenced write takes the same row LOCK IN SHARE MODE first in its own
// transaction and only then reads the token. So the grant waits for a
// write under the old token to commit, or the write reads the new token
// and is refused. A name whose holding ended in a clean release has no
// row, and a write under its fence is refused too.
const (
	fenceStripeTable = "gomogile_fence_stripe"
	fenceEpochTable  = "gomogile_fence_epoch"
	fenceStripes     = 1024
)

// fenceStripe is the row of fenceStripeTable that orders key's grants and
// fenced writes.
func fenceStripe(key string) int {
	return int(crc32.ChecksumIEEE([]byte(key)) % fenceStripes)
}

// newFenceEpoch adds one to the fencing epoch, durably, and writes the
// sentinel row with the new epoch's floor as its counter (or raises an
// existing sentinel's counter to it), on ex: a lock session, or the
// Store's pool (the epoch comes back in the OK packet, so the two
// statements need not share a session).
func newFenceEpoch(ctx context.Context, ex interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}) error {
	res, err := ex.ExecContext(ctx, "INSERT INTO "+fenceEpochTable+" (id, epoch) VALUES (1, LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE epoch = LAST_INSERT_ID(epoch + 1)")
	if err != nil {
		return fmt.Errorf("new fencing epoch: %w", err)
	}
	epoch, err := res.LastInsertId()
	if err == nil && epoch <= 0 {
		err = fmt.Errorf("epoch %d is not positive", epoch)
	}
	if err == nil {
		_, err = ex.ExecContext(ctx, "INSERT INTO "+holderTable+" (name, conn, token) VALUES ('', 0, ?) ON DUPLICATE KEY UPDATE token = GREATEST(token, VALUES(token))", epoch<<sqlstore.FenceEpochShift)
	}
	if err != nil {
		return fmt.Errorf("new fencing epoch: %w", err)
	}
	return nil
}

// FenceCheck implements sqlstore.FenceChecker. COUNT(*) makes a missing
// stripe row (an operator's DELETE) a refusal rather than an unordered
// check.
func (b *lockBackend) FenceCheck(name string) sqlstore.FenceCheck {
	key := serverLockName(b.database, name)
	return sqlstore.FenceCheck{
		Lock:     "SELECT COUNT(*) FROM " + fenceStripeTable + " WHERE id = ? LOCK IN SHARE MODE INTO @gomogile_stripe",
		LockArgs: []any{fenceStripe(key)},
		Read:     "SELECT token FROM " + holderTable + " WHERE name = ? AND @gomogile_stripe = 1",
		ReadArgs: []any{key},
	}
}

var _ sqlstore.FenceChecker = (*lockBackend)(nil)

// errNoStripe: the grant found its fenceStripeTable row missing.
var errNoStripe = errors.New("fencing stripe row missing")

// errNoSentinel: the grant found holderTable's sentinel gone, between its
// look and its claim (a restart, or an operator).
var errNoSentinel = errors.New("lock holder table's sentinel row gone")

// claimStatements are a grant's claim of its row with its fencing token:
// the stripe row locked for update (where cond, a condition on session
// variables, holds), the counter moved, the row written, in one
// transaction that changes no InnoDB row; then the SELECT of the query's
// answer, whose columns the caller adds. Arguments: the stripe, the name,
// the session id.
func claimStatements(cond string) string {
	return "START TRANSACTION; " +
		"SELECT COUNT(*) FROM " + fenceStripeTable + " WHERE id = ?" + cond + " FOR UPDATE INTO @gomogile_stripe; " +
		"UPDATE " + holderTable + " SET token = LAST_INSERT_ID(token + 1) WHERE name = '' AND @gomogile_stripe = 1; " +
		"SET @gomogile_rows = ROW_COUNT(); " +
		"REPLACE INTO " + holderTable + " (name, conn, seen_free, token) SELECT ?, ?, NULL, LAST_INSERT_ID() FROM DUAL WHERE @gomogile_rows = 1; " +
		"COMMIT; " +
		"SELECT "
}

// claimQuery is claim's: it reports whether the stripe row and the
// sentinel were there, and the token.
var claimQuery = claimStatements("") + "@gomogile_stripe, @gomogile_rows, LAST_INSERT_ID()"

// lockPrefix starts every server lock name, so gomogile's locks are
// recognisable in performance_schema.metadata_locks and the process list.
const lockPrefix = "gomogile:"

var lockEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// serverLockName maps a gomogile lock name to a GET_LOCK name. GET_LOCK's
// namespace is the whole server, and its rules vary (MySQL 8: at most 64
// characters; case folding documented, but not what MariaDB 10.11 does),
// so every name is hashed, together with the database it guards:
// "gomogile:" and the SHA-256 of database NUL name in lower-case base32 is
// 61 ASCII characters, identical on both servers, case-free, and
// collision-free as far as SHA-256 is.
func serverLockName(database, name string) string {
	h := sha256.New()
	h.Write([]byte(database))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return lockPrefix + lockEncoding.EncodeToString(h.Sum(nil))
}

// session is one dedicated server connection of the lock pool. It holds at
// most one lock, taken with exactly one GET_LOCK, so a RELEASE_LOCK that
// returns 1 leaves it holding nothing.
type session struct {
	conn *sql.Conn
	id   uint64     // CONNECTION_ID(), for KILL
	sock net.Conn   // its socket, when the dialer saw it
	peer *peerWatch // a watch on that socket, when it can be watched
	idle time.Time
	// boot is when the server started, on the local clock, as of the
	// session's start (rounded late: Uptime is whole seconds).
	boot time.Time
	// lastOK is when the newest statement the server answered on this
	// session was sent: the session was alive (and so held its lock)
	// after that instant. The watcher's deadline runs from it.
	lastOK time.Time
}

// close ends the session. bad discards the connection without any further
// statement on it (it may hold a lock, or be broken), and then closes every
// descriptor of its socket: the driver's, which it may already have closed
// itself (a cancelled query), and the watcher's duplicate. While any one of
// them is open the kernel sends no FIN, so the server keeps the session,
// and its lock, until wait_timeout.
func (s *session) close(bad bool) {
	if bad {
		_ = s.conn.Raw(func(any) error { return driver.ErrBadConn })
	} else {
		_ = s.conn.Close()
	}
	if s.peer != nil {
		s.peer.close()
	}
	if bad && s.sock != nil {
		// Idempotent: the driver closes the same socket (an error then
		// says it was closed already).
		_ = s.sock.Close()
	}
}

// lockBackend implements sqlstore.LockBackend with GET_LOCK.
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

var _ sqlstore.LockBackend = (*lockBackend)(nil)

// LockStats implements the optional method that sqlstore.Store.LockStats
// forwards: each held lock pins one session.
func (b *lockBackend) LockStats() store.LockStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return store.LockStats{Pinned: int64(len(b.held))}
}

func newLockBackend(lockDB *sql.DB, d *dialer, admin *sql.DB, database string) *lockBackend {
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
	}
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
func (b *lockBackend) Acquire(ctx context.Context, name string, timeout time.Duration) (sqlstore.BackendLock, error) {
	deadline := time.Now().Add(timeout)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, store.ErrClosed
	}
	if b.refused != nil {
		b.mu.Unlock()
		return nil, b.refused
	}
	b.calls.Add(1)
	b.mu.Unlock()
	defer b.calls.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(b.closing, cancel)()

	key := serverLockName(b.database, name)
	s, reused, err := b.session(ctx)
	if err != nil {
		return nil, b.acquireErr(ctx, err)
	}
	for first := true; ; first = false {
		secs := int64(max(time.Until(deadline), 0) / time.Second)
		// The claim goes with GET_LOCK unless this is one of the short
		// polls after a refusal, which mostly find the lock still taken
		// and would take the stripe row for nothing.
		got, look, fence, err := s.getLock(ctx, key, secs, first || secs > 0)
		if mysqlErrno(err) == erUserLockDeadlock {
			// Cannot happen while a waiting session holds nothing; should a
			// server report it anyway, it is a refusal to wait, not an
			// error: wait as for a zero answer.
			got, err, secs = false, nil, 0
		}
		if err != nil && reused && ctx.Err() == nil && sessionGone(err) {
			// An idle session the server closed (wait_timeout, restart)
			// holds nothing: try once more on a fresh one. Should it have
			// died after its claim's row went in, the row is nobody's.
			b.discard(s, "")
			b.forgetHolderLater(key, s.id)
			if s, err = b.newSession(ctx); err != nil {
				return nil, b.acquireErr(ctx, err)
			}
			reused = false
			continue
		}
		if err != nil {
			// The driver closes the socket when ctx ends mid-query, but the
			// server may keep the session waiting, or grant it the lock at
			// that instant; KILL ends it so no lock outlives this call.
			b.discard(s, key)
			return nil, b.acquireErr(ctx, err)
		}
		if got {
			if fence > 0 {
				s.renewEpochFrom(ctx, fence)
			} else {
				fence, err = b.claim(ctx, s, name, key, deadline, look)
			}
			switch {
			case errors.Is(err, errGraceTimeout):
				b.releaseUnclaimed(s, key)
				return nil, fmt.Errorf("%w after %v (the last holder's session ended underneath it; waiting out its grace)", store.ErrLockTimeout, timeout)
			case err != nil && ctx.Err() == nil && sessionGone(err) && time.Now().Before(deadline):
				// The session died while the grant waited out its grace (a
				// kill, a cut): the lock went with it, so wait for it anew
				// on a fresh session, as a waiting GET_LOCK would have.
				b.discard(s, "")
				b.forgetHolderLater(key, s.id)
				if s, err = b.newSession(ctx); err != nil {
					return nil, b.acquireErr(ctx, err)
				}
				reused = false
				continue
			case err != nil && ctx.Err() != nil && !sessionGone(err):
				// The caller's context ended while the grant waited out its
				// grace: the session is sound and holds the lock; give it
				// back off the caller's path.
				b.releaseUnclaimed(s, key)
				return nil, b.acquireErr(ctx, err)
			case err != nil:
				// Nobody was handed this grant: its row, if claim wrote it,
				// is nobody's to wait for. The close and KILL run off the
				// caller's path, so a Lock returns by its deadline even when
				// the server cannot be reached to KILL the session.
				b.discardLater(s, key)
				return nil, b.acquireErr(ctx, err)
			}
			l, err := b.hold(name, key, s, fence)
			if err != nil {
				b.forgetHolderLater(key, s.id)
				return nil, err
			}
			return l, nil
		}
		reused = false
		if !time.Now().Before(deadline) {
			b.release(s)
			return nil, fmt.Errorf("%w after %v", store.ErrLockTimeout, timeout)
		}
		if secs == 0 {
			t := time.NewTimer(min(tailPoll, time.Until(deadline)))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				b.release(s)
				return nil, b.acquireErr(ctx, ctx.Err())
			}
		}
	}
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

// errGraceTimeout: the caller's deadline came before handoffGrace ran out.
var errGraceTimeout = errors.New("deadline within the handoff grace")

// holderLook is what a grant reads of holderTable right after GET_LOCK
// granted it, in the same query (getLock): the row of key, if any, the
// server's clock, and whether the sentinel row is there.
type holderLook struct {
	conn     sql.NullInt64
	seenFree sql.NullFloat64
	now      float64
	complete bool
}

// claim makes a fresh grant of key on s this session's in holderTable,
// first waiting out handoffGrace when the last holding ended without a
// clean release (its row is still there) or the server started less than
// handoffGrace ago (its rows are gone). It gives up with errGraceTimeout
// at the caller's deadline, having waited until then, so a lock call never
// fails before its timeout. look is what getLock read after the grant.
// Where the sentinel is missing it writes it, with a new fencing epoch,
// handoffGrace or more after the server's start. The row goes in with the
// grant's fencing token (claimQuery), which claim returns.
func (b *lockBackend) claim(ctx context.Context, s *session, name, key string, deadline time.Time, look holderLook) (int64, error) {
	conn, seenFree, now := look.conn, look.seenFree, look.now
	var wait time.Duration
	switch {
	case !conn.Valid && look.complete:
		// Released cleanly, or never held.
	case !conn.Valid:
		// The server restarted: any holding may have ended with it.
		wait = time.Until(s.boot.Add(handoffGrace))
	case uint64(conn.Int64) == s.id:
		// This very session's own earlier holding: nothing to wait for.
	case seenFree.Valid:
		wait = time.Duration((seenFree.Float64-now)*float64(time.Second)) + handoffGrace
	default:
		if _, err := s.conn.ExecContext(ctx, "UPDATE "+holderTable+" SET seen_free = ? WHERE name = ? AND conn = ? AND seen_free IS NULL", now, key, conn.Int64); err != nil {
			return 0, err
		}
		wait = handoffGrace
	}
	if !look.complete {
		wait = max(wait, time.Until(s.boot.Add(handoffGrace)))
	}
	if wait > 0 {
		left := time.Until(deadline)
		t := time.NewTimer(min(wait, max(left, 0)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		}
		if wait > left {
			return 0, errGraceTimeout
		}
	}
	if !look.complete {
		if err := newFenceEpoch(ctx, s.conn); err != nil {
			return 0, err
		}
	}
	for attempt := 0; ; attempt++ {
		sent := time.Now()
		var stripe, rows, token int64
		if err := s.conn.QueryRowContext(ctx, claimQuery, fenceStripe(key), key, s.id).Scan(&stripe, &rows, &token); err != nil {
			return 0, err
		}
		s.lastOK = sent
		switch {
		case stripe != 1 && attempt == 0:
			// Emptied by an operator (or a test harness): put the rows
			// back and try again.
			if err := fillStripes(ctx, s.conn); err != nil {
				return 0, err
			}
			continue
		case stripe != 1:
			return 0, errNoStripe
		case rows != 1:
			return 0, errNoSentinel
		case token <= 0:
			return 0, fmt.Errorf("fencing token %d for %q is not positive", token, name)
		}
		s.renewEpochFrom(ctx, token)
		return token, nil
	}
}

// renewEpochFrom starts a new fencing epoch once a grant's token is in
// the upper half of its epoch's range, so the range never runs out. A
// failure leaves it to the next grant.
func (s *session) renewEpochFrom(ctx context.Context, token int64) {
	if sqlstore.FenceEpochHalfUsed(token) {
		_ = newFenceEpoch(ctx, s.conn)
	}
}

// fillStripes writes fenceStripeTable's rows that are missing.
func fillStripes(ctx context.Context, ex interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}) error {
	var q strings.Builder
	q.WriteString("INSERT IGNORE INTO " + fenceStripeTable + " (id) VALUES ")
	for i := range fenceStripes {
		if i > 0 {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "(%d)", i)
	}
	if _, err := ex.ExecContext(ctx, q.String()); err != nil {
		return fmt.Errorf("fill %s: %w", fenceStripeTable, err)
	}
	return nil
}

// releaseUnclaimed gives back a grant claim refused at the caller's
// deadline (its row left as it was, for the next grant to go on waiting
// from), off the caller's path so that Lock returns on time; Close waits
// for it (b.wg).
func (b *lockBackend) releaseUnclaimed(s *session, key string) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		var r sql.NullInt64
		_, err := s.conn.ExecContext(ctx, "DELETE FROM "+holderTable+" WHERE name = ? AND conn = ?", key, s.id)
		if err == nil {
			err = s.conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", key).Scan(&r)
		}
		if err != nil || !r.Valid || r.Int64 != 1 {
			b.forgetHolder(key, s.id)
			b.discard(s, key)
			return
		}
		b.release(s)
	}()
}

// Start creates holderTable and the fencing tables, for
// sqlstore.LockStarter. A holder table made here and now has lost no rows,
// so it gets its sentinel at once. A holder table an older gomogile made
// gets its token column, and a sentinel from before epochs a first epoch:
// its tokens were in gomogile_fence, all far below the first floor.
func (b *lockBackend) Start(ctx context.Context) error {
	if err := b.checkCluster(ctx); err != nil {
		return err
	}
	for _, ddl := range []string{
		"CREATE TABLE IF NOT EXISTS " + fenceEpochTable + " (\n\tid INT NOT NULL PRIMARY KEY,\n\tepoch BIGINT NOT NULL\n) ENGINE=InnoDB",
		"CREATE TABLE IF NOT EXISTS " + fenceStripeTable + " (\n\tid INT NOT NULL PRIMARY KEY\n) ENGINE=InnoDB",
	} {
		if _, err := b.admin.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("mysql: create the fencing tables: %w", err)
		}
	}
	var stripes int
	if err := b.admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+fenceStripeTable).Scan(&stripes); err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	if stripes < fenceStripes {
		if err := fillStripes(ctx, b.admin); err != nil {
			return fmt.Errorf("mysql: %w", err)
		}
	}
	var n, cols int
	if err := b.admin.QueryRowContext(ctx, "SELECT COUNT(*), (SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'token') FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", holderTable, holderTable).Scan(&n, &cols); err != nil {
		return fmt.Errorf("mysql: look for %s: %w", holderTable, err)
	}
	if n == 0 {
		if _, err := b.admin.ExecContext(ctx, holderTableDDL); err != nil {
			return fmt.Errorf("mysql: create %s: %w", holderTable, err)
		}
		if err := newFenceEpoch(ctx, b.admin); err != nil {
			return fmt.Errorf("mysql: %w", err)
		}
		return nil
	}
	if cols == 0 {
		_, err := b.admin.ExecContext(ctx, "ALTER TABLE "+holderTable+" ADD COLUMN token BIGINT NOT NULL DEFAULT 0")
		if err != nil && mysqlErrno(err) != erDupFieldName {
			return fmt.Errorf("mysql: add %s.token: %w", holderTable, err)
		}
	}
	var old int
	if err := b.admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+holderTable+" WHERE name = '' AND token < ?", int64(1)<<sqlstore.FenceEpochShift).Scan(&old); err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	if old > 0 {
		if err := newFenceEpoch(ctx, b.admin); err != nil {
			return fmt.Errorf("mysql: %w", err)
		}
	}
	return b.sweepHolders(ctx)
}

var _ sqlstore.LockStarter = (*lockBackend)(nil)

// sweepHolders keeps holderTable (a MEMORY table, bounded by the server's
// max_heap_table_size) from filling up with the rows of dead holdings
// whose names are never locked again: a row whose session is gone from the
// server is stamped as first seen free now, and a row seen free more than
// a minute ago (its grace long over) is deleted. Each Store's Start runs
// it; a failure only leaves the rows for the next one.
func (b *lockBackend) sweepHolders(ctx context.Context) error {
	_, err := b.admin.ExecContext(ctx, "UPDATE "+holderTable+" SET seen_free = UNIX_TIMESTAMP(NOW(6)) WHERE seen_free IS NULL AND name <> '' AND conn NOT IN (SELECT ID FROM information_schema.PROCESSLIST)")
	if err == nil {
		_, err = b.admin.ExecContext(ctx, "DELETE FROM "+holderTable+" WHERE name <> '' AND seen_free < UNIX_TIMESTAMP(NOW(6)) - 60")
	}
	if err != nil {
		return fmt.Errorf("mysql: sweep %s: %w", holderTable, err)
	}
	return nil
}

// errLockNull is GET_LOCK's NULL: the session was killed mid-wait, or the
// server ran out of memory.
var errLockNull = errors.New("GET_LOCK returned NULL (session killed?)")

// holderLookFrom reads what claim needs of holderTable (a holderLook):
// the row of the name (the argument), if any, the server's clock, and
// whether the sentinel is there.
const holderLookFrom = "h.conn, h.seen_free, UNIX_TIMESTAMP(NOW(6)), EXISTS (SELECT 1 FROM " + holderTable + " WHERE name = '') " +
	"FROM (SELECT 1) AS one LEFT JOIN " + holderTable + " AS h ON h.name = ?"

// getLockQuery runs one GET_LOCK and, in the same query after it, the
// holder look: after the grant, so that no holding whose row was written
// before it goes unseen.
const getLockQuery = "SELECT GET_LOCK(?, ?) INTO @gomogile_got; SELECT @gomogile_got, " + holderLookFrom

// getLockClaimQuery is getLockQuery and, where the look finds the name
// released cleanly (or never held) and the sentinel there, claim's
// statements, all in one round trip: the usual grant, which claim would
// make at once without waiting for anything. The look goes into session
// variables before the claim writes its row, so the answer is what
// getLockQuery's would have been, followed by claimQuery's. Where the
// look is anything else, or GET_LOCK did not grant, the stripe's condition
// is false before any row is read (MySQL and MariaDB fold a session
// variable's comparison to a constant: "Impossible WHERE"), so a refused
// try takes no row lock and waits for no fenced write; the writes are then
// no-ops, and the caller carries on as after getLockQuery.
var getLockClaimQuery = "SELECT GET_LOCK(?, ?) INTO @gomogile_got; " +
	"SELECT " + holderLookFrom + " INTO @gomogile_conn, @gomogile_seen, @gomogile_now, @gomogile_complete; " +
	claimStatements(" AND @gomogile_got = 1 AND @gomogile_conn IS NULL AND @gomogile_complete = 1") +
	"@gomogile_got, @gomogile_conn, @gomogile_seen, @gomogile_now, @gomogile_complete, @gomogile_stripe, @gomogile_rows, LAST_INSERT_ID()"

// getLock runs getLockQuery, or with withClaim getLockClaimQuery; fence is
// the grant's fencing token where the latter made the claim, else 0.
func (s *session) getLock(ctx context.Context, key string, secs int64, withClaim bool) (got bool, look holderLook, fence int64, err error) {
	var g sql.NullInt64
	if withClaim {
		var stripe, rows, token sql.NullInt64
		sent := time.Now()
		err = s.conn.QueryRowContext(ctx, getLockClaimQuery, key, secs, key, fenceStripe(key), key, s.id).
			Scan(&g, &look.conn, &look.seenFree, &look.now, &look.complete, &stripe, &rows, &token)
		if err == nil && g.Valid && g.Int64 == 1 && stripe.Int64 == 1 && rows.Int64 == 1 && token.Int64 > 0 {
			s.lastOK = sent
			fence = token.Int64
		}
	} else {
		err = s.conn.QueryRowContext(ctx, getLockQuery, key, secs, key).
			Scan(&g, &look.conn, &look.seenFree, &look.now, &look.complete)
	}
	switch {
	case err != nil:
		return false, look, 0, err
	case !g.Valid:
		return false, look, 0, errLockNull
	}
	return g.Int64 == 1, look, fence, nil
}

// session returns a free session or opens one; reused tells which.
func (b *lockBackend) session(ctx context.Context) (s *session, reused bool, err error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, false, store.ErrClosed
	}
	if n := len(b.free); n > 0 {
		s = b.free[n-1]
		b.free = b.free[:n-1]
	}
	b.mu.Unlock()
	if s != nil {
		return s, true, nil
	}
	s, err = b.newSession(ctx)
	return s, false, err
}

func (b *lockBackend) newSession(ctx context.Context) (*session, error) {
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	s := &session{conn: conn}
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&s.id); err != nil {
		s.close(true)
		return nil, err
	}
	// The Galera cluster's size comes along at no cost: a server that
	// restarted into a cluster since Start is caught here.
	var up int64
	size := 0
	err = showGlobal(ctx, conn, "STATUS", []string{"Uptime", "wsrep_cluster_size"}, func(name, v string) {
		if name == "uptime" {
			up, _ = strconv.ParseInt(v, 10, 64)
		} else {
			size, _ = strconv.Atoi(v)
		}
	})
	if err == nil && !b.ignoreCluster && size > 1 {
		err = b.refuseLocks(size)
	}
	if err != nil {
		s.close(true)
		return nil, err
	}
	if size == 1 && !b.ignoreCluster {
		b.startClusterWatch()
	}
	s.boot = time.Now().Add(-time.Duration(up) * time.Second)
	if b.dialer != nil {
		if nc := b.dialer.take(s.id); nc != nil {
			s.sock, s.peer = nc, newPeerWatch(nc)
		}
	}
	return s, nil
}

// release puts a session known to hold no lock on the free list, dropping
// sessions idle for long.
func (b *lockBackend) release(s *session) {
	now := time.Now()
	s.idle = now
	var stale []*session
	b.mu.Lock()
	keep := b.free[:0]
	for _, f := range b.free {
		if now.Sub(f.idle) > idleFor {
			stale = append(stale, f)
		} else {
			keep = append(keep, f)
		}
	}
	b.free = keep
	if !b.closed && len(b.free) < maxIdle {
		b.free = append(b.free, s)
		s = nil
	}
	b.mu.Unlock()
	for _, f := range stale {
		f.close(false)
	}
	if s != nil {
		s.close(false)
	}
}

// discard closes a session that may hold a lock or is broken, without
// returning it anywhere. Given the server name of the lock the session was
// taking or holding, it also KILLs the session from the Store's pool, for
// when the client side of the connection is already gone (a cancelled or
// cut query) but the server's side may live on, waiting in GET_LOCK or just
// granted it. The caller waits for the KILL at most killWait: a healthy
// server answers in a round trip, so the lock is free when the call that
// gave up on it returns, while a server the Store cannot reach (a
// partition) would hold the call past its deadline for a KILL that cannot
// arrive anyway. The rest runs on, bounded by killTimeout; Close waits for
// it (b.wg). Nobody believes they hold a lock left to a KILL in flight, so
// only the next grant can be later for it, never doubled.
//
// After the KILL the session's holderTable row, if any, is deleted: the
// session's holding is over and was nobody's, or its holder has given it
// up. Callers that delete the row before the close still need this: a
// claim's REPLACE that the server had read before the client gave up may
// run after their DELETE, and left there it would make the next grant
// wait out handoffGrace for nobody.
func (b *lockBackend) discard(s *session, killKey string) {
	s.close(true)
	if killKey == "" {
		return
	}
	done := make(chan struct{})
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer close(done)
		b.killSession(killKey, s.id)
		b.forgetHolder(killKey, s.id)
	}()
	t := time.NewTimer(killWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
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

// KillSession KILLs, from the Store's pool, the session pinned to l, as an
// operator would (sqlstore.LockFaults); its watcher then reports the loss.
func (b *lockBackend) KillSession(ctx context.Context, l sqlstore.BackendLock) error {
	ml, ok := l.(*lock)
	if !ok || ml.b != b {
		return fmt.Errorf("mysql: kill lock session: %T is not a lock of this backend", l)
	}
	if _, err := b.admin.ExecContext(ctx, "KILL "+strconv.FormatUint(ml.sessionID(), 10)); err != nil {
		return fmt.Errorf("mysql: kill lock session: %w", err)
	}
	return nil
}

// Crash is crash, for sqlstore.LockFaults.
func (b *lockBackend) Crash() { b.crash() }

var _ sqlstore.LockFaults = (*lockBackend)(nil)

// crash stops every watcher and drops every session without RELEASE_LOCK
// or even a polite COM_QUIT where the socket is known, as a dying process
// would; the server frees the locks when it sees the sockets close. For
// fault drills (Crash).
func (b *lockBackend) crash() {
	b.mu.Lock()
	b.closed = true
	b.stop()
	held := b.held
	b.held = make(map[*lock]struct{})
	free := b.free
	b.free = nil
	b.mu.Unlock()
	for l := range held {
		l.mu.Lock()
		l.stopWatcher()
		l.state = lockLost
		l.mu.Unlock()
		if l.s.sock != nil {
			_ = l.s.sock.Close()
		}
		b.discard(l.s, "")
	}
	for _, s := range free {
		b.discard(s, "")
	}
	b.calls.Wait()
	b.wg.Wait()
	b.db.Close()
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

const (
	lockHeld = iota
	lockReleased
	lockLost
)

// lock is one held GET_LOCK and the watcher of its session.
type lock struct {
	b     *lockBackend
	name  string
	key   string
	s     *session
	fence int64 // the grant's fencing token, bumped by claim

	lost     chan struct{}
	lostOnce sync.Once
	stop     chan struct{} // closed to stop the watcher
	done     chan struct{} // closed by the watcher on exit
	stopOnce sync.Once

	mu    sync.Mutex // serialises Release
	state int
}

var _ sqlstore.FencedLock = (*lock)(nil)

func (l *lock) Name() string { return l.name }

func (l *lock) FenceToken() int64 { return l.fence }

func (l *lock) Lost() <-chan struct{} { return l.lost }

// sessionID is the CONNECTION_ID of the session holding the lock.
func (l *lock) sessionID() uint64 { return l.s.id }

func (l *lock) markLost() { l.lostOnce.Do(func() { close(l.lost) }) }

func (l *lock) stopWatcher() {
	l.stopOnce.Do(func() {
		close(l.stop)
		if l.s.peer != nil {
			l.s.peer.interrupt()
		}
	})
	<-l.done
}

// watch keeps an eye on the lock's session. Where the socket can be
// watched it waits on it, and the server closing it (KILL, shutdown,
// wait_timeout) fires Lost at once; in any case it asks the server every
// watchEvery whether the session still owns the lock (IS_USED_LOCK), which
// catches a server that stopped answering. A failed, late or wrong answer
// means exclusivity can no longer be vouched for: the session is closed
// (so the server frees whatever it still holds) and Lost fires. The watcher
// never shares the connection: Release stops it before using the session.
func (l *lock) watch() {
	defer l.b.wg.Done()
	defer close(l.done)
	var t *time.Timer
	if l.s.peer == nil {
		t = time.NewTimer(watchEvery)
		defer t.Stop()
	}
	for {
		ev := peerQuiet
		if l.s.peer != nil {
			ev = l.s.peer.wait(watchEvery, l.stop)
		} else {
			t.Reset(watchEvery)
			select {
			case <-t.C:
			case <-l.stop:
			}
		}
		select {
		case <-l.stop:
			return
		case <-l.b.refusedCh:
			// The server's cluster grew: whatever the session still
			// holds, another node's session may hold too.
			l.lose()
			return
		default:
		}
		if ev == peerClosed {
			l.lose()
			return
		}
		// After a quiet period, or unsolicited bytes (a server's last
		// words are an error packet): the ping reads them, or confirms.
		// The answer must come within watchEvery + pingTimeout of the last
		// one's question, not of this one's: handoffGrace, what a grant
		// after a session ended underneath its holder waits, counts on it.
		sent := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), l.s.lastOK.Add(watchEvery+l.b.pingTimeout))
		var owner sql.NullInt64
		err := l.s.conn.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", l.key).Scan(&owner)
		cancel()
		if err != nil || !owner.Valid || uint64(owner.Int64) != l.s.id {
			l.lose()
			return
		}
		l.s.lastOK = sent
	}
}

// lose drops the session, closing every descriptor of its socket so the
// server sees it end and frees the lock, fires Lost, and then, as a
// backstop for a server that still sees the session (the FIN lost in a
// partition, or stuck behind a stalled connection), KILLs it from the
// Store's pool where that pool can reach the server.
func (l *lock) lose() {
	l.s.close(true)
	l.markLost()
	// Off the watcher, so Release after Lost never waits for it; Close
	// waits for it (b.wg) before the pools close.
	l.b.wg.Add(1)
	go func() {
		defer l.b.wg.Done()
		// The row first: it is one short statement and what the next
		// grant reads, whereas the KILL is a backstop that may take a
		// PROCESSLIST scan, and a next grant finding the row waits out
		// handoffGrace for a holder that already knows.
		l.b.forgetHolder(l.key, l.s.id)
		l.b.killSession(l.key, l.s.id)
	}()
}

// discardLater is discard (with its KILL) and forgetHolder off the
// caller's path; Close waits for it (b.wg).
func (b *lockBackend) discardLater(s *session, key string) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		// The row before the session: while the session lives it keeps
		// the lock, so the next grant cannot find the row of this grant
		// nobody was handed (and discard deletes it again after the KILL).
		b.forgetHolder(key, s.id)
		b.discard(s, key)
	}()
}

// forgetHolderLater is forgetHolder off the caller's path (a Lock that
// failed must return by its deadline); Close waits for it (b.wg).
func (b *lockBackend) forgetHolderLater(key string, id uint64) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.forgetHolder(key, id)
	}()
}

// forgetHolder deletes, from the Store's pool, the holderTable row of a
// holding whose Lost has fired: its holder knows, so the next grant need
// not wait for it to learn. Best effort: a row left behind costs the next
// grant handoffGrace, nothing more.
func (b *lockBackend) forgetHolder(key string, id uint64) {
	if b.admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	_, _ = b.admin.ExecContext(ctx, "DELETE FROM "+holderTable+" WHERE name = ? AND conn = ?", key, id)
}

// killSession KILLs session id if it still holds key or is waiting for it
// in GET_LOCK. The check keeps a KILL that arrives after a server restart
// (connection ids start again from 1) from ending a stranger's session: an
// unrelated session with the same id would also have to hold, or be
// waiting for, this very lock. Both statements are bounded by killTimeout;
// failing, they leave the lock to the server's wait_timeout.
func (b *lockBackend) killSession(key string, id uint64) {
	if b.admin == nil || id == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	var n int
	err := b.admin.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.PROCESSLIST
		WHERE ID = ? AND (IS_USED_LOCK(?) = ID OR INFO LIKE ?)`,
		id, key, "SELECT GET_LOCK('"+key+"'%").Scan(&n)
	if err != nil || n == 0 {
		return
	}
	// 1094 (unknown thread: it ended meanwhile) is the usual failure, and
	// nothing more can be done about any other.
	_, _ = b.admin.ExecContext(ctx, "KILL "+strconv.FormatUint(id, 10))
	// KILL returns once the session is told; a statement it is running
	// may still finish. Wait until it is gone, so a holder-row DELETE
	// made after this cannot be overtaken by that statement's REPLACE.
	for ctx.Err() == nil {
		var left int
		if err := b.admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&left); err != nil || left == 0 {
			return
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// Release gives the lock back with RELEASE_LOCK on its own session. It runs
// to completion even when ctx is already done (bounded by releaseTimeout):
// abandoning it half way would only close the session, which frees the lock
// anyway, so honouring ctx would gain nothing and lose the answer. A lock
// whose session died, which the server no longer attributes to it, or whose
// RELEASE_LOCK failed in any way (so that holding it to the end cannot be
// vouched for) is reported as store.ErrLockLost, every time, with the
// driver's error beside it where there is one; in every case the lock is
// no longer held when Release returns, or its session is closed and KILLed
// so the server frees it.
func (l *lock) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.state {
	case lockReleased:
		return nil
	case lockLost:
		return store.ErrLockLost
	}
	l.stopWatcher()
	defer l.b.forget(l)
	select {
	case <-l.lost:
		l.state = lockLost
		l.b.discard(l.s, "")
		return store.ErrLockLost
	default:
	}
	// Not cut short by the caller's cancel (half a release would cost the
	// session), but within its deadline: a release the server does not
	// answer in time ends as a failed one, with the KILL below.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if dl, ok := ctx.Deadline(); ok {
		var cancelDl context.CancelFunc
		rctx, cancelDl = context.WithDeadline(rctx, dl)
		defer cancelDl()
	}
	var r sql.NullInt64
	// The row first: once the lock is free, the next grant must find a
	// clean release, not a holding that ended underneath its holder.
	err := l.s.conn.QueryRowContext(rctx, "DELETE FROM "+holderTable+" WHERE name = ? AND conn = ?; SELECT RELEASE_LOCK(?)",
		l.key, l.s.id, l.key).Scan(&r)
	switch {
	case err != nil && sessionGone(err):
		// The session is gone, and with it the lock, possibly before this
		// call: whoever relied on holding it must hear so. Its row, if
		// the DELETE did not run, is nobody's to wait for.
		l.state = lockLost
		l.b.discard(l.s, "")
		l.markLost()
		l.b.forgetHolderLater(l.key, l.s.id)
		return fmt.Errorf("%w: mysql: RELEASE_LOCK: %w", store.ErrLockLost, err)
	case err != nil:
		// A server error: whether the lock was still this session's is
		// unknown, and the KILL makes sure it is nobody's.
		l.state = lockLost
		l.b.discard(l.s, l.key)
		l.markLost()
		return fmt.Errorf("%w: mysql: RELEASE_LOCK: %w", store.ErrLockLost, err)
	case !r.Valid || r.Int64 != 1:
		// NULL: no such lock; 0: another session holds it.
		l.state = lockLost
		l.b.discard(l.s, "")
		l.markLost()
		return store.ErrLockLost
	}
	l.state = lockReleased
	l.b.release(l.s)
	return nil
}

func (b *lockBackend) forget(l *lock) {
	b.mu.Lock()
	delete(b.held, l)
	b.mu.Unlock()
}

// canonicalDatabase is the name lock names are derived from: the server's
// own spelling, folded to lower case where the server folds table names
// (lower_case_table_names 1 or 2), so two DSNs naming one database in
// different cases share one lock namespace.
func canonicalDatabase(ctx context.Context, db *sql.DB) (string, error) {
	var name sql.NullString
	var lctn int
	if err := db.QueryRowContext(ctx, "SELECT DATABASE(), @@lower_case_table_names").Scan(&name, &lctn); err != nil {
		return "", err
	}
	if !name.Valid || name.String == "" {
		return "", fmt.Errorf("%w: no database selected", store.ErrBadDSN)
	}
	if lctn != 0 {
		return strings.ToLower(name.String), nil
	}
	return name.String, nil
}
