package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomogile/gomogile/store"
)

// endOfTime is store.Never as MogileFS stores it in nexttry.
const endOfTime = 2147483647

// OwnSchema lists the tables this package adds to schema 17, in portable SQL.
// New creates them; harnesses may use the list to know every table.
//
// gomogile_counter row "fid" is the last fid handed out, at least every fid
// in file and tempfile (New makes it so), so a fid is never reused even
// after MySQL's AUTO_INCREMENT resets or rows are deleted; the
// rows "dmid", "classid", "hostid" and "devid" are only locked (their value
// counts allocations), so allocators of one kind take turns.
// gomogile_commit remembers which fid a commit replaced, so a retried commit
// returns the result of the one that applied; DeleteFile removes its row.
// gomogile_meta holds facts about the installation: "lock_service", where
// its trackers keep their named locks (claimLockService).
var OwnSchema = []string{
	`CREATE TABLE IF NOT EXISTS gomogile_counter (
	name  VARCHAR(64) NOT NULL PRIMARY KEY,
	value BIGINT NOT NULL
)`,
	`CREATE TABLE IF NOT EXISTS gomogile_commit (
	fid          BIGINT NOT NULL PRIMARY KEY,
	replaced_fid BIGINT NOT NULL
)`,
	`CREATE TABLE IF NOT EXISTS gomogile_meta (
	name  VARCHAR(64) NOT NULL PRIMARY KEY,
	value VARCHAR(255) NOT NULL
)`,
}

// OwnTables names the tables of OwnSchema, and gomogile_fence and
// gomogile_lock_fence, the tables of fencing tokens (the database's own
// locks', an outside lock service's), whose DDL is the dialect's
// (Dialect.Fencing). A dialect
// with volatile tokens (Fencing.NewEpoch) has an epoch counter besides,
// which a harness need not empty: it only ever grows.
var OwnTables = []string{"gomogile_counter", "gomogile_commit", "gomogile_meta", "gomogile_fence", "gomogile_lock_fence"}

