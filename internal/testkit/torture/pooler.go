package torture

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
)

// The private PgBouncer's watch: the package doc's "# The pooler" says why
// the run starts it again when it dies by itself.

// poolerStartTimeout bounds one attempt to start the pooler again: it
// waits for a query through it, so for its server, which a dbcrash may
// have down.
const poolerStartTimeout = time.Minute

// poolerDeath is one death of the pooler and its restart.
type poolerDeath struct {
	window        // from its death being seen to its restart
	log    string // its log's last lines before the restart
	err    error  // the restart's failure, if it failed
}

// poolerWatch is the goroutine that watches the pooler.
type poolerWatch struct {
	stop func()
	done chan struct{}

	mu     sync.Mutex
	deaths []poolerDeath
}

// newPoolerDir makes the parent directory of the pooler's instance, so
// that its log can be found for the report.
func newPoolerDir() (string, error) {
	dir, err := os.MkdirTemp("", "gomogile-torture-pooler-*")
	if err != nil {
		return "", fmt.Errorf("torture: %w", err)
	}
	// PgBouncer runs as the postgres account: it must reach its instance.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("torture: %w", err)
	}
	return dir, nil
}

// watchPooler starts watching s.bouncer: when it dies by itself it is
// started again, trouble is called (a pooler's death touches every slot)
// and the death recorded.
func (s *servers) watchPooler(logf func(string, ...any), trouble func()) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &poolerWatch{stop: cancel, done: make(chan struct{})}
	s.watch = w
	go func() {
		defer close(w.done)
		b := s.bouncer
		for waitPoolerGone(ctx, b) {
			from := time.Now()
			trouble()
			lines := poolerLog(s.bouncerDir)
			logf("pgbouncer on %s died; starting it again; its log ends:\n%s", b.Addr(), lines)
			err := restartPooler(ctx, b)
			if ctx.Err() != nil {
				return
			}
			d := poolerDeath{window: window{from, time.Now()}, log: lines, err: err}
			w.mu.Lock()
			w.deaths = append(w.deaths, d)
			w.mu.Unlock()
			trouble()
			if err != nil {
				logf("pgbouncer on %s: restart failed: %v", b.Addr(), err)
				return
			}
			logf("pgbouncer on %s started again in %v", b.Addr(), d.to.Sub(d.from).Round(time.Millisecond))
		}
	}()
}

// stopWatch ends the watch, before the pooler is stopped.
func (s *servers) stopWatch() {
	if s == nil || s.watch == nil {
		return
	}
	s.watch.stop()
	<-s.watch.done
}

// poolerDeaths returns the pooler's deaths so far.
func (s *servers) poolerDeaths() []poolerDeath {
	if s == nil || s.watch == nil {
		return nil
	}
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return append([]poolerDeath(nil), s.watch.deaths...)
}

// waitPoolerGone returns true once the pooler at b refuses connections
// (nothing listens: it is not running), false when ctx ends first. It
// holds a connection to the pooler's admin console and blocks reading it:
// a pooler that dies closes it at once. A connection that ends while the
// pooler still listens is made again.
func waitPoolerGone(ctx context.Context, b *dbinstance.PgBouncer) bool {
	for {
		c, err := pgconn.Connect(ctx, b.DSN("pgbouncer"))
		if err == nil {
			// No notification ever comes on the console: this returns
			// when the connection ends, or ctx does.
			_ = c.WaitForNotification(ctx)
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = c.Close(cctx)
			cancel()
		}
		if ctx.Err() != nil {
			return false
		}
		if refused(b.Addr()) {
			return true
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return false
		}
	}
}

// refused reports whether a TCP connection to addr is refused: on the
// loopback, that nothing listens there.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// restartPooler starts the pooler again on its port, retrying until
// poolerStartTimeout has passed: its old process may not be reaped yet (Start
// refuses while it runs), its port may still be held, its server may be
// down for a while (a dbcrash). Five attempts 100 ms apart could all be
// refused within a second while the old process was not yet reaped,
// ending the run with its pooler gone.
func restartPooler(ctx context.Context, b *dbinstance.PgBouncer) error {
	ctx, cancel := context.WithTimeout(ctx, poolerStartTimeout)
	defer cancel()
	backoff := 100 * time.Millisecond
	for {
		err := b.Start(ctx)
		if err == nil {
			return nil
		}
		if !sleepCtx(ctx, backoff) {
			return err
		}
		backoff = min(2*backoff, time.Second)
	}
}

// poolerLog returns the last lines of the pooler's log, the ones that say
// why it died: dbinstance keeps it as pgbouncer.log in the instance's
// directory, the one directory under parent.
func poolerLog(parent string) string {
	if parent == "" {
		return "(no log)"
	}
	logs, _ := filepath.Glob(filepath.Join(parent, "*", "pgbouncer.log"))
	if len(logs) != 1 {
		return "(no log)"
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		return "(log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	// The fatal line, if any, and the few before it.
	end := len(lines)
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-50; i-- {
		if strings.Contains(lines[i], "FATAL @") || strings.Contains(lines[i], " FATAL ") {
			end = i + 1
			break
		}
	}
	return strings.Join(lines[max(0, end-4):end], "\n")
}
