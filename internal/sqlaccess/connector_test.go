package sqlaccess_test

import (
	"context"
	"database/sql/driver"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/gomogile/gomogile/internal/sqlaccess"
	"github.com/gomogile/gomogile/store"
)

type countConnects struct {
	driver.Connector
	n *atomic.Int64
}

func (c countConnects) Connect(ctx context.Context) (driver.Conn, error) {
	c.n.Add(1)
	return c.Connector.Connect(ctx)
}

// A SQLite Store opened while a wrapper is set makes its connections
// through it, and one opened after the wrapper is removed does not.
func TestWrapConnectors(t *testing.T) {
	var n atomic.Int64
	sqlaccess.WrapConnectors(func(c driver.Connector) driver.Connector { return countConnects{c, &n} })
	t.Cleanup(func() { sqlaccess.WrapConnectors(nil) })
	dir := t.TempDir()
	s, err := store.Open(t.Context(), "sqlite://"+filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateDomain(t.Context(), "d"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n.Load() == 0 {
		t.Fatal("no connection was made through the wrapper")
	}
	sqlaccess.WrapConnectors(nil)
	before := n.Load()
	s, err = store.Open(t.Context(), "sqlite://"+filepath.Join(dir, "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := n.Load(); got != before {
		t.Errorf("%d connections through a removed wrapper; want none", got-before)
	}
}
