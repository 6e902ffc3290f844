package sqlstore_test

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// NotSent knows a refused connection by its type, as the dial returns it,
// and a driver's driver.ErrBadConn however wrapped; an error a connection
// may have met after writing (a read, an EOF) is not proof of anything.
func TestNotSent(t *testing.T) {
	addr := testdb.ClosedAddr(t)
	_, refused := net.Dial("tcp", addr)
	if refused == nil {
		t.Fatalf("dial of %s, closed: no error", addr)
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"Refused", fmt.Errorf("connect: %w", refused), true},
		{"BadConn", fmt.Errorf("exec: %w", driver.ErrBadConn), true},
		{"ReadFailed", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}, false},
		{"WriteFailed", &net.OpError{Op: "write", Net: "tcp", Err: errors.New("broken pipe")}, false},
		{"EOF", fmt.Errorf("read reply: %w", io.EOF), false},
		{"Nil", nil, false},
	} {
		if got := sqlstore.NotSent(tc.err); got != tc.want {
			t.Errorf("NotSent(%s: %v) = %v; want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
