package sqlite

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/proclock"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// These tests put a fault-injecting database/sql driver between the shared
// layer and a real SQLite database, to reach the paths a network database
// takes: an acknowledgement lost after COMMIT, and conflicts that roll a
// transaction back.

var (
	errAckLost = errors.New("faults: connection lost after COMMIT")
	errBusy    = errors.New("faults: conflict, transaction rolled back")
	errDropped = errors.New("faults: connection lost before the statement ran")
)

type faults struct {
	ackLost   atomic.Int32 // COMMITs that apply and then report errAckLost
	busyAtEnd atomic.Int32 // COMMITs that roll back and report errBusy
	busyExec  atomic.Int32 // statements in a transaction that fail with errBusy
	dropped   atomic.Int32 // statements, in a transaction or not, that fail with errDropped
	// insertLost: autocommit INSERTs into tempfile that apply and then
	// fail with errDropped, as when the connection breaks before the reply.
	insertLost atomic.Int32
	// refused, while set, makes the database unreachable: a connection of
	// the pool is found dead before any statement is written to it
	// (driver.ErrBadConn), and a new one fails with dialErr, a real
	// refused dial.
	refused atomic.Bool
	dialErr error
	// beforeExec, if set, runs before each statement on its connection,
	// to play a competing tracker's write at a chosen point.
	beforeExec func(ctx context.Context, c fullConn, q string, args []sqldriver.NamedValue)
}

