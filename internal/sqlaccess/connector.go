package sqlaccess

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync/atomic"
)

// An embedded database (SQLite) runs its statements in this process, where
// no proxy on the wire can count them. The load generator
// (internal/load) counts them with a database/sql driver wrapper that it
// installs here before it opens its Stores; a backend that opens such a
// database does so through OpenDB, which is sql.Open while no wrapper is
// set.
var wrapper atomic.Pointer[func(driver.Connector) driver.Connector]

// WrapConnectors makes every later OpenDB wrap the connector of the
// database it opens with f; nil removes the wrapper. Pools opened before
// keep their connector.
func WrapConnectors(f func(driver.Connector) driver.Connector) {
	if f == nil {
		wrapper.Store(nil)
		return
	}
	wrapper.Store(&f)
}

// OpenDB is sql.Open(driverName, dsn), its connections made through the
// wrapper WrapConnectors set, if any.
func OpenDB(driverName, dsn string) (*sql.DB, error) {
	db, err := sql.Open(driverName, dsn)
	w := wrapper.Load()
	if err != nil || w == nil {
		return db, err
	}
	drv := db.Driver()
	if err := db.Close(); err != nil {
		return nil, err
	}
	var c driver.Connector = dsnConnector{drv: drv, dsn: dsn}
	if dc, ok := drv.(driver.DriverContext); ok {
		if c, err = dc.OpenConnector(dsn); err != nil {
			return nil, err
		}
	}
	return sql.OpenDB((*w)(c)), nil
}

// dsnConnector is what sql.Open makes of a driver without
// driver.DriverContext: Open(dsn) for every connection.
type dsnConnector struct {
	drv driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.drv }
