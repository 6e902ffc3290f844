package tracker_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker"
)

func TestServer_LineHandling(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	c := tt.dial()
	// Bare \n is accepted; empty lines get no reply (Client.pm skips
	// them), so the next reply belongs to the next request.
	c.send("noop\n\r\n\nnoop callid=2\n")
	if got := c.readLine(); got != "OK \r\n" {
		t.Errorf("bare LF request: %q", got)
	}
	if got := c.readLine(); got != "OK callid=2\r\n" {
		t.Errorf("after empty lines: %q", got)
	}
	// Malformed lines.
	c.want("   ", "ERR unknown_command Unknown+server+command")
	c.want("%%%", "ERR unknown_command Unknown+server+command")
	c.want("!", "ERR unknown_command Unknown+server+command")
	// Bad %-encodings are refused, not passed through.
	c.want("create_domain domain=a%zz", "ERR bad_params Invalid+URL+encoding+in+arguments")
	c.want("create_domain domain=a%2&callid=5", "ERR bad_params Invalid+URL+encoding+in+arguments 5")
	c.want("get_domains", "OK domains=0")
	// Binary junk does not hurt.
	c.want("\x00\x01\xff noop", "ERR unknown_command Unknown+server+command")
	c.want("noop", "OK ")
}

func TestServer_OversizedLine(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	c := tt.dial()
	// Detected once more than the cap has arrived, newline or not.
	c.send("noop a=" + strings.Repeat("x", 2*tracker.MaxLineBytes))
	got := c.readLine()
	if got != fmt.Sprintf("ERR line_too_long Request+line+longer+than+%d+bytes\r\n", tracker.MaxLineBytes) {
		t.Errorf("oversized: %q", got)
	}
	// The connection is closed: the rest of the line cannot be resynced.
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.br.ReadByte(); !errors.Is(err, io.EOF) {
		var ne net.Error
		if !errors.As(err, &ne) || ne.Timeout() {
			t.Errorf("connection still open after oversized line: %v", err)
		}
	}
	// A line just under the cap is fine.
	c2 := tt.dial()
	c2.want("noop a="+strings.Repeat("x", tracker.MaxLineBytes-10), "OK ")
	c3 := tt.dial()
	c3.send("noop a=" + strings.Repeat("x", tracker.MaxLineBytes) + "\r\n")
	if got := c3.readLine(); !strings.HasPrefix(got, "ERR line_too_long ") {
		t.Errorf("line just over the cap: %q", got)
	}
}

func TestServer_AdminCommands(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	c := tt.dial()
	readBlock := func() []string {
		var out []string
		for {
			l := c.readLine()
			if l == ".\r\n" {
				return out
			}
			// The help text's lines end in a bare \n, as the original's did.
			out = append(out, strings.TrimRight(l, "\r\n"))
		}
	}
	c.send("!version\r\n")
	if got := readBlock(); len(got) != 1 || got[0] != tracker.Version {
		t.Errorf("!version: %q", got)
	}
	c.do("noop")
	c.send("!stats\r\n")
	got := readBlock()
	if len(got) < 5 || !strings.HasPrefix(got[0], "uptime ") || got[1] != "pending_queries 0" || got[2] != "processing_queries 0" ||
		got[3] != "bored_queryworkers 20" {
		t.Errorf("!stats: %q", got)
	}
	if !containsLine(got, "queries 1") {
		t.Errorf("!stats does not count the noop: %q", got)
	}
	c.send("!jobs\r\n")
	got = readBlock()
	if len(got) != 3 || got[0] != "queryworker count 20" || got[1] != "queryworker desired 20" {
		t.Errorf("!jobs: %q", got)
	}
	c.send("!want 5 queryworker\r\n")
	if got := readBlock(); len(got) != 1 || got[0] != "Now desiring 5 children doing 'queryworker'." {
		t.Errorf("!want: %q", got)
	}
	c.send("!want x\r\n")
	if got := readBlock(); len(got) != 1 || got[0] != "ERROR: usage: !want <count> <jobclass>" {
		t.Errorf("!want usage: %q", got)
	}
	c.send("!to\r\n")
	if got := readBlock(); len(got) != 1 || got[0] != "ERROR: usage: !to <jobclass> <message>" {
		t.Errorf("!to usage: %q", got)
	}
	c.send("!recent\r\n")
	if got := readBlock(); len(got) < 1 || !strings.Contains(got[len(got)-1], " noop ") {
		t.Errorf("!recent: %q", got)
	}
	c.send("!help\r\n")
	got = readBlock()
	if len(got) < 3 || got[0] != "Mogilefsd admin commands:" {
		t.Errorf("!help: %q", got)
	}
	c.send("!watch\r\n")
	if got := readBlock(); len(got) != 1 || got[0] != "Added you to watcher list." {
		t.Errorf("!watch: %q", got)
	}
	// A watcher sees the tracker's errors as they happen.
	other := tt.dial()
	other.want("test crash=1", "ERR failure Operation+failed")
	if got := c.readLine(); !strings.HasPrefix(got, ":: command failed ") || !strings.Contains(got, "crashed on purpose") {
		t.Errorf("watched error line: %q", got)
	}
	c.send("!watch\r\n")
	if got := readBlock(); len(got) != 1 || got[0] != "Removed you from watcher list." {
		t.Errorf("!watch again: %q", got)
	}
	c.send("!shutdown\r\n")
	if got := readBlock(); len(got) != 1 || !strings.HasPrefix(got[0], "ERROR:") {
		t.Errorf("!shutdown without a shutdown hook: %q", got)
	}
	c.want("noop", "OK ")
}

