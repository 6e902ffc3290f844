package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// This file adapts pgx to database/sql, which the shared SQL speaks. pgx's
// own adapter, github.com/jackc/pgx/v5/stdlib, imports pgxpool and with it
// modules this repository's go.mod does not record; the subset below is what
// the shared SQL needs, and nothing else here depends on it, so switching to
// stdlib.OpenDB later changes only openDB.

// openDB returns a pool whose connections pgx opens from cfg.
func openDB(cfg *pgx.ConnConfig) *sql.DB {
	return sql.OpenDB(&connector{cfg: cfg})
}

type connector struct{ cfg *pgx.ConnConfig }

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, c.cfg)
	if err != nil {
		return nil, err
	}
	return &sqlConn{conn: conn}, nil
}

func (c *connector) Driver() driver.Driver { return sqlDriver{} }

// sqlDriver exists because driver.Connector must name one; the pool only
// ever uses the connector.
type sqlDriver struct{}

func (sqlDriver) Open(name string) (driver.Conn, error) {
	cfg, err := pgx.ParseConfig(name)
	if err != nil {
		return nil, err
	}
	return (&connector{cfg: cfg}).Connect(context.Background())
}

type sqlConn struct {
	conn *pgx.Conn
}

var (
	_ driver.ConnBeginTx       = (*sqlConn)(nil)
	_ driver.ExecerContext     = (*sqlConn)(nil)
	_ driver.QueryerContext    = (*sqlConn)(nil)
	_ driver.Pinger            = (*sqlConn)(nil)
	_ driver.SessionResetter   = (*sqlConn)(nil)
	_ driver.Validator         = (*sqlConn)(nil)
	_ driver.NamedValueChecker = (*sqlConn)(nil)
	_ driver.StmtExecContext   = (*sqlStmt)(nil)
	_ driver.StmtQueryContext  = (*sqlStmt)(nil)
)

// badConn turns an error that happened before anything reached the server
// into driver.ErrBadConn, so database/sql retries on another connection;
// any other error may hide applied work and is returned as it is.
func badConn(err error) error {
	if err != nil && pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", driver.ErrBadConn, err)
	}
	return err
}

func (c *sqlConn) Prepare(query string) (driver.Stmt, error) {
	return &sqlStmt{c: c, query: query}, nil
}

func (c *sqlConn) Close() error { return c.conn.Close(context.Background()) }

func (c *sqlConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *sqlConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var o pgx.TxOptions
	switch sql.IsolationLevel(opts.Isolation) {
	case sql.LevelDefault:
	case sql.LevelReadUncommitted:
		o.IsoLevel = pgx.ReadUncommitted
	case sql.LevelReadCommitted:
		o.IsoLevel = pgx.ReadCommitted
	case sql.LevelRepeatableRead, sql.LevelSnapshot:
		o.IsoLevel = pgx.RepeatableRead
	case sql.LevelSerializable:
		o.IsoLevel = pgx.Serializable
	default:
		return nil, fmt.Errorf("postgres: isolation level %v not supported", sql.IsolationLevel(opts.Isolation))
	}
	if opts.ReadOnly {
		o.AccessMode = pgx.ReadOnly
	}
	tx, err := c.conn.BeginTx(ctx, o)
	if err != nil {
		return nil, badConn(err)
	}
	return sqlTx{tx: tx}, nil
}

func args(nvs []driver.NamedValue) ([]any, error) {
	out := make([]any, len(nvs))
	for i, nv := range nvs {
		if nv.Name != "" {
			return nil, fmt.Errorf("postgres: named argument %q not supported", nv.Name)
		}
		out[i] = nv.Value
	}
	return out, nil
}

func (c *sqlConn) ExecContext(ctx context.Context, query string, nvs []driver.NamedValue) (driver.Result, error) {
	a, err := args(nvs)
	if err != nil {
		return nil, err
	}
	tag, err := c.conn.Exec(ctx, query, a...)
	if err != nil {
		return nil, badConn(err)
	}
	return driver.RowsAffected(tag.RowsAffected()), nil
}

func (c *sqlConn) QueryContext(ctx context.Context, query string, nvs []driver.NamedValue) (driver.Rows, error) {
	a, err := args(nvs)
	if err != nil {
		return nil, err
	}
	rows, err := c.conn.Query(ctx, query, a...)
	if err != nil {
		return nil, badConn(err)
	}
	return &sqlRows{rows: rows}, nil
}

func (c *sqlConn) Ping(ctx context.Context) error {
	if err := c.conn.Ping(ctx); err != nil {
		return fmt.Errorf("%w: %w", driver.ErrBadConn, err)
	}
	return nil
}

// ResetSession refuses a connection that died or was left inside a
// transaction while it sat in the pool.
func (c *sqlConn) ResetSession(context.Context) error {
	if c.conn.IsClosed() || c.conn.PgConn().TxStatus() != 'I' {
		return driver.ErrBadConn
	}
	return nil
}

func (c *sqlConn) IsValid() bool { return !c.conn.IsClosed() }

// CheckNamedValue lets every argument through to pgx, which encodes more
// types than database/sql's default converter allows.
func (c *sqlConn) CheckNamedValue(*driver.NamedValue) error { return nil }

type sqlTx struct{ tx pgx.Tx }

func (t sqlTx) Commit() error   { return t.tx.Commit(context.Background()) }
func (t sqlTx) Rollback() error { return t.tx.Rollback(context.Background()) }

type sqlStmt struct {
	c     *sqlConn
	query string
}

func (s *sqlStmt) Close() error  { return nil }
func (s *sqlStmt) NumInput() int { return -1 }

func (s *sqlStmt) Exec(vals []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(vals))
}

func (s *sqlStmt) Query(vals []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(vals))
}

func (s *sqlStmt) ExecContext(ctx context.Context, nvs []driver.NamedValue) (driver.Result, error) {
	return s.c.ExecContext(ctx, s.query, nvs)
}

func (s *sqlStmt) QueryContext(ctx context.Context, nvs []driver.NamedValue) (driver.Rows, error) {
	return s.c.QueryContext(ctx, s.query, nvs)
}

func named(vals []driver.Value) []driver.NamedValue {
	nvs := make([]driver.NamedValue, len(vals))
	for i, v := range vals {
		nvs[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return nvs
}

type sqlRows struct {
	rows pgx.Rows
	cols []string
}

func (r *sqlRows) Columns() []string {
	if r.cols == nil {
		fds := r.rows.FieldDescriptions()
		r.cols = make([]string, len(fds))
		for i, fd := range fds {
			r.cols[i] = fd.Name
		}
	}
	return r.cols
}

func (r *sqlRows) Close() error {
	r.rows.Close()
	return nil
}

func (r *sqlRows) Next(dest []driver.Value) error {
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return io.EOF
	}
	vals, err := r.rows.Values()
	if err != nil {
		return err
	}
	for i, v := range vals {
		if dest[i], err = driverValue(v); err != nil {
			return fmt.Errorf("postgres: column %s: %w", r.Columns()[i], err)
		}
	}
	return nil
}

// driverValue narrows pgx's decoded values to the types database/sql
// converts from.
func driverValue(v any) (driver.Value, error) {
	switch x := v.(type) {
	case nil, int64, float64, bool, []byte, string:
		return x, nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case driver.Valuer:
		return x.Value()
	}
	if dv, err := driver.DefaultParameterConverter.ConvertValue(v); err == nil {
		return dv, nil
	}
	return nil, fmt.Errorf("cannot use %T", v)
}
