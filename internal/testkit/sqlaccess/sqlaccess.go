// Package sqlaccess is test tooling: it gathers the insides of a Store
// that store/sqlstore built — its database pool, dialect and lock backend,
// which sqlstore.Store.As gives — for gomogile's own backend tests,
// benchmarks and torture program, which check the database with raw SQL or
// drive a backend's lock internals. No production package imports it; an
// outside backend's tests reach faults through conformance.Faults and the
// database through connections of their own.
package sqlaccess

import (
	"database/sql"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore"
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

// Of returns the insides of s, through the As method of a Store that
// store/sqlstore built, looking through wrappers that Unwrap (the metrics
// Store); false when s is no such Store.
func Of(s store.Backend) (Parts, bool) {
	ss, ok := Backend(s)
	if !ok {
		return Parts{}, false
	}
	var p Parts
	var d sqlstore.Dialect
	var ls store.LockService
	if !ss.As(&p.DB) || !ss.As(&d) || !ss.As(&ls) {
		return Parts{}, false
	}
	p.Dialect, p.Locks = d, ls
	return p, true
}

// Backend is the sqlstore.Store under s: s itself, or what s wraps
// (Unwrap() store.Backend, as the store.Store of store.Open does).
func Backend(s store.Backend) (*sqlstore.Store, bool) { return store.Find[*sqlstore.Store](s) }

// DB is Of(s).DB.
func DB(s store.Backend) (*sql.DB, bool) {
	p, ok := Of(s)
	return p.DB, ok
}
