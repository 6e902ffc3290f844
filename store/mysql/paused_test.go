//go:build unix

package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
)

// envHolder makes the test binary, re-executed, a lock holder process: it
// takes the lock named in it on the DSN in envHolderDSN, says "held", says
// "lost" when Lost fires, and exits when its stdin closes.
const (
	envHolder    = "GOMOGILE_TEST_MYSQL_HOLDER"
	envHolderDSN = "GOMOGILE_TEST_MYSQL_HOLDER_DSN"
)

func TestHolderProcess(t *testing.T) {
	name := os.Getenv(envHolder)
	if name == "" {
		t.Skip("only run as a child of TestLock_PausedHolder")
	}
	s, err := store.Open(context.Background(), os.Getenv(envHolderDSN))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	l, err := s.Lock(context.Background(), name, 0)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("held")
	go func() {
		<-l.Lost()
		fmt.Println("lost")
	}()
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// A holder process paused with SIGSTOP keeps its session open but silent:
// the server keeps its lock for the lock sessions' wait_timeout (2s), so
// a pause shorter than that lets nobody in, and a longer one frees the lock
// for another Store while the paused holder cannot yet know; on SIGCONT its
// watcher finds the session closed and Lost fires at once. (Fencing tokens
// are what keep such a holder's writes out once another has the lock.)
func TestLock_PausedHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the lock sessions' wait_timeout")
	}
	h := newHarness(t)
	b := h.open(t)
	c := testdb.StartChild(t, []string{"-test.run=^TestHolderProcess$"}, envHolder+"=paused", envHolderDSN+"="+h.dsn)
	next := c.Next
	if l := next(30 * time.Second); l != "held" {
		t.Fatalf("holder process: %s", l)
	}
	// Let its watcher ping once more, so the silence starts now.
	time.Sleep(300 * time.Millisecond)
	if err := c.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := b.Lock(context.Background(), "paused", time.Second); !errors.Is(err, store.ErrLockTimeout) {
		t.Fatalf("Lock 1s into the pause: got %v; want %v", err, store.ErrLockTimeout)
	}
	lb := mustLock(t, b, "paused", 15*time.Second)
	granted := time.Since(start)
	t.Logf("paused holder's lock granted to another Store %v after SIGSTOP", granted)
	// The session's wait_timeout after its last ping, then the handoff
	// wait for a holding that ended underneath its holder.
	if least := 2*time.Second + time.Second; granted < least {
		t.Errorf("granted %v into the pause; want no sooner than %v", granted, least)
	}
	resumed := time.Now()
	if err := c.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if l := next(5 * time.Second); !strings.HasPrefix(l, "lost") {
		t.Fatalf("resumed holder: %s; want lost", l)
	}
	t.Logf("resumed holder's Lost fired %v after SIGCONT", time.Since(resumed))
	mustRelease(t, lb)
}
