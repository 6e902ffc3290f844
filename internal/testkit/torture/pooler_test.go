package torture

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
)

// A pooler whose port is still held for a while after its death is
// started again once the port is free, within poolerStartTimeout, and
// not before.
func TestRestartPoolerWaitsForItsPort(t *testing.T) {
	if err := dbinstance.Available("pgbouncer"); err != nil {
		testdb.Unavailable(t, "pgbouncer", err.Error())
	}
	u, err := url.Parse(testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ctx, cancel := context.WithTimeout(context.Background(), 2*poolerStartTimeout)
	defer cancel()
	b, err := dbinstance.StartPgBouncer(ctx, target, dbinstance.BouncerOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Cleanup() })
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	for deadline := time.Now().Add(10 * time.Second); ; {
		if ln, err = net.Listen("tcp", b.Addr()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed pooler's port stays taken: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	const held = 3 * time.Second
	go func() {
		time.Sleep(held)
		ln.Close()
	}()
	start := time.Now()
	if err := restartPooler(ctx, b); err != nil {
		t.Fatalf("restart with the port held for %v: %v", held, err)
	}
	if took := time.Since(start); took < held {
		t.Errorf("started again after %v, while its port was held for %v", took, held)
	}
}
