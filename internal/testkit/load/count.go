package load

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync/atomic"
)

// statements counts what an embedded database's pool asks of it, the
// counterpart of faultproxy's round trips on the wire: one per statement
// executed or queried and per BEGIN, COMMIT and ROLLBACK. It wraps the
// driver store/sqlite opens its pools with (its DSN's sql_driver).
type statements struct{ n atomic.Int64 }

// countingSQLite is the name the wrapped SQLite driver is registered under.
const countingSQLite = "gomogile-load-sqlite"

// driver wraps the database/sql driver registered as name (which must be
// linked in) so that every connection of it counts into s.
func (s *statements) driver(name string) driver.Driver {
	db, err := sql.Open(name, "")
	if err != nil {
		panic(fmt.Sprintf("load: driver %s: %v", name, err))
	}
	drv := db.Driver()
	_ = db.Close()
	return countingDriver{drv: drv, s: s}
}

// countingDriver opens the wrapped driver's connectors and counts through
// them.
type countingDriver struct {
	drv driver.Driver
	s   *statements
}

func (d countingDriver) Open(name string) (driver.Conn, error) {
	c, err := d.OpenConnector(name)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

func (d countingDriver) OpenConnector(name string) (driver.Connector, error) {
	var c driver.Connector = dsnConnector{drv: d.drv, dsn: name}
	if dc, ok := d.drv.(driver.DriverContext); ok {
		var err error
		if c, err = dc.OpenConnector(name); err != nil {
			return nil, err
		}
	}
	return countingConnector{c, d.s}, nil
}

// dsnConnector is a driver without connectors of its own, as one.
type dsnConnector struct {
	drv driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.drv }

type countingConnector struct {
	driver.Connector
	s *statements
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: cn, s: c.s}, nil
}

// countingConn passes every optional interface database/sql uses on to
// the driver's connection, so the pool behaves as it does unwrapped.
type countingConn struct {
	driver.Conn
	s *statements
}

var (
	_ driver.ConnBeginTx        = (*countingConn)(nil)
	_ driver.ConnPrepareContext = (*countingConn)(nil)
	_ driver.ExecerContext      = (*countingConn)(nil)
	_ driver.QueryerContext     = (*countingConn)(nil)
	_ driver.Pinger             = (*countingConn)(nil)
	_ driver.SessionResetter    = (*countingConn)(nil)
	_ driver.Validator          = (*countingConn)(nil)
)

func (c *countingConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	c.s.n.Add(1)
	var tx driver.Tx
	var err error
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, o)
	} else {
		//lint:ignore SA1019 the driver has nothing else
		tx, err = c.Conn.Begin()
	}
	if err != nil {
		return nil, err
	}
	return countingTx{tx, c.s}, nil
}

func (c *countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, q)
	} else {
		st, err = c.Conn.Prepare(q)
	}
	if err != nil {
		return nil, err
	}
	return &countingStmt{Stmt: st, s: c.s}, nil
}

func (c *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	c.s.n.Add(1)
	return e.ExecContext(ctx, q, args)
}

func (c *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	c.s.n.Add(1)
	return qc.QueryContext(ctx, q, args)
}

func (c *countingConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *countingConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

type countingTx struct {
	driver.Tx
	s *statements
}

func (t countingTx) Commit() error   { t.s.n.Add(1); return t.Tx.Commit() }
func (t countingTx) Rollback() error { t.s.n.Add(1); return t.Tx.Rollback() }

// countingStmt counts each execution of a prepared statement.
type countingStmt struct {
	driver.Stmt
	s *statements
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.s.n.Add(1)
	if e, ok := s.Stmt.(driver.StmtExecContext); ok {
		return e.ExecContext(ctx, args)
	}
	vs, err := values(args)
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 the driver has nothing else
	return s.Stmt.Exec(vs)
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.s.n.Add(1)
	if q, ok := s.Stmt.(driver.StmtQueryContext); ok {
		return q.QueryContext(ctx, args)
	}
	vs, err := values(args)
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 the driver has nothing else
	return s.Stmt.Query(vs)
}

func values(args []driver.NamedValue) ([]driver.Value, error) {
	vs := make([]driver.Value, len(args))
	for i, a := range args {
		if a.Name != "" {
			return nil, driver.ErrSkip
		}
		vs[i] = a.Value
	}
	return vs, nil
}
