package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"net"
	"strconv"
	"time"

	"github.com/gomogile/gomogile/store"
)

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
