package client_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/client"
)

func newClient(t *testing.T, trackers []string, opts *client.Options) *client.Client {
	t.Helper()
	c, err := client.New(trackers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestNew_Errors(t *testing.T) {
	if _, err := client.New(nil, nil); err == nil {
		t.Fatal("New(nil) succeeded; want error")
	}
	if _, err := client.New([]string{" ", ""}, nil); err == nil {
		t.Fatal("New(blank addresses) succeeded; want error")
	}
	c, err := client.New([]string{"tracker1", "10.0.0.2:7002", "[::1]"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.Trackers(), " ")
	want := "tracker1:7001 10.0.0.2:7002 [::1]:7001"
	if got != want {
		t.Fatalf("Trackers() = %q; want %q", got, want)
	}
}

func TestClient_Do_RequestLines(t *testing.T) {
	p := startPeer(t, replies(map[string]string{
		"list_keys": "OK key_count=1&next_after=a+b&key_1=a+b",
		"noop":      "OK ",
	}))
	c := newClient(t, []string{p.Addr()}, nil)
	ctx := t.Context()

	_, err := c.Do(ctx, "list_keys", url.Values{
		"domain": {"d 1"},
		"prefix": {"é&="},
		"after":  {"a+b"},
		"limit":  {""},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "noop", nil); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	want := []string{
		"list_keys after=a%2Bb&domain=d+1&limit=&prefix=%C3%A9%26%3D\r\n",
		"noop \r\n",
	}
	if len(reqs) != len(want) {
		t.Fatalf("peer got %d requests; want %d", len(reqs), len(want))
	}
	for i, w := range want {
		if reqs[i].Raw != w {
			t.Errorf("request %d = %q; want %q", i, reqs[i].Raw, w)
		}
	}
	// What the tracker decodes is what was meant.
	if got := reqs[0].Args.Get("prefix"); got != "é&=" {
		t.Errorf("tracker decoded prefix %q; want %q", got, "é&=")
	}
	if got := reqs[0].Args.Get("after"); got != "a+b" {
		t.Errorf("tracker decoded after %q; want %q", got, "a+b")
	}
	if p.Accepts() != 1 {
		t.Errorf("peer accepted %d connections; want 1 (reused)", p.Accepts())
	}
}

func TestClient_Do_BadCommand(t *testing.T) {
	p := startPeer(t, replies(nil))
	c := newClient(t, []string{p.Addr()}, nil)
	for _, cmd := range []string{"", "noop\r\ndelete", "get paths", "x&y"} {
		if _, err := c.Do(t.Context(), cmd, nil); !errors.Is(err, client.ErrBadCommand) {
			t.Errorf("Do(%q) error = %v; want ErrBadCommand", cmd, err)
		}
	}
	if n := len(p.Requests()); n != 0 {
		t.Fatalf("peer got %d requests; want 0", n)
	}
}

func TestClient_Do_Err(t *testing.T) {
	p := startPeer(t, replies(map[string]string{
		// cmd_get_paths on a missing key: err_line("unknown_key"),
		// whose text falls back to the code.
		"get_paths": "ERR unknown_key unknown_key",
		// cmd_rename onto an existing key.
		"rename": "ERR key_exists Target+key+name+already+exists%3B+can%27t+overwrite.",
	}))
	c := newClient(t, []string{p.Addr()}, nil)

	_, err := c.GetPaths(t.Context(), "testdom", "nope", nil)
	if !errors.Is(err, client.ErrUnknownKey) {
		t.Fatalf("GetPaths error = %v; want ErrUnknownKey", err)
	}
	if errors.Is(err, client.ErrKeyExists) {
		t.Fatalf("GetPaths error %v matches ErrKeyExists", err)
	}

	err = c.Rename(t.Context(), "testdom", "a", "b")
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("Rename error %v is not a *client.Error", err)
	}
	if e.Code != "key_exists" || e.Message != "Target key name already exists; can't overwrite." {
		t.Fatalf("Rename error = {%q, %q}", e.Code, e.Message)
	}
	// An ERR is an answer: the connection stays usable and in step.
	if p.Accepts() != 1 {
		t.Fatalf("peer accepted %d connections; want 1", p.Accepts())
	}
}

func TestClient_Do_FailoverUnreachable(t *testing.T) {
	p := startPeer(t, replies(map[string]string{"delete": "OK "}))
	c := newClient(t, []string{deadAddr(t), p.Addr()}, &client.Options{DialTimeout: time.Second})
	// A refused dial never reached a tracker, so even a write moves on.
	for i := 0; i < 3; i++ {
		if err := c.Delete(t.Context(), "testdom", "k"); err != nil {
			t.Fatalf("Delete #%d: %v", i, err)
		}
	}
	if n := len(p.Requests()); n != 3 {
		t.Fatalf("second tracker got %d requests; want 3", n)
	}
}

func TestClient_Do_AllUnreachable(t *testing.T) {
	c := newClient(t, []string{deadAddr(t), deadAddr(t)}, &client.Options{DialTimeout: time.Second})
	err := c.Noop(t.Context())
	if !errors.Is(err, client.ErrNoTracker) {
		t.Fatalf("Noop error = %v; want ErrNoTracker", err)
	}
}

func TestClient_Do_FailoverAfterSend(t *testing.T) {
	// The first tracker reads each request and drops the connection
	// without answering, as a crashing tracker would.
	bad := startPeer(t, func(request) answer { return answer{Close: true} })
	good := startPeer(t, replies(map[string]string{
		"get_paths": "OK paths=1&path1=http://10.0.0.1:7500/dev1/0/000/000/0000000007.fid",
		"delete":    "OK ",
	}))
	c := newClient(t, []string{bad.Addr(), good.Addr()}, nil)

	t.Run("ReadOnlyRetried", func(t *testing.T) {
		for i := 0; i < 2; i++ { // round-robin: each tracker goes first once
			paths, err := c.GetPaths(t.Context(), "d", "k", nil)
			if err != nil {
				t.Fatalf("GetPaths #%d: %v", i, err)
			}
			if len(paths) != 1 || !strings.HasSuffix(paths[0], "0000000007.fid") {
				t.Fatalf("GetPaths = %v", paths)
			}
		}
	})
	t.Run("WriteNotRetried", func(t *testing.T) {
		before := countCmd(good.Requests(), "delete")
		var unknown int
		for i := 0; i < 2; i++ {
			err := c.Delete(t.Context(), "d", "k")
			if errors.Is(err, client.ErrUnknownOutcome) {
				unknown++
			} else if err != nil {
				t.Fatalf("Delete error = %v; want nil or ErrUnknownOutcome", err)
			}
		}
		// One of the two calls started at the bad tracker.
		if unknown != 1 {
			t.Fatalf("%d of 2 deletes reported ErrUnknownOutcome; want 1", unknown)
		}
		if got := countCmd(good.Requests(), "delete") - before; got != 1 {
			t.Fatalf("good tracker got %d deletes; want 1 (no re-send after an ambiguous failure)", got)
		}
	})
}

func countCmd(reqs []request, cmd string) int {
	n := 0
	for _, r := range reqs {
		if r.Cmd == cmd {
			n++
		}
	}
	return n
}

func TestClient_Do_Reconnect(t *testing.T) {
	// cmd_* answers, then the tracker closes the connection (restart,
	// idle timeout): the next command, even a write, goes out on a
	// new connection instead of failing.
	p := startPeer(t, func(r request) answer {
		return answer{Line: "OK ", Close: true}
	})
	c := newClient(t, []string{p.Addr()}, nil)
	for i := 0; i < 3; i++ {
		if err := c.Delete(t.Context(), "d", "k"); err != nil {
			t.Fatalf("Delete #%d: %v", i, err)
		}
		// On loopback the FIN is queued at the client by the
		// time the peer's close returns.
		waitFor(t, func() bool { return p.Closed() == i+1 })
	}
	if n := countCmd(p.Requests(), "delete"); n != 3 {
		t.Fatalf("tracker got %d deletes; want 3", n)
	}
	if p.Accepts() != 3 {
		t.Fatalf("tracker accepted %d connections; want 3", p.Accepts())
	}
}

func TestClient_Do_ReconnectReadOnlySameTracker(t *testing.T) {
	// The first connection dies after one answer without the client
	// noticing in advance (the close races the next request); a
	// read-only command is then re-sent on a fresh connection to the
	// only tracker.
	var mu sync.Mutex
	served := 0
	p := startPeer(t, func(r request) answer {
		mu.Lock()
		defer mu.Unlock()
		served++
		if served == 2 {
			return answer{Close: true}
		}
		return answer{Line: "OK "}
	})
	c := newClient(t, []string{p.Addr()}, nil)
	for i := 0; i < 2; i++ {
		if err := c.Noop(t.Context()); err != nil {
			t.Fatalf("Noop #%d: %v", i, err)
		}
	}
	if n := countCmd(p.Requests(), "noop"); n != 3 {
		t.Fatalf("tracker saw %d noops; want 3 (one lost, one re-sent)", n)
	}
	if p.Accepts() != 2 {
		t.Fatalf("tracker accepted %d connections; want 2", p.Accepts())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestClient_Do_ContextDeadline(t *testing.T) {
	p := startPeer(t, func(request) answer { return answer{Hang: true} })
	c := newClient(t, []string{p.Addr()}, nil)

	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Noop(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Noop error = %v; want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Noop returned after %v; want about 150ms", d)
	}
}

func TestClient_Do_ContextCancel(t *testing.T) {
	p := startPeer(t, func(request) answer { return answer{Hang: true} })
	c := newClient(t, []string{p.Addr()}, nil)

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Do(ctx, "create_domain", url.Values{"domain": {"x"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do error = %v; want Canceled", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Do returned after %v; want about 100ms", d)
	}
}

func TestClient_Do_Timeout(t *testing.T) {
	// Options.Timeout bounds a command when ctx has no deadline; a write
	// that timed out is reported as ambiguous, not retried.
	p := startPeer(t, func(request) answer { return answer{Hang: true} })
	c := newClient(t, []string{p.Addr()}, &client.Options{Timeout: 100 * time.Millisecond})
	err := c.CreateDomain(t.Context(), "x")
	if !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("CreateDomain error = %v; want ErrUnknownOutcome", err)
	}
	if n := countCmd(p.Requests(), "create_domain"); n != 1 {
		t.Fatalf("tracker got %d create_domain; want 1", n)
	}
}

func TestClient_Do_ReplyTooLong(t *testing.T) {
	huge := "OK key_count=1&key_1=" + strings.Repeat("x", 200<<10)
	p := startPeer(t, func(r request) answer {
		if r.Cmd == "noop" {
			return answer{Line: "OK "}
		}
		return answer{Line: huge}
	})
	c := newClient(t, []string{p.Addr()}, &client.Options{MaxReplyBytes: 64 << 10})
	_, _, err := c.ListKeys(t.Context(), "d", "", "", 0)
	if !errors.Is(err, client.ErrReplyTooLong) {
		t.Fatalf("ListKeys error = %v; want ErrReplyTooLong", err)
	}
	// The rest of the long line is never read as the next reply.
	if err := c.Noop(t.Context()); err != nil {
		t.Fatalf("Noop after refused reply: %v", err)
	}
	if p.Accepts() != 2 {
		t.Fatalf("tracker accepted %d connections; want 2 (refused one dropped)", p.Accepts())
	}
}

func TestClient_Do_Garbage(t *testing.T) {
	p := startPeer(t, replies(map[string]string{"noop": "HTTP/1.0 400 Bad Request"}))
	c := newClient(t, []string{p.Addr()}, nil)
	if err := c.Noop(t.Context()); !errors.Is(err, client.ErrProtocol) {
		t.Fatalf("Noop error = %v; want ErrProtocol", err)
	}
}

func TestClient_Close(t *testing.T) {
	p := startPeer(t, replies(map[string]string{"noop": "OK "}))
	c := newClient(t, []string{p.Addr()}, nil)
	if err := c.Noop(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := c.Noop(t.Context()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Noop after Close = %v; want ErrClosed", err)
	}
}

func TestClient_Concurrent(t *testing.T) {
	p := startPeer(t, func(r request) answer {
		// Echo the key back, so a reply given to the wrong caller shows.
		return answer{Line: "OK value=" + client.Escape(r.Args.Get("key")) + "&key=" + client.Escape(r.Args.Get("key"))}
	})
	c := newClient(t, []string{p.Addr()}, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := strings.Repeat("k", i+1)
			v, err := c.ServerSetting(t.Context(), key)
			if err == nil && v != key {
				err = errors.New("got " + v + "; want " + key)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