// take uses up one fault of a counter.
func take(c *atomic.Int32) bool {
	for {
		n := c.Load()
		if n <= 0 {
			return false
		}
		if c.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

type faultDriver struct {
	f   *faults
	dsn string
}

func (d faultDriver) Open(string) (sqldriver.Conn, error) { return d.Connect(context.Background()) }
func (d faultDriver) Connect(ctx context.Context) (sqldriver.Conn, error) {
	if d.f.refused.Load() {
		return nil, d.f.dialErr
	}
	c, err := (&msqlite.Driver{}).Open(d.dsn)
	if err != nil {
		return nil, err
	}
	return &faultConn{c: c.(fullConn), f: d.f}, nil
}
func (d faultDriver) Driver() sqldriver.Driver { return d }

type fullConn interface {
	sqldriver.Conn
	sqldriver.ConnBeginTx
	sqldriver.ExecerContext
	sqldriver.QueryerContext
}

type faultConn struct {
	c    fullConn
	f    *faults
	inTx bool
}

func (c *faultConn) Prepare(q string) (sqldriver.Stmt, error) { return c.c.Prepare(q) }
func (c *faultConn) Close() error                             { return c.c.Close() }
func (c *faultConn) Begin() (sqldriver.Tx, error) {
	return c.BeginTx(context.Background(), sqldriver.TxOptions{})
}
func (c *faultConn) BeginTx(ctx context.Context, o sqldriver.TxOptions) (sqldriver.Tx, error) {
	if c.f.refused.Load() {
		return nil, sqldriver.ErrBadConn
	}
	tx, err := c.c.BeginTx(ctx, o)
	if err != nil {
		return nil, err
	}
	c.inTx = true
	return &faultTx{tx: tx, c: c}, nil
}
func (c *faultConn) ExecContext(ctx context.Context, q string, args []sqldriver.NamedValue) (sqldriver.Result, error) {
	if c.f.refused.Load() {
		return nil, sqldriver.ErrBadConn
	}
	if c.inTx && take(&c.f.busyExec) {
		return nil, errBusy
	}
	if take(&c.f.dropped) {
		return nil, errDropped
	}
	if c.f.beforeExec != nil {
		c.f.beforeExec(ctx, c.c, q, args)
	}
	res, err := c.c.ExecContext(ctx, q, args)
	if err == nil && !c.inTx && strings.HasPrefix(q, "INSERT INTO tempfile") && take(&c.f.insertLost) {
		return nil, errDropped
	}
	return res, err
}
func (c *faultConn) QueryContext(ctx context.Context, q string, args []sqldriver.NamedValue) (sqldriver.Rows, error) {
	if c.f.refused.Load() {
		return nil, sqldriver.ErrBadConn
	}
	if take(&c.f.dropped) {
		return nil, errDropped
	}
	return c.c.QueryContext(ctx, q, args)
}

type faultTx struct {
	tx sqldriver.Tx
	c  *faultConn
}

func (t *faultTx) Commit() error {
	t.c.inTx = false
	if take(&t.c.f.busyAtEnd) {
		if err := t.tx.Rollback(); err != nil {
			return err
		}
		return errBusy
	}
	if err := t.tx.Commit(); err != nil {
		return err
	}
	if take(&t.c.f.ackLost) {
		return errAckLost
	}
	return nil
}
func (t *faultTx) Rollback() error { t.c.inTx = false; return t.tx.Rollback() }

// faultDialect is SQLite's, reading the injected errors as a network
// database's driver would report them.
type faultDialect struct{ Dialect }

func (d faultDialect) Classify(err error) sqlstore.ErrorKind {
	switch {
	case errors.Is(err, errAckLost), errors.Is(err, errDropped):
		return sqlstore.ErrKindConnLost
	case errors.Is(err, errBusy):
		return sqlstore.ErrKindRetry
	}
	return d.Dialect.Classify(err)
}

func openFaulty(t *testing.T) (*sqlstore.Store, *faults) {
	t.Helper()
	f := &faults{}
	path := filepath.Join(t.TempDir(), "faults.db")
	db := sql.OpenDB(faultDriver{f: f, dsn: path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"})
	s, err := sqlstore.New(t.Context(), sqlstore.Config{
		DB:           db,
		Dialect:      faultDialect{},
		Locks:        newLockBackend(&proclock.Table{}),
		Capabilities: capabilities,
	})
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, f
}

// A commit whose acknowledgement is lost is reported as an unknown
// outcome, and the tracker's retry returns what the applied commit did.
func TestStore_CommitFileAckLost(t *testing.T) {
	s, f := openFaulty(t)
	ctx := t.Context()
	d, err := s.CreateDomain(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(key string) int64 {
		fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		return fid
	}
	old := mk("k")
	if _, err := s.CommitFile(ctx, store.Commit{Fid: old, DomainID: d.ID, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	fid := mk("k")
	c := store.Commit{Fid: fid, DomainID: d.ID, Key: "k", Length: 7, DevIDs: []int{1, 2}, Replicate: true}
	f.ackLost.Store(1)
	_, err = s.CommitFile(ctx, c)
	if !errors.Is(err, store.ErrUnknownOutcome) || !errors.Is(err, errAckLost) {
		t.Fatalf("CommitFile with a lost acknowledgement = %v; want ErrUnknownOutcome wrapping the driver error", err)
	}
	res, err := s.CommitFile(ctx, c)
	if err != nil {
		t.Fatalf("retry of the applied commit: %v", err)
	}
	want := store.File{Fid: fid, DomainID: d.ID, Key: "k", Length: 7, DevCount: 2}
	if res.File != want || res.ReplacedFid != old {
		t.Errorf("retry = %+v; want {File:%+v ReplacedFid:%d}", res, want, old)
	}
	for q, n := range map[store.Queue]int64{store.QueueReplicate: 1, store.QueueDelete: 1} {
		if got, err := s.QueueLength(ctx, q); err != nil || got != n {
			t.Errorf("QueueLength(%s) = %d, %v; want %d", q, got, err, n)
		}
	}
}

// Conflicts roll the whole transaction back and run it again, so the write
// applies exactly once.
func TestStore_TxRetriesConflicts(t *testing.T) {
	s, f := openFaulty(t)
	ctx := t.Context()
	f.busyExec.Store(2)
	f.busyAtEnd.Store(2)
	n, err := s.IncrServerSetting(ctx, "n", 5)
	if err != nil || n != 5 {
		t.Fatalf("IncrServerSetting through 4 conflicts = %d, %v; want 5", n, err)
	}
	if v, err := s.ServerSetting(ctx, "n"); err != nil || v != "5" {
		t.Errorf("setting after retries = %q, %v; want 5", v, err)
	}
	if f.busyExec.Load() != 0 || f.busyAtEnd.Load() != 0 {
		t.Errorf("faults left unused: exec %d, commit %d; want the retries to have met them all", f.busyExec.Load(), f.busyAtEnd.Load())
	}
	// Endless conflicts end in an error, not a hang.
	f.busyAtEnd.Store(1000)
	if _, err := s.IncrServerSetting(ctx, "n", 1); !errors.Is(err, errBusy) {
		t.Errorf("IncrServerSetting under endless conflicts = %v; want the conflict error", err)
	}
	f.busyAtEnd.Store(0)
	if v, err := s.ServerSetting(ctx, "n"); err != nil || v != "5" {
		t.Errorf("setting after a failed increment = %q, %v; want 5", v, err)
	}
}

// Lease claims every row it read with one UPDATE, however many: its cost
// stays four round trips on a server backend (BEGIN, the locking read, the
// UPDATE, COMMIT), where one UPDATE per row made Lease(100) a hundred.
func TestStore_LeaseClaimsInOneStatement(t *testing.T) {
	s, f := openFaulty(t)
	ctx := t.Context()
	var entries []store.QueueEntry
	for i := range 100 {
		entries = append(entries, store.QueueEntry{Fid: int64(i + 1)})
	}
	if err := s.Enqueue(ctx, store.QueueReplicate, entries...); err != nil {
		t.Fatal(err)
	}
	var updates atomic.Int64
	f.beforeExec = func(ctx context.Context, c fullConn, q string, args []sqldriver.NamedValue) {
		if strings.HasPrefix(q, "UPDATE file_to_replicate") {
			updates.Add(1)
		}
	}
	items, err := s.Lease(ctx, store.QueueReplicate, 100, time.Hour)
	if err != nil || len(items) != 100 {
		t.Fatalf("Lease(100) = %d items, %v; want 100", len(items), err)
	}
	for i, it := range items {
		if it.Fid != int64(i+1) {
			t.Fatalf("Lease(100) item %d is fid %d; want %d (due order)", i, it.Fid, i+1)
		}
	}
	if n := updates.Load(); n != 1 {
		t.Errorf("Lease(100) ran %d UPDATEs; want 1", n)
	}
}

// A reservation whose INSERT applied but whose reply was lost is reported
// as of unknown outcome, not retried under another fid behind the caller's
// back (the torture program counted such rows as tempfiles nobody made).
func TestStore_CreateTempFileLostReplyIsUnknown(t *testing.T) {
	s, f := openFaulty(t)
	ctx := t.Context()
	d, err := s.CreateDomain(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	f.insertLost.Store(1)
	if _, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k"}); !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("CreateTempFile with its reply lost: %v; want ErrUnknownOutcome", err)
	}
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TempFile(ctx, fid-1); err != nil {
		t.Errorf("TempFile(%d), the reservation whose reply was lost: %v; want it present (it applied)", fid-1, err)
	}
}

// A connection lost before COMMIT is retried on a new connection; when it
// keeps failing, the caller gets store.ErrUnavailable (with the driver's
// error) and nothing applied — never a bare driver error.
func TestStore_ConnLostIsUnavailable(t *testing.T) {
	s, f := openFaulty(t)
	ctx := t.Context()
	f.dropped.Store(2)
	if n, err := s.IncrServerSetting(ctx, "n", 1); err != nil || n != 1 {
		t.Fatalf("IncrServerSetting through 2 lost connections = %d, %v; want 1", n, err)
	}
	f.dropped.Store(1000)
	err := s.SetServerSetting(ctx, "n", "7")
	if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, errDropped) {
		t.Errorf("SetServerSetting with the database unreachable = %v; want ErrUnavailable wrapping the driver error", err)
	}
	_, err = s.ServerSetting(ctx, "n")
	if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, errDropped) {
		t.Errorf("ServerSetting with the database unreachable = %v; want ErrUnavailable wrapping the driver error", err)
	}
	if _, err := s.Lock(ctx, "l", 0); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Lock whose token cannot be written = %v; want ErrUnavailable", err)
	}
	f.dropped.Store(0)
	if v, err := s.ServerSetting(ctx, "n"); err != nil || v != "1" {
		t.Errorf("setting after the refused write = %q, %v; want 1", v, err)
	}
	// The failed Lock left the name free.
	l, err := s.Lock(ctx, "l", 0)
	if err != nil {
		t.Fatalf("Lock after the database came back: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// With the database unreachable (each pooled connection found dead before
// a statement was written to it, new ones refused), a write fails with
// store.ErrUnavailable, never store.ErrUnknownOutcome, an autocommit
// reservation included, though SQLite's Classify knows nothing of
// networks: the shared layer reads database/sql's and package net's errors
// itself. Nothing applied.
func TestStore_RefusedIsUnavailable(t *testing.T) {
	s, f := openFaulty(t)
	ctx := t.Context()
	d, err := s.CreateDomain(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, f.dialErr = net.Dial("tcp", testdb.ClosedAddr(t)); f.dialErr == nil {
		t.Fatal("dial of a closed port: no error")
	}
	f.refused.Store(true)
	_, tmpErr := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k"})
	_, incrErr := s.IncrServerSetting(ctx, "n", 1)
	for what, err := range map[string]error{"CreateTempFile": tmpErr, "IncrServerSetting": incrErr} {
		if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrUnknownOutcome) || !errors.Is(err, f.dialErr) {
			t.Errorf("%s with connections refused = %v; want ErrUnavailable wrapping the dial's error, not ErrUnknownOutcome", what, err)
		}
	}
	f.refused.Store(false)
	// The first fid of an empty database is 1: the refused call took none.
	if fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k"}); err != nil || fid != 1 {
		t.Errorf("CreateTempFile once the database is back = %d, %v; want 1", fid, err)
	}
	if v, err := s.ServerSetting(ctx, "n"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("setting after the refused increment = %q, %v; want %v", v, err, store.ErrNotFound)
	}
}

// An increment whose COMMIT applied but whose acknowledgement was lost is
// reported as an unknown outcome and not run again by the Store: the
// setting moved once. (IncrServerSetting is not idempotent; a caller that
// retries it after ErrUnknownOutcome adds twice.)
func TestStore_IncrAckLostAppliesOnce(t *testing.T) {
	s, f := openFaulty(t)
	ctx := t.Context()
	f.ackLost.Store(1)
	_, err := s.IncrServerSetting(ctx, "n", 5)
	if !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("IncrServerSetting with a lost acknowledgement = %v; want ErrUnknownOutcome", err)
	}
	if v, err := s.ServerSetting(ctx, "n"); err != nil || v != "5" {
		t.Errorf("setting after the ambiguous increment = %q, %v; want 5 (applied once)", v, err)
	}
}
