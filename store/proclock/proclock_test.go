package proclock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// A tracker locks two names per stored file; a table that kept an entry
// per name ever locked would grow by them for the process's life.
func TestTable_ForgetsFreedNames(t *testing.T) {
	var tb Table
	never := make(chan struct{})
	for i := range 10000 {
		s, err := tb.Acquire(t.Context(), fmt.Sprintf("mgfs:fid:%d", i), 0, never)
		if err != nil {
			t.Fatal(err)
		}
		s.Free()
		s.Free() // a second Free does nothing
	}
	if n := tb.Len(); n != 0 {
		t.Errorf("%d entries left after every slot was freed; want 0", n)
	}
}

func TestTable_Refusals(t *testing.T) {
	var tb Table
	closed := make(chan struct{})
	held, err := tb.Acquire(t.Context(), "n", 0, closed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Acquire(t.Context(), "n", 0, closed); !errors.Is(err, store.ErrLockTimeout) {
		t.Errorf("try-lock of a held name: %v; want ErrLockTimeout", err)
	}
	if _, err := tb.Acquire(t.Context(), "n", 20*time.Millisecond, closed); !errors.Is(err, store.ErrLockTimeout) {
		t.Errorf("timed wait on a held name: %v; want ErrLockTimeout", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if _, err := tb.Acquire(ctx, "n", time.Minute, closed); !errors.Is(err, context.Canceled) {
		t.Errorf("wait whose context ends: %v; want context.Canceled", err)
	}
	go func() { time.Sleep(10 * time.Millisecond); close(closed) }()
	if _, err := tb.Acquire(t.Context(), "n", time.Minute, closed); !errors.Is(err, store.ErrClosed) {
		t.Errorf("wait whose Store closes: %v; want ErrClosed", err)
	}
	if n := tb.Len(); n != 1 {
		t.Errorf("%d entries while one name is held and nobody waits; want 1", n)
	}
	held.Free()
	if n := tb.Len(); n != 0 {
		t.Errorf("%d entries after the holder freed its slot; want 0", n)
	}
}

// Waiters on one name hold it one at a time, each gets it, and the table
// is empty once they are done.
func TestTable_MutualExclusion(t *testing.T) {
	var tb Table
	never := make(chan struct{})
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				s, err := tb.Acquire(t.Context(), "hot", time.Minute, never)
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				// Stay a moment, so that a second holder would be seen.
				time.Sleep(20 * time.Microsecond)
				inside.Add(-1)
				s.Free()
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("%d holders at once; want 1", m)
	}
	if n := tb.Len(); n != 0 {
		t.Errorf("%d entries left; want 0", n)
	}
}
