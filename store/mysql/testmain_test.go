package mysql_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
)

// TestMain removes the test containers this binary started, when it is
// their last user (see testdb.Main), and the shared Galera cluster.
func TestMain(m *testing.M) {
	code := testdb.Main(m)
	if err := stopSharedGalera(); err != nil {
		fmt.Fprintln(os.Stderr, "galera:", err)
	}
	os.Exit(code)
}