func containsLine(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// 200 clients at once, each with its own connection and several requests,
// through query_jobs=20 slots: every one gets its own answer.
func TestServer_ConcurrentClients(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	setup := tt.dial()
	setup.want("create_domain domain=d", "OK domain=d")
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			nc, err := net.DialTimeout("tcp", tt.addr, 10*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(30 * time.Second))
			buf := make([]byte, 0, 256)
			for j := 0; j < 5; j++ {
				req := fmt.Sprintf("noop callid=%d-%d\r\n", i, j)
				if j == 4 {
					req = fmt.Sprintf("get_paths domain=d&key=k%d&callid=%d-%d\r\n", i, i, j)
				}
				if _, err := io.WriteString(nc, req); err != nil {
					errs <- err
					return
				}
				buf = buf[:0]
				one := make([]byte, 1)
				for {
					if _, err := nc.Read(one); err != nil {
						errs <- fmt.Errorf("client %d: %w", i, err)
						return
					}
					buf = append(buf, one[0])
					if one[0] == '\n' {
						break
					}
				}
				want := fmt.Sprintf("OK callid=%d-%d\r\n", i, j)
				if j == 4 {
					want = fmt.Sprintf("ERR unknown_key unknown_key %d-%d\r\n", i, j)
				}
				if string(buf) != want {
					errs <- fmt.Errorf("client %d: got %q; want %q", i, buf, want)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Close with a request in flight: the request finishes and is answered,
// new connections are refused, idle connections are closed.
func TestTracker_CloseWithRequestInFlight(t *testing.T) {
	cfg := testConfig()
	cfg.SleepMax = 5 * time.Second
	st := openStore(t, testDSN(t))
	tt := startTracker(t, cfg, st, nil)
	busy := tt.dial()
	idle := tt.dial()
	idle.want("noop", "OK ")
	busy.send("sleep duration=1&callid=s\r\n")
	time.Sleep(200 * time.Millisecond) // let the sleep start
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- tt.tr.Close() }()
	if got := busy.readLine(); got != "OK callid=s\r\n" {
		t.Errorf("in-flight request: %q", got)
	}
	if err := <-done; err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
	idle.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := idle.br.ReadByte(); err == nil {
		t.Errorf("idle connection still open after Close")
	}
	if nc, err := net.DialTimeout("tcp", tt.addr, time.Second); err == nil {
		nc.Close()
		t.Errorf("new connections still accepted after Close")
	}
	// The store stays usable: Close closes only what the tracker owns.
	if err := st.Ping(t.Context()); err != nil {
		t.Errorf("store closed by tracker.Close: %v", err)
	}
}

// A request that outlives ShutdownTimeout is abandoned.
func TestTracker_CloseBoundsSlowRequests(t *testing.T) {
	cfg := testConfig()
	cfg.SleepMax = 30 * time.Second
	cfg.ShutdownTimeout = 300 * time.Millisecond
	tt := startTracker(t, cfg, nil, nil)
	busy := tt.dial()
	busy.send("sleep duration=30\r\n")
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := tt.tr.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close waited %v for a 30s sleep; bound is %v", d, cfg.ShutdownTimeout)
	}
}

func TestServer_IdleTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.IdleTimeout = 200 * time.Millisecond
	tt := startTracker(t, cfg, nil, nil)
	c := tt.dial()
	c.want("noop", "OK ")
	c.nc.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("idle connection not closed: %v", err)
	}
}

