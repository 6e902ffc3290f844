package sqlstore

import (
	"context"
	"database/sql"

	"github.com/gomogile/gomogile/store"
)

// RunTx runs fn in a transaction of st's, as every write does, for the
// tests of how a transaction's failures are reported.
func RunTx(ctx context.Context, st *store.Store, fn func(*sql.Tx) error) error {
	return of(st).tx(ctx, fn)
}

// InsertWithNextFid runs query as CreateTempFile runs a FidInserter's, on
// st's own pool, for the tests of how its answers are read.
func InsertWithNextFid(ctx context.Context, st *store.Store, query string) (int64, error) {
	return of(st).insertWithNextFid(ctx, fidInsert{query: query})
}

// of is the *Store under st: st itself or what the store.Store of
// store.Open wraps.
func of(st *store.Store) *Store {
	s, _ := store.Find[*Store](st)
	return s
}