// Store implements store.Backend on an SQL database through a Dialect.
type Store struct {
	db    *sql.DB
	batch *sql.DB // Config.Batch, or nil
	d     Dialect
	// locks grants the Store's named locks: the database's own mechanism
	// (Config.Locks) or, when outside is set, the lock service lock_dsn
	// names (Config.LockDSN).
	locks   store.LockService
	outside bool
	caps    store.Capabilities
	close   func() error
	// upgradedOld is Config.UpgradedOldSchema.
	upgradedOld bool
	// existing is Config.Existing.
	existing bool
	// conflictAttempts is conflictAttempts(Config.ConflictAttempts).
	conflictAttempts int
	plan             plan // how the operations with a fast path run here
	// replicas are the read replicas (Config.Replicas), nil without.
	replicas *replicaSet

	closed atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

var _ store.Backend = (*Store)(nil)

// New is the one lifecycle of every SQL backend: it checks and migrates the
// schema of cfg.DB, then starts cfg.Locks (LockStarter), then returns the
// ready Backend (store.Open puts a store.Store in front); Close undoes
// it in reverse (locks, OnClose, DB).
// It fails with store.ErrSchemaMismatch (wrapped) when the database has a
// schema newer than store.SchemaVersion, or older and not upgraded by the
// backend (CheckSchemaVersion). New takes ownership of what cfg holds
// (DB, Batch, Locks, OnClose) from the call on: when it fails, it closes
// them as Close would, so a backend's Open is NewConfig then New.
func New(ctx context.Context, cfg Config) (_ *Store, err error) {
	if cfg.DB == nil || cfg.Dialect == nil || (cfg.Locks == nil) == (cfg.LockDSN == nil) {
		err := fmt.Errorf("sqlstore: New needs DB, Dialect and either Locks or LockDSN: %w", store.ErrInvalid)
		if cfg.DB != nil {
			(&Store{db: cfg.DB, batch: cfg.Batch, locks: cfg.Locks, close: cfg.OnClose}).Close()
		}
		return nil, err
	}
	s := &Store{
		db:    cfg.DB,
		batch: cfg.Batch,
		d:     cfg.Dialect,
		locks: cfg.Locks,
		caps:  cfg.Capabilities,
		close: cfg.OnClose,

		upgradedOld:      cfg.UpgradedOldSchema,
		existing:         cfg.Existing,
		conflictAttempts: conflictAttempts(cfg.ConflictAttempts),
	}
	s.plan = s.newPlan()
	defer func() {
		if err != nil {
			_ = s.Close() // the failure is err; what Close finds is secondary
		}
	}()
	// Every concurrent call beyond the idle limit opens a new connection
	// (a TCP, perhaps TLS, handshake and a server backend) and closes it
	// after: the pool must hold as many as the caller runs calls at once.
	cfg.DB.SetMaxIdleConns(cmp.Or(cfg.MaxIdleConns, store.DefaultMaxIdleConns))
	cfg.DB.SetMaxOpenConns(cfg.MaxOpenConns)
	if cfg.Batch != nil {
		// Every upload's CreateTempFile and CommitFile run on it, as many
		// at once as on the Store's pool.
		cfg.Batch.SetMaxIdleConns(cmp.Or(cfg.MaxIdleConns, store.DefaultMaxIdleConns))
		cfg.Batch.SetMaxOpenConns(cfg.MaxOpenConns)
	}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	if cfg.Replicas != nil {
		s.replicas = newReplicaSet(*cfg.Replicas, cfg.DB, cfg.Dialect)
		s.caps.ReadReplicas = true
	}
	if cfg.LockDSN != nil {
		if err := s.openLockService(ctx, cfg.LockDSN); err != nil {
			return nil, err
		}
		return s, nil
	}
	if err := s.claimLockService(ctx, ownLocks); err != nil {
		return nil, err
	}
	if st, ok := cfg.Locks.(LockStarter); ok {
		if err := st.Start(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// As gives what the Store is built on, for a program that must go below
// the store contract — a tool or test reading the tables beside the Store,
// a harness reaching a lock's session — as Go CDK's As methods do. target
// must be a non-nil pointer to one of:
//
//	*sql.DB            the Store's pool
//	Dialect            its SQL dialect
//	store.LockService  the mechanism granting its named locks (the
//	                   database's own, or the outside lock service)
//
// As sets *target and reports true, or reports false for any other type.
// What is done through them is outside the Store's guarantees: a write
// there bypasses the checks, the fencing and the locks.
func (s *Store) As(target any) bool {
	switch t := target.(type) {
	case **sql.DB:
		*t = s.db
	case *Dialect:
		*t = s.d
	case *store.LockService:
		*t = s.locks
	default:
		return false
	}
	return true
}

// migrate brings the database to schema 17 plus OwnSchema. Every statement
// is idempotent, and each is retried a few times because two Stores starting
// at once on an empty database may trip over each other's CREATE (PostgreSQL
// reports a unique violation in its catalog).
func (s *Store) migrate(ctx context.Context) error {
	have, err := s.schemaVersion(ctx)
	if err != nil {
		return err
	}
	if err := CheckSchemaVersion(have, s.upgradedOld); err != nil {
		return err
	}
	if have == 0 && s.existing {
		return fmt.Errorf("store: check schema: %w: the database holds no MogileFS schema (no schema_version setting); nothing was created in it",
			store.ErrSchemaMismatch)
	}
	stmts := append(append([]string{}, s.d.Schema()...), OwnSchema...)
	stmts = append(stmts, s.d.Fencing().Schema, s.d.Fencing().ServiceSchema)
	for _, q := range stmts {
		if q == "" {
			continue // Fencing.Schema of a backend whose grants keep their own tokens
		}
		if err := s.ddl(ctx, q); err != nil {
			return err
		}
	}
	// A database MogileFS or an older gomogile filled, or a harness
	// emptied, gets the fid allocator's invariant here (see nextFid).
	if err := s.initFidCounter(ctx); err != nil {
		return fmt.Errorf("initialise the fid counter: %w", s.wrap(err))
	}
	if have == store.SchemaVersion {
		return nil
	}
	up := s.d.Upsert("server_settings", []string{"field", "value"}, []string{"field"},
		"value = "+s.d.Excluded("value"))
	err = s.tx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, up, "schema_version", strconv.Itoa(store.SchemaVersion))
		return err
	})
	if err != nil {
		return fmt.Errorf("record schema version: %w", s.wrap(err))
	}
	return nil
}

// CheckSchemaVersion says whether a database whose schema_version is have
// (0: none, a new database) may be opened: one newer than
// store.SchemaVersion is a newer tracker's, and one below it (a MogileFS
// database never upgraded) lacks columns the shared SQL uses, which
// CREATE TABLE IF NOT EXISTS would not add, unless the backend upgraded
// it (upgraded; Config.UpgradedOldSchema); MogileFS's own mogdbsetup
// upgrades it otherwise. A backend that must inspect the schema before
// New (as store/mysql does) calls it first itself.
func CheckSchemaVersion(have int, upgraded bool) error {
	switch {
	case have > store.SchemaVersion:
		return fmt.Errorf("store: check schema: %w: database has version %d, this gomogile knows up to %d",
			store.ErrSchemaMismatch, have, store.SchemaVersion)
	case have > 0 && have < store.SchemaVersion && !upgraded:
		return fmt.Errorf("store: check schema: %w: database has MogileFS schema %d; upgrade it to %d with mogdbsetup first",
			store.ErrSchemaMismatch, have, store.SchemaVersion)
	}
	return nil
}

func (s *Store) ddl(ctx context.Context, q string) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if _, err = s.db.ExecContext(ctx, q); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
		if werr := sleep(ctx, attempt); werr != nil {
			break
		}
	}
	first, _, _ := strings.Cut(strings.TrimSpace(q), "(")
	return fmt.Errorf("migrate schema (%s): %w", strings.TrimSpace(first), s.wrap(err))
}

