package postgres

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
	"github.com/gomogile/gomogile/store/sqlstore/leaselock"
)

// DefaultLockLease is the owner lease when the DSN sets no lock_lease.
const DefaultLockLease = leaselock.DefaultLease

// lockBackend is the lock mechanism (sqlstore.Config.Locks) of one Store: package
// leaselock's machinery running this package's SQL (locksql.go) through
// lockDB.
type lockBackend struct {
	*leaselock.Locks
	db *lockDB
}

func newLockBackend(db *sql.DB, connCfg *pgx.ConnConfig, cfg leaselock.Config) *lockBackend {
	ldb := &lockDB{db: db, connCfg: connCfg}
	return &lockBackend{Locks: leaselock.New(ldb, cfg), db: ldb}
}

// lockDB runs the lease locks' statements: on the pool, on the renewer's
// session (a pgx connection of its own, outside the pool) and on the
// LISTEN session.
type lockDB struct {
	db      *sql.DB
	connCfg *pgx.ConnConfig

	mu        sync.Mutex
	renewPID  uint32 // the newest renewer session's backend PID
	listenPID uint32 // the newest listener session's
}

var (
	_ leaselock.DB            = (*lockDB)(nil)
	_ leaselock.Notifier      = (*lockDB)(nil)
	_ leaselock.SessionKiller = (*lockDB)(nil)
)

func (d *lockDB) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, d.connCfg)
	if err != nil {
		return nil, lockErr(ctx, err)
	}
	return conn, nil
}

func (d *lockDB) Session(ctx context.Context) (leaselock.Session, error) {
	conn, err := d.connect(ctx)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.renewPID = conn.PgConn().PID()
	d.mu.Unlock()
	return renewSession{conn}, nil
}

func (d *lockDB) Acquire(ctx context.Context, name []byte, owner, token int64, lease time.Duration) (leaselock.Attempt, error) {
	var me, open, got, fence int64
	var holder sql.NullInt64
	var dead bool
	err := d.db.QueryRowContext(ctx, acquireSQL, name, owner, token, lease.Microseconds()).Scan(&me, &open, &got, &holder, &dead, &fence)
	if err != nil {
		return leaselock.Attempt{}, lockErr(ctx, err)
	}
	a := leaselock.Attempt{OwnerAlive: me == 1, Open: open == 1, Inserted: got == 1, HolderDead: dead, Fence: fence}
	if holder.Valid {
		a.HolderToken = &holder.Int64
	}
	return a, nil
}

func (d *lockDB) Release(ctx context.Context, name []byte, owner, token int64) (bool, error) {
	var n, notified int64
	if err := d.db.QueryRowContext(ctx, releaseSQL, name, owner, token).Scan(&n, &notified); err != nil {
		return false, lockErr(ctx, err)
	}
	return n == 1, nil
}

// MarkWaited implements leaselock.WaitMarker.
func (d *lockDB) MarkWaited(ctx context.Context, name []byte) (bool, error) {
	res, err := d.db.ExecContext(ctx, markWaitedSQL, name)
	if err != nil {
		return false, lockErr(ctx, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

var _ leaselock.WaitMarker = (*lockDB)(nil)

func (d *lockDB) EvictExpired(ctx context.Context) (int64, error) {
	var n int64
	if err := d.db.QueryRowContext(ctx, evictExpiredSQL).Scan(&n); err != nil {
		return 0, lockErr(ctx, err)
	}
	return n, nil
}

func (d *lockDB) EvictOwner(ctx context.Context, id int64) error {
	var n int64
	if err := d.db.QueryRowContext(ctx, evictOwnerSQL, id).Scan(&n); err != nil {
		return lockErr(ctx, err)
	}
	return nil
}

// Listen opens a session LISTENing on the release channel.
func (d *lockDB) Listen(ctx context.Context) (leaselock.Listener, error) {
	conn, err := d.connect(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		conn.Close(context.Background())
		return nil, lockErr(ctx, err)
	}
	d.mu.Lock()
	d.listenPID = conn.PgConn().PID()
	d.mu.Unlock()
	return listener{conn}, nil
}

// KillSessions terminates the renewer's and the listener's sessions from a
// session of its own.
func (d *lockDB) KillSessions(ctx context.Context) error {
	renew, listen := d.sessionPIDs()
	var ids []int32
	for _, p := range []uint32{renew, listen} {
		if p != 0 {
			ids = append(ids, int32(p))
		}
	}
	conn, err := pgx.ConnectConfig(ctx, d.connCfg)
	if err != nil {
		return fmt.Errorf("postgres: kill lock session: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", ids); err != nil {
		return fmt.Errorf("postgres: kill lock session: %w", err)
	}
	return nil
}

// sessionPIDs are the backend PIDs of the renewer's and listener's sessions
// (0 when absent): the sessions that hold this Store's locks.
func (d *lockDB) sessionPIDs() (renew, listen uint32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.renewPID, d.listenPID
}

// renewSession is the renewer's connection.
type renewSession struct{ conn *pgx.Conn }

func (s renewSession) Register(ctx context.Context, o leaselock.Owner, prev int64, lease time.Duration) (leaselock.Registration, error) {
	var n, freed int64
	var r leaselock.Registration
	err := s.conn.QueryRow(ctx, registerSQL, o.Identity, o.ID, o.Hostname, o.PID, lease.Microseconds(), prev).Scan(&n, &r.LiveUntil, &freed)
	if err != nil {
		return r, lockErr(ctx, err)
	}
	r.Registered = n == 1
	return r, nil
}

func (s renewSession) Renew(ctx context.Context, owner int64, lease time.Duration) (bool, error) {
	tag, err := s.conn.Exec(ctx, renewSQL, owner, lease.Microseconds())
	if err != nil {
		return false, lockErr(ctx, err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s renewSession) EvictExpired(ctx context.Context) (int64, error) {
	var n int64
	if err := s.conn.QueryRow(ctx, evictExpiredSQL).Scan(&n); err != nil {
		return 0, lockErr(ctx, err)
	}
	return n, nil
}

func (s renewSession) Closed() bool { return s.conn.IsClosed() }
func (s renewSession) Close()       { s.conn.Close(context.Background()) }

// listener is the LISTEN session; payloads are hex-encoded names.
type listener struct{ conn *pgx.Conn }

func (l listener) Next(ctx context.Context) (string, error) {
	for {
		n, err := l.conn.WaitForNotification(ctx)
		if err != nil {
			return "", err
		}
		if name, err := hex.DecodeString(n.Payload); err == nil {
			return string(name), nil
		}
	}
}

func (l listener) Close() { l.conn.Close(context.Background()) }

// lockErr maps a driver error of the lock paths onto the store's sentinels:
// the context's error when that is what ended the call (pgx reports it in
// several shapes), store.ErrUnavailable for a connection that failed or
// broke, store.ErrDuplicate for a unique violation; other errors (SQL
// errors: a bug or a damaged schema) as they are. Classification is by
// error type and SQLSTATE, never by text.
func lockErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return err
		}
		return fmt.Errorf("%w: %w", cerr, err)
	}
	switch (Dialect{}).Classify(err) {
	case sqlstore.ErrKindConnLost, sqlstore.ErrKindUnsent:
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	case sqlstore.ErrKindDuplicate:
		return fmt.Errorf("%w: %w", store.ErrDuplicate, err)
	}
	return err
}
