//go:build unix

package testdb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// tryOnceEnv makes a test binary whose TestMain calls Main run as the
// child of TryOnceAfterPause instead of its tests: the DSN to open.
const tryOnceEnv = "GOMOGILE_TEST_TRYONCE_DSN"

// TryOnceAfterPause checks that a try-once Lock of a name nobody holds is
// granted however late its process gets to run: a child process (this
// test binary again, through Main) takes and releases a free name with
// Lock(name, 0) as fast as it can while the test holds it back (SIGSTOP,
// as a loaded machine's scheduler does) four times for pause, longer than
// a lease; not one try may be refused. A Store that wakes with its own
// liveness overdue must wait for it rather than call the free name taken
// ("store: lock timeout after 0s"). dsn must be one the child can open
// while this process holds no Store on it.
func TryOnceAfterPause(t *testing.T, dsn string, pause time.Duration) {
	t.Helper()
	c := StartChild(t, []string{"-test.run=^$"}, tryOnceEnv+"="+dsn)
	if line := c.Next(60 * time.Second); line != "ready" {
		t.Fatalf("child: %q; want ready", line)
	}
	for range 4 {
		time.Sleep(300 * time.Millisecond)
		if err := c.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pause)
		if err := c.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	c.Stdin.Close()
	var refused []string
	for {
		line := c.Next(60 * time.Second)
		rest, done := strings.CutPrefix(line, "done ")
		switch {
		case line == "(exited)" || line == "(nothing)":
			t.Fatalf("child %s without its count; refusals: %q", strings.Trim(line, "()"), refused)
		case !done:
			refused = append(refused, line)
			continue
		}
		t.Logf("child: %s after 4 pauses of %v", rest, pause)
		if rest == "granted=0" {
			t.Errorf("no try was granted")
		}
		if len(refused) > 0 {
			t.Errorf("%d try-once locks of a free name refused after a pause, the first: %s", len(refused), refused[0])
		}
		return
	}
}

// tryOnceChild is TryOnceAfterPause's child, run by Main when tryOnceEnv
// is set: it locks and releases a free name, trying once each time, until
// its stdin closes, then prints how many tries were granted. Each refusal
// is a line of its own.
func tryOnceChild(dsn string) int {
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		fmt.Printf("open: %v\n", err)
		return 1
	}
	defer s.Close()
	stop := make(chan struct{})
	go func() {
		bufio.NewReader(os.Stdin).ReadString('\n')
		close(stop)
	}()
	fmt.Println("ready")
	granted := 0
	for {
		select {
		case <-stop:
			fmt.Printf("done granted=%d\n", granted)
			return 0
		default:
		}
		l, err := s.Lock(ctx, "tryonce:free", 0)
		if err != nil {
			fmt.Printf("refused %v\n", err)
			continue
		}
		granted++
		if err := l.Release(ctx); err != nil && !errors.Is(err, store.ErrLockLost) {
			fmt.Printf("release %v\n", err)
		}
	}
}
