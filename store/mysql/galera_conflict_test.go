package mysql_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
)

// A write to a row that another node keeps updating is certified against
// each of those commits, and aborted (1213, at its COMMIT or at whatever
// statement follows the abort) again and again while they go on. Here
// node 1 updates a setting as fast as it can for a second while a Store on
// node 2 increments it, one increment after another: each must go
// through. With a single server's budget of eight attempts (about 300ms
// of pauses) an increment now and then slips between node 1's commits,
// but the next one ran out of attempts.
func TestGalera_ConflictBudget(t *testing.T) {
	g := galeraCluster(t)
	database := galeraDatabase(t, g)
	locks := testdb.Etcd(t)
	nodes := g.Nodes()
	ctx := t.Context()
	s, err := store.Open(ctx, testdb.WithLockDSN(nodes[1].DSN(database), locks))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const key = "hot"
	if err := s.SetServerSetting(ctx, key, "0"); err != nil {
		t.Fatal(err)
	}
	const hot = time.Second
	node1 := openNodeDB(t, nodes[0], database, "wsrep_sync_wait", "7")
	// The Store's commits abort node 1's updates now and then too: those
	// fail with 1213 once the server's own retry (wsrep_retry_autocommit)
	// is spent, and are not counted.
	var n int // node 1's updates, read after stop closes
	stop := make(chan struct{})
	quit := make(chan struct{})
	defer func() {
		close(quit)
		<-stop
	}()
	go func() {
		defer close(stop)
		for t0 := time.Now(); time.Since(t0) < hot; {
			select {
			case <-quit:
				return
			default:
			}
			_, err := node1.ExecContext(context.Background(), "UPDATE server_settings SET value = value + 1 WHERE field = ?", key)
			switch {
			case err == nil:
				n++
			case mysqlErrno(err) != 1213:
				t.Error(err)
				return
			}
		}
	}()
	incrs := 0
	var slowest time.Duration
	for done := false; !done; {
		select {
		case <-stop:
			done = true
		default:
		}
		t0 := time.Now()
		if _, err := s.IncrServerSetting(ctx, key, 1); err != nil {
			t.Fatalf("IncrServerSetting #%d through node 2 while node 1 updates the row: %v; want it to go through", incrs+1, err)
		}
		slowest = max(slowest, time.Since(t0))
		incrs++
	}
	<-stop
	t.Logf("node 1 updated the row %d times in %v; node 2 incremented it %d times, the slowest taking %v",
		n, hot, incrs, slowest.Round(time.Millisecond))
	if v, err := s.ServerSetting(ctx, key); err != nil || v != strconv.Itoa(n+incrs) {
		t.Errorf("%s = %q, %v; want %d", key, v, err, n+incrs)
	}
}

// mysqlErrno is the server's error number in err, or 0.
func mysqlErrno(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
