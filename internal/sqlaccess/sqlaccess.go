// Package sqlaccess reaches inside a Store that store/sqlstore built — its
// database pool, dialect and lock backend — for gomogile's own backend
// tests, benchmarks and torture program, which check the database with raw
// SQL or drive a backend's lock internals. It is internal so that no
// program outside this module comes to depend on a Store's insides: an
// outside backend's tests reach faults through conformance.Faults and the
// database through connections of their own.
package sqlaccess

import (
	"database/sql"

	"github.com/gomogile/gomogile/store"
)

// Dialect is what raw-SQL callers use of a Store's sqlstore.Dialect.
type Dialect interface {
	Name() string
	Rebind(query string) string
	UnixNow() string
}

// Parts are the insides of one Store.
type Parts struct {
	DB      *sql.DB
	Dialect Dialect
	Locks   any // the lock mechanism the Store uses (a store.LockService)
}

var partsOf func(store.Store) (Parts, bool)

// Register is called once, by package sqlstore's init, with the function
// that opens its Stores up.
func Register(f func(store.Store) (Parts, bool)) {
	if partsOf != nil {
		panic("sqlaccess: Register called twice")
	}
	partsOf = f
}

// Of returns the insides of s, or false when s is not a Store that
// store/sqlstore built (or sqlstore is not linked in).
func Of(s store.Store) (Parts, bool) {
	if partsOf == nil || s == nil {
		return Parts{}, false
	}
	return partsOf(s)
}

// DB is Of(s).DB.
func DB(s store.Store) (*sql.DB, bool) {
	p, ok := Of(s)
	return p.DB, ok
}
