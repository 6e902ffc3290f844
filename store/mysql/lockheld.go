package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

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

var _ store.LockGrant = (*lock)(nil)

func (l *lock) Name() string { return l.name }

func (l *lock) Token() int64 { return l.fence }

func (l *lock) Lost() <-chan struct{} { return l.lost }

// sessionID is the CONNECTION_ID of the session holding the lock.
func (l *lock) sessionID() uint64 { return l.s.id }

func (l *lock) markLost() { l.lostOnce.Do(func() { close(l.lost) }) }

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
	rctx, cancel := releaseContext(ctx)
	defer cancel()
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

// releaseContext bounds a Release: not cut short by the caller's cancel
// (half a release would cost the session), but within its deadline: a
// release the server does not answer in time ends as a failed one, with
// the KILL (Release's server-error case).
func releaseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	dl, ok := ctx.Deadline()
	if !ok {
		return rctx, cancel
	}
	rctx, cancelDl := context.WithDeadline(rctx, dl)
	return rctx, func() {
		cancelDl()
		cancel()
	}
}

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