// schemaVersion is ReadSchemaVersion on the Store's database.
func (s *Store) schemaVersion(ctx context.Context) (int, error) {
	v, err := ReadSchemaVersion(ctx, s.db, s.d)
	return v, s.wrap(err)
}

// ReadSchemaVersion reads the schema_version setting of db's database: 0
// for a database without server_settings or without the row (a new one).
// New checks it (CheckSchemaVersion); a backend that must inspect the
// schema before New (as store/mysql does) reads and checks it first itself.
func ReadSchemaVersion(ctx context.Context, db *sql.DB, d Dialect) (int, error) {
	var v sql.NullString
	err := db.QueryRowContext(ctx, d.Rebind("SELECT value FROM server_settings WHERE field = ?"),
		"schema_version").Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		// The table may not exist yet; tell that apart from a dead
		// database by asking the database something that cannot fail.
		if perr := db.PingContext(ctx); perr != nil {
			return 0, fmt.Errorf("check schema: %w", perr)
		}
		return 0, nil
	}
	if !v.Valid || strings.TrimSpace(v.String) == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v.String))
	if err != nil {
		return 0, fmt.Errorf("store: check schema: %w: schema_version %q is not a number", store.ErrSchemaMismatch, v.String)
	}
	return n, nil
}

// Close releases the Store's locks, then runs the backend's OnClose, then
// closes the database.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		var errs []error
		if s.locks != nil { // nil: New failed to open the lock service
			if err := s.locks.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if s.replicas != nil {
			if err := s.replicas.close(); err != nil {
				errs = append(errs, err)
			}
		}
		if s.close != nil {
			if err := s.close(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := s.db.Close(); err != nil {
			errs = append(errs, err)
		}
		if s.batch != nil {
			if err := s.batch.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("store: close: %w", err)
		}
	})
	if s.closeErr != nil {
		err := s.closeErr
		s.closeErr = nil
		return err
	}
	return nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.wrap(s.db.PingContext(ctx))
}

// Info names the backend and its server version.
func (s *Store) Info(ctx context.Context) (store.Info, error) {
	info := store.Info{Driver: s.d.Name(), Locks: "database", Plan: maps.Clone(s.plan.names)}
	if s.outside {
		info.Locks = s.locks.Describe()
	}
	if s.replicas != nil {
		info.Replicas = s.replicas.status()
	}
	err := s.read(ctx, func() error {
		return s.db.QueryRowContext(ctx, s.d.Rebind(s.d.VersionQuery())).Scan(&info.ServerVersion)
	})
	return info, s.wrap(err)
}

// Capabilities reports what the backend declared.
func (s *Store) Capabilities() store.Capabilities { return s.caps }

// Now is the database clock, in whole seconds.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var now int64
	err := s.read(ctx, func() error {
		var err error
		now, err = s.dbNow(ctx, s.db)
		return err
	})
	if err != nil {
		return time.Time{}, s.wrap(err)
	}
	return time.Unix(now, 0), nil
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) dbNow(ctx context.Context, q querier) (int64, error) {
	var now int64
	err := q.QueryRowContext(ctx, "SELECT "+s.d.UnixNow()).Scan(&now)
	return now, err
}

func (s *Store) exec(ctx context.Context, q querier, query string, args ...any) (sql.Result, error) {
	return q.ExecContext(ctx, s.d.Rebind(query), args...)
}

