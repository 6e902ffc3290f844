package mysql

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
)

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

// KillSession KILLs, from the Store's pool, the session pinned to l, as an
// operator would (sqlstore.LockFaults); its watcher then reports the loss.
func (b *lockBackend) KillSession(ctx context.Context, l store.LockGrant) error {
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
