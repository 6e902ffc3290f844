//go:build unix

package storerpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
	"github.com/gomogile/gomogile/tracker/internal/storerpc"
)

// openStore opens a fresh SQLite Store, the one a tracker serves.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), "sqlite:///"+filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// socketpair is the two ends a tracker and its worker process hold.
func socketpair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return conn(fds[0]), conn(fds[1])
}

// pair serves st on one end and returns the other end's Store, with both
// Conns (server, client).
func pair(t *testing.T, st *store.Store, onMsg func(string, json.RawMessage)) (*storerpc.Conn, *storerpc.Conn, *storerpc.Client) {
	t.Helper()
	a, b := socketpair(t)
	srv := storerpc.New(a, st, nil)
	cli := storerpc.New(b, nil, onMsg)
	t.Cleanup(func() { cli.Close(); srv.Close(); srv.Wait() })
	return srv, cli, cli.Store(st.Capabilities())
}

func TestRoundTrip(t *testing.T) {
	ctx := t.Context()
	st := openStore(t)
	_, _, rs := pair(t, st, nil)

	d, err := rs.CreateDomain(ctx, "photos")
	if err != nil || d.Name != "photos" || d.ID == 0 {
		t.Fatalf("CreateDomain = %+v, %v", d, err)
	}
	if _, err := rs.CreateDomain(ctx, "photos"); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("second CreateDomain: %v, want ErrDuplicate across the connection", err)
	}
	c, err := rs.CreateClass(ctx, store.Class{DomainID: d.ID, Name: "big", MinDevCount: 3})
	if err != nil || c.ID == 0 {
		t.Fatalf("CreateClass = %+v, %v", c, err)
	}
	classes, err := st.Classes(ctx)
	if err != nil || len(classes) != 1 || classes[0].MinDevCount != 3 {
		t.Fatalf("the served store has %+v, %v", classes, err)
	}
	if _, err := rs.FileByKey(ctx, d.ID, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("FileByKey: %v, want ErrNotFound", err)
	}
	// A variadic method.
	if err := rs.Enqueue(ctx, store.QueueDelete, store.QueueEntry{Fid: 7}, store.QueueEntry{Fid: 8}); err != nil {
		t.Fatal(err)
	}
	if n, err := st.QueueLength(ctx, store.QueueDelete); err != nil || n != 2 {
		t.Fatalf("QueueLength = %d, %v; want the 2 rows enqueued through the connection", n, err)
	}
	if got := rs.Capabilities(); got != st.Capabilities() {
		t.Fatalf("Capabilities = %+v, want %+v", got, st.Capabilities())
	}
	if _, err := rs.Now(ctx); err != nil {
		t.Fatal(err)
	}
}