func (s *Store) execN(ctx context.Context, q querier, query string, args ...any) (int64, error) {
	res, err := q.ExecContext(ctx, s.d.Rebind(query), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *Store) queryRow(ctx context.Context, q querier, query string, args ...any) *sql.Row {
	return q.QueryRowContext(ctx, s.d.Rebind(query), args...)
}

func (s *Store) query(ctx context.Context, q querier, query string, args ...any) (*sql.Rows, error) {
	return q.QueryContext(ctx, s.d.Rebind(query), args...)
}

// exists reports whether query returns a row.
func (s *Store) exists(ctx context.Context, q querier, query string, args ...any) (bool, error) {
	var one int
	err := s.queryRow(ctx, q, query, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// sentinels are the errors of package store the shared layer may already
// have attached; such errors are wrapped without asking the dialect.
var sentinels = []error{
	store.ErrNotFound, store.ErrDuplicate, store.ErrHasFiles, store.ErrHasClasses,
	store.ErrHasDevices, store.ErrInvalid, store.ErrLockTimeout,
	store.ErrLockLost, store.ErrClosed, store.ErrSchemaMismatch, store.ErrUnknownOutcome,
	store.ErrFenced, store.ErrUnavailable, store.ErrNoSpace,
}

func isSentinel(err error) bool {
	for _, e := range sentinels {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// wrap attaches the sentinel a driver error means: store.ErrNotFound,
// store.ErrDuplicate, store.ErrNoSpace for a full database,
// store.ErrUnavailable for a lost connection or one never made (at
// COMMIT, a lost one is already store.ErrUnknownOutcome), store.ErrClosed
// for anything failing because Close ran meanwhile. The store.Store
// (store.New) adds the operation's prefix.
func (s *Store) wrap(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case isSentinel(err), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	case s.closed.Load():
		// Close raced with the call: whatever the driver says (its
		// pool's "database is closed" has no sentinel to match), the
		// cause is the Close.
		return fmt.Errorf("%w: %w", store.ErrClosed, err)
	case errors.Is(err, sql.ErrConnDone):
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	switch s.classify(err) {
	case ErrKindDuplicate:
		return fmt.Errorf("%w: %w", store.ErrDuplicate, err)
	case ErrKindConnLost, ErrKindUnsent:
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	case ErrKindNoSpace:
		return fmt.Errorf("%w: %w", store.ErrNoSpace, err)
	}
	return err
}

// classify is classify with the Store's Dialect.
func (s *Store) classify(err error) ErrorKind { return classify(s.d, err) }

// classify is d's Classify, except that an error NotSent recognises is
// ErrKindUnsent whatever the dialect says: a dialect that knows only its
// own driver's errors still never makes a refused connection an unknown
// outcome.
func classify(d Dialect, err error) ErrorKind {
	if NotSent(err) {
		return ErrKindUnsent
	}
	return d.Classify(err)
}

// invalid reports a refused argument.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{store.ErrInvalid}, args...)...)
}

const maxAttempts = 8

// conflictAttempts is the budget of conflicts for Config.ConflictAttempts
// n: never below maxAttempts.
func conflictAttempts(n int) int { return max(n, maxAttempts) }

// lastAttempt reports whether attempt (counted from 0) that failed with
// err is the last one allowed: the Store's conflictAttempts-th when the
// failure is a conflict, else the maxAttempts-th.
func (s *Store) lastAttempt(err error, attempt int) bool {
	n := maxAttempts
	if s.classify(err) == ErrKindRetry {
		n = s.conflictAttempts
	}
	return attempt >= n-1
}

// retryable reports whether a failed attempt may simply be run again.
func (s *Store) retryable(err error) bool {
	if err == nil || isSentinel(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch s.classify(err) {
	case ErrKindRetry, ErrKindConnLost, ErrKindUnsent:
		return true
	}
	return false
}

// sleep waits a jittered, growing pause before attempt+1.
func sleep(ctx context.Context, attempt int) error {
	base := 2 * time.Millisecond << min(attempt, 6)
	d := base/2 + rand.N(base)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// read runs a read-only step, retrying it when the database was busy.
func (s *Store) read(ctx context.Context, fn func() error) error {
	var err error
	for attempt := 0; ; attempt++ {
		err = fn()
		if !s.retryable(err) || s.lastAttempt(err, attempt) {
			return err
		}
		if serr := sleep(ctx, attempt); serr != nil {
			return err
		}
	}
}

// tx runs fn in a transaction. A conflict (deadlock, serialization failure,
// busy database) or a connection lost before COMMIT rolls back and runs fn
// again from the start; a connection lost at COMMIT is store.ErrUnknownOutcome.
// fn must not keep state across attempts except through its return.
func (s *Store) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.attempts(ctx, func() (bool, error) { return s.try(ctx, fn) })
}

// attempts runs try until it succeeds, fails for good (retry false), or
// has run as many times as lastAttempt allows, pausing between attempts.
func (s *Store) attempts(ctx context.Context, try func() (retry bool, err error)) error {
	var err error
	for attempt := 0; ; attempt++ {
		var retry bool
		retry, err = try()
		if err == nil || !retry || s.lastAttempt(err, attempt) {
			return err
		}
		if serr := sleep(ctx, attempt); serr != nil {
			return err
		}
	}
}

func (s *Store) try(ctx context.Context, fn func(tx *sql.Tx) error) (retry bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.retryable(err), err
	}
	if err := s.checkFences(ctx, tx, "", false); err != nil {
		rollback(ctx, tx)
		return s.retryable(err), txDone(ctx, err)
	}
	if err := fn(tx); err != nil {
		rollback(ctx, tx)
		return s.retryable(err), txDone(ctx, err)
	}
	if err := commit(ctx, tx); err != nil {
		if errors.Is(err, sql.ErrTxDone) {
			// database/sql rolled the transaction back when ctx ended,
			// before any COMMIT was sent: a definite failure.
			return false, txDone(ctx, err)
		}
		return s.commitFailed(err)
	}
	return false, nil
}

// commitFailed sorts the error of a query that ended in COMMIT: a
// conflict, or a query that never reached the server (ErrKindUnsent: the
// transaction dies with its connection, unapplied), is retried; a
// connection lost, or a context that ended while the server may still have
// applied it (database/sql, and go-sql-driver's watcher, give up on it),
// is store.ErrUnknownOutcome; anything else — a statement before the
// COMMIT failing stops the query, a COMMIT refused rolls back — is a
// definite failure.
func (s *Store) commitFailed(err error) (retry bool, _ error) {
	if isSentinel(err) {
		return false, err
	}
	switch kind := s.classify(err); {
	case kind == ErrKindUnsent:
		return s.retryable(err), err
	case kind == ErrKindConnLost,
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false, fmt.Errorf("%w: %w", store.ErrUnknownOutcome, err)
	case kind == ErrKindRetry:
		return true, err
	}
	return false, err
}

// commit is tx.Commit bounded by ctx. database/sql passes no context to a
// driver's Commit, and go-sql-driver's waits for the server's answer
// however long it takes (a partition: until it heals), so the call gives
// up at ctx's end: with ErrUnknownOutcome, since the COMMIT may have been
// applied.
func commit(ctx context.Context, tx *sql.Tx) error {
	ok, err := untilDone(ctx, tx.Commit)
	if !ok {
		return fmt.Errorf("%w: COMMIT unanswered: %w", store.ErrUnknownOutcome, ctx.Err())
	}
	return err
}

// rollback is tx.Rollback bounded by ctx, for the same reason as commit.
// Once ctx has ended there is nothing to do: database/sql rolls back, and
// drops the connection, from its own goroutine.
func rollback(ctx context.Context, tx *sql.Tx) {
	if ctx.Err() == nil {
		_, _ = untilDone(ctx, tx.Rollback)
	}
}

// untilDone runs f on its own and waits for it until ctx ends; ok is false
// when ctx ended first (f runs on to its end unwatched). An answer that
// came at the same instant as the end counts.
func untilDone(ctx context.Context, f func() error) (ok bool, err error) {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return true, err
	case <-ctx.Done():
		select {
		case err := <-done:
			return true, err
		default:
			return false, nil
		}
	}
}

// txDone names the cause of sql.ErrTxDone on a transaction that this
// package commits or rolls back only once: database/sql rolled it back
// because ctx ended, and without ctx's error beside it the caller would
// see neither a deadline nor a sentinel.
func txDone(ctx context.Context, err error) error {
	if errors.Is(err, sql.ErrTxDone) && ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return err
}

// secondsCeil turns a duration into whole seconds, rounding up so that a
// delay is never shorter than asked.
func secondsCeil(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

func limitClause(limit int) string { return " LIMIT " + strconv.Itoa(limit) }

func unixTime(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.Unix(v.Int64, 0)
}

func nullInt(v int64) sql.NullInt64 { return sql.NullInt64{Int64: v, Valid: v != 0} }

func nullStr(v string) sql.NullString { return sql.NullString{String: v, Valid: v != ""} }
