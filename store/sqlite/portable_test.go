package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// The store.Store (store.New) in front of SQLite's Backend: these
// tests live here because package store's own tests must not register a
// backend.

// seen is a Backend over SQLite's that records what reaches it: the
// portable Store's guarantees are about what a backend is spared.
type seen struct {
	store.Backend
	mu    sync.Mutex
	calls []string
	noDL  []string // calls whose context had no deadline
}

func (b *seen) saw(ctx context.Context, op string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, op)
	if _, ok := ctx.Deadline(); !ok {
		b.noDL = append(b.noDL, op)
	}
}

func (b *seen) CreateDomain(ctx context.Context, name string) (store.Domain, error) {
	b.saw(ctx, "CreateDomain")
	return b.Backend.CreateDomain(ctx, name)
}

func (b *seen) File(ctx context.Context, fid int64) (store.File, error) {
	b.saw(ctx, "File")
	return b.Backend.File(ctx, fid)
}

func (b *seen) Lock(ctx context.Context, name string, timeout time.Duration) (store.Lock, error) {
	b.saw(ctx, "Lock")
	return b.Backend.Lock(ctx, name, timeout)
}

func (b *seen) log() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.calls...)
}

// openSeen opens SQLite's Backend through store.Open, takes it back out of
// the store.Store and puts a new store.Store with opts in front of
// the recorder.
func openSeen(t *testing.T, opts *store.Options) (*store.Store, *seen) {
	t.Helper()
	st, err := store.Open(t.Context(), "sqlite:///"+filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	b := &seen{Backend: st.Unwrap()}
	p := store.New(b, opts)
	t.Cleanup(func() { p.Close() })
	return p, b
}

func TestNew_RefusesBadArgumentsBeforeTheBackend(t *testing.T) {
	st, b := openSeen(t, nil)
	ctx := t.Context()
	for _, name := range []string{"", strings.Repeat("x", 256), "a\x00b", "\xff"} {
		if _, err := st.CreateDomain(ctx, name); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateDomain(%q): %v; want ErrInvalid", name, err)
		}
	}
	if _, err := st.Lock(ctx, "", 0); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Lock(\"\"): %v; want ErrInvalid", err)
	}
	if got := b.log(); len(got) != 0 {
		t.Errorf("the backend was called with refused arguments: %v", got)
	}
	if _, err := st.CreateDomain(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	if got := b.log(); len(got) != 1 {
		t.Errorf("backend calls = %v; want the one good CreateDomain", got)
	}
}

func TestNew_DefaultDeadline(t *testing.T) {
	st, b := openSeen(t, nil)
	if _, err := st.File(context.Background(), 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("File(1): %v; want ErrNotFound", err)
	}
	l, err := st.Lock(context.Background(), "x", 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Release(context.Background())
	if len(b.noDL) != 0 {
		t.Errorf("calls that reached the backend without a deadline: %v", b.noDL)
	}

	none, b2 := openSeen(t, &store.Options{OpTimeout: -1})
	none.File(context.Background(), 1)
	if len(b2.noDL) != 1 {
		t.Errorf("with OpTimeout < 0 the backend saw deadlines where the caller gave none: %v of %v", b2.noDL, b2.calls)
	}
}

func TestNew_ErrorsPrefixedOnce(t *testing.T) {
	st, _ := openSeen(t, nil)
	_, err := st.File(t.Context(), 99)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("File(99): %v; want ErrNotFound", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "store: read file 99: ") || strings.Count(msg, "read file") != 1 {
		t.Errorf("error %q; want one prefix \"store: read file 99: \"", msg)
	}
}

func TestNew_ClosedRefusedBeforeTheBackend(t *testing.T) {
	st, b := openSeen(t, nil)
	if _, err := st.Lock(t.Context(), "held at close", 0); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if h, _ := store.Held(st); len(h) != 0 {
		t.Errorf("Held after Close = %v; want none: Close ended them", h)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v; want nil", err)
	}
	if _, err := st.CreateDomain(t.Context(), "d"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("CreateDomain after Close: %v; want ErrClosed", err)
	}
	if _, err := st.Lock(t.Context(), "x", 0); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Lock after Close: %v; want ErrClosed", err)
	}
	if got := b.log(); len(got) != 1 {
		t.Errorf("backend calls = %v; want only the Lock before Close", got)
	}
}

// New over a Store New made returns it: no second layer, no second prefix.
func TestNew_Idempotent(t *testing.T) {
	st, _ := openSeen(t, nil)
	if again := store.New(st, nil); again != st {
		t.Errorf("New(New(b)) = %T, a second layer", again)
	}
}

// The observer hears of each call by its method's name, refusals included.
func TestNew_Observer(t *testing.T) {
	obs := &recorder{}
	st, _ := openSeen(t, &store.Options{Observer: obs})
	ctx := t.Context()
	st.CreateDomain(ctx, "")
	st.CreateDomain(ctx, "d")
	l, err := st.Lock(ctx, "mgfs:fid:1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := store.Held(st); !ok || len(h) != 1 || h[0].Name != "mgfs:fid:1" {
		t.Errorf("Held = %v, %v; want mgfs:fid:1", h, ok)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if h, _ := store.Held(st); len(h) != 0 {
		t.Errorf("Held after the release = %v; want none", h)
	}
	want := "CreateDomain:invalid CreateDomain:ok Lock:ok granted:mgfs:fid:1 released:mgfs:fid:1 Release:ok"
	if got := obs.String(); got != want {
		t.Errorf("observed %q; want %q", got, want)
	}
}

type recorder struct {
	mu  sync.Mutex
	evs []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.evs = append(r.evs, s)
	r.mu.Unlock()
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.evs, " ")
}

func (r *recorder) Call(op string, _ time.Duration, err error) {
	switch {
	case err == nil:
		r.add(op + ":ok")
	case errors.Is(err, store.ErrInvalid):
		r.add(op + ":invalid")
	default:
		r.add(op + ":" + err.Error())
	}
}

func (r *recorder) Queue(q store.Queue, ev store.QueueEvent, n int) {}

func (r *recorder) Lock(ev store.LockEvent) {
	switch ev.Kind {
	case store.LockGranted:
		r.add("granted:" + ev.Name)
	case store.LockReleased:
		r.add("released:" + ev.Name)
	}
}
