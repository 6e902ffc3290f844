package sqlstore_test

import (
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/store"
)

// rawParts is the pool and dialect under s, for tests that look at the
// database beside the Store.
func rawParts(t testing.TB, s *store.Store) sqlaccess.Parts {
	t.Helper()
	p, ok := sqlaccess.Of(s)
	if !ok {
		t.Fatalf("%T opens up no pool or dialect", s)
	}
	return p
}
