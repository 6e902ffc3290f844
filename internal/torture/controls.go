package torture

import (
	"context"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Control is a negative control: a Store wrapper, applied by every worker
// process, that breaks one promise on purpose; a run with it must report a
// violation of the invariant named.
type Control struct {
	Name      string
	Invariant string // prefix of the Check that must fail
	// FaultEvery is the fault schedule the control needs to show (0: none).
	FaultEvery time.Duration
	wrap       func(store.Store) store.Store
}

// Controls lists the negative controls, by name.
func Controls() []Control { return controls }

var controls = []Control{
	{Name: "lock-not-exclusive", Invariant: "locks: no two holders at once", wrap: func(s store.Store) store.Store { return sharedLock{s} }},
}

var brokenWrappers = func() map[string]func(store.Store) store.Store {
	m := map[string]func(store.Store) store.Store{}
	for _, c := range controls {
		m[c.Name] = c.wrap
	}
	return m
}()

// sharedLock makes every Lock succeed at once, as a backend that took a
// lock on a pooled connection would.
type sharedLock struct{ store.Store }

func (s sharedLock) Lock(ctx context.Context, name string, timeout time.Duration) (store.Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &fakeHeld{name: name, lost: make(chan struct{})}, nil
}

type fakeHeld struct {
	name string
	lost chan struct{}
}

func (l *fakeHeld) Name() string                      { return l.name }
func (l *fakeHeld) Token() int64                      { return 0 }
func (l *fakeHeld) Lost() <-chan struct{}             { return l.lost }
func (l *fakeHeld) Release(ctx context.Context) error { return nil }
