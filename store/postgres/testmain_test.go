package postgres_test

import (
	"os"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
)

// TestMain removes the test containers this binary started, when it is
// their last user (see testdb.Main).
func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