// Every method of the contract (store.Backend) reaches the served Store: called with
// zero arguments, each answers as the Store does (maybe an error of its
// own), never with the connection's "no such method" or a decoding error.
func TestEveryMethodReachesTheStore(t *testing.T) {
	st := openStore(t)
	_, _, rs := pair(t, st, nil)
	v := reflect.ValueOf(rs)
	it := reflect.TypeOf((*store.Backend)(nil)).Elem()
	for i := range it.NumMethod() {
		m := it.Method(i)
		if m.Name == "Close" || m.Name == "Capabilities" {
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		in := []reflect.Value{reflect.ValueOf(ctx)}
		for j := 1; j < m.Type.NumIn(); j++ {
			in = append(in, reflect.Zero(m.Type.In(j)))
		}
		fn := v.MethodByName(m.Name)
		var out []reflect.Value
		if m.Type.IsVariadic() {
			out = fn.CallSlice(in)
		} else {
			out = fn.Call(in)
		}
		cancel()
		if err, _ := out[len(out)-1].Interface().(error); err != nil && strings.HasPrefix(err.Error(), "storerpc:") {
			t.Errorf("%s: %v", m.Name, err)
		}
		if l, ok := out[0].Interface().(store.Lock); ok && l != nil {
			l.Release(t.Context())
		}
	}
}

func TestLocks_ExclusiveAndReleasedWithTheConnection(t *testing.T) {
	ctx := t.Context()
	st := openStore(t)
	_, cliA, a := pair(t, st, nil)
	_, _, b := pair(t, st, nil)

	la, err := a.Lock(ctx, "mgfs:fid:1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx, "mgfs:fid:1", 0); !errors.Is(err, store.ErrLockTimeout) {
		t.Fatalf("second holder: %v, want ErrLockTimeout", err)
	}
	// A held lock's waiter gives up when its context does, promptly.
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	t0 := time.Now()
	_, err = b.Lock(wctx, "mgfs:fid:1", time.Minute)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 3*time.Second {
		t.Fatalf("waiting Lock: %v after %v, want DeadlineExceeded at once", err, time.Since(t0))
	}
	// The holder's process going away (its end closing) frees its locks.
	cliA.Close()
	select {
	case <-la.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost not closed at the holder when its connection ended")
	}
	lb, err := b.Lock(ctx, "mgfs:fid:1", 5*time.Second)
	if err != nil {
		t.Fatalf("after the holder's connection ended: %v", err)
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("token %d after %d", lb.Token(), la.Token())
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatalf("second Release: %v, want nil", err)
	}
	if _, err := st.Lock(ctx, "mgfs:fid:1", 0); err != nil {
		t.Fatalf("served store after Release: %v", err)
	}
}

func TestFences_CrossTheConnection(t *testing.T) {
	ctx := t.Context()
	st := openStore(t)
	_, _, a := pair(t, st, nil)
	old, err := a.Lock(ctx, "mgfs:fid:9", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetServerSetting(store.WithFence(ctx, old), "k", "1"); err != nil {
		t.Fatalf("write under a current fence: %v", err)
	}
	if err := old.Release(ctx); err != nil {
		t.Fatal(err)
	}
	newer, err := st.Lock(ctx, "mgfs:fid:9", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Release(ctx)
	if err := a.SetServerSetting(store.WithFence(ctx, old), "k", "2"); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("write under a stale fence: %v, want ErrFenced", err)
	}
	if v, _ := st.ServerSetting(ctx, "k"); v != "1" {
		t.Fatalf("setting = %q after a fenced write, want 1", v)
	}
}

// A lock the served Store loses is lost at the holder too.
func TestLocks_LostReachesTheHolder(t *testing.T) {
	st := openStore(t)
	_, _, a := pair(t, st, nil)
	l, err := a.Lock(t.Context(), "mgfs:fid:3", 0)
	if err != nil {
		t.Fatal(err)
	}
	st.Close() // SQLite's locks are lost when their Store closes
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost did not reach the holder")
	}
}

func TestMessagesAndEnd(t *testing.T) {
	st := openStore(t)
	got := make(chan string, 1)
	srv, _, rs := pair(t, st, func(kind string, body json.RawMessage) { got <- kind + " " + string(body) })
	if err := srv.Send("wake", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != `wake {"n":1}` {
			t.Fatalf("message %q", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("message not delivered")
	}
	srv.Close()
	srv.Wait()
	if err := rs.Ping(t.Context()); !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("Ping after the serving end closed: %v", err)
	}
}

// A released lock leaves nothing running at the serving end: a worker
// takes a lock per file it touches, thousands in its life.
func TestLocks_ReleasedLeaveNoGoroutine(t *testing.T) {
	ctx := t.Context()
	st := openStore(t)
	_, _, a := pair(t, st, nil)
	cycle := func(n int) {
		for i := range n {
			l, err := a.Lock(ctx, fmt.Sprintf("mgfs:fid:%d", i), 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	cycle(10) // warm up: the connection's own goroutines
	before := runtime.NumGoroutine()
	cycle(200)
	time.Sleep(100 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before+20 {
		t.Fatalf("%d goroutines after 200 locks taken and released, %d before", after, before)
	}
}
