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