func TestServer_MaxConns(t *testing.T) {
	cfg := testConfig()
	cfg.MaxConns = 2
	tt := startTracker(t, cfg, nil, nil)
	a, b := tt.dial(), tt.dial()
	a.want("noop", "OK ")
	b.want("noop", "OK ")
	c := tt.dial()
	if got := c.readLine(); got != "ERR too_many_connections Too+many+client+connections\r\n" {
		t.Errorf("third connection: %q", got)
	}
}

// Issue 9, point 12: by default an idle client is never closed, as by the
// original, and sleep has no cap of its own (only request_timeout's).
func TestServer_DefaultsAsOriginal(t *testing.T) {
	def := tracker.DefaultConfig()
	if def.IdleTimeout != 0 {
		t.Errorf("default idle_timeout %v; want 0 (never close an idle client)", def.IdleTimeout)
	}
	cfg := testConfig()
	cfg.RequestTimeout = 2 * time.Second
	tt := startTracker(t, cfg, nil, nil)
	c := tt.dial()
	c.want("noop", "OK ")
	start := time.Now()
	c.want("sleep duration=1", "OK ")
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("sleep duration=1 took %v", d)
	}
	// Idle for a while, the connection still answers.
	time.Sleep(500 * time.Millisecond)
	c.want("noop", "OK ")
}

// Issue 9, point 12: !queue lists the requests waiting for a query slot as
// the original did ("<ip> <request line>"), not a count.
func TestServer_QueueListsPendingQueries(t *testing.T) {
	cfg := testConfig()
	cfg.QueryJobs = 1
	tt := startTracker(t, cfg, nil, nil)
	busy, waiting, admin := tt.dial(), tt.dial(), tt.dial()
	busy.send("sleep duration=3\r\n")
	time.Sleep(200 * time.Millisecond)
	waiting.send("noop a=1\r\n")
	var got []string
	waitFor(t, 2*time.Second, "the noop to wait", func() bool {
		admin.send("!queue\r\n")
		got = got[:0]
		for {
			l := admin.readLine()
			if l == ".\r\n" {
				break
			}
			got = append(got, strings.TrimSuffix(l, "\r\n"))
		}
		return len(got) > 0
	})
	if len(got) != 1 || got[0] != "127.0.0.1 noop a=1" {
		t.Errorf("!queue = %q; want [\"127.0.0.1 noop a=1\"]", got)
	}
}

// A database an unfinished move between backends holds is refused at
// Open, with the error naming the move, and nothing listens; once the move
// is done (its setting gone) the tracker starts.
func TestTracker_RefusesUnfinishedMove(t *testing.T) {
	st := openStore(t, testDSN(t))
	if err := st.SetServerSetting(t.Context(), store.MoveSetting, "copying from sqlite:///old.db"); err != nil {
		t.Fatal(err)
	}
	tr, err := tracker.New(testConfig(), st, &tracker.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Open(t.Context()); !errors.Is(err, tracker.ErrMoveUnfinished) || !strings.Contains(err.Error(), "sqlite:///old.db") {
		t.Fatalf("Open on a database mid-move: %v; want ErrMoveUnfinished naming the move", err)
	}
	if len(tr.Addrs()) != 0 {
		t.Errorf("a refused tracker listens on %v", tr.Addrs())
	}
	tr.Close()
	if err := st.DeleteServerSetting(t.Context(), store.MoveSetting); err != nil {
		t.Fatal(err)
	}
	startTracker(t, testConfig(), st, nil)
}
