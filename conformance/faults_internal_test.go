package conformance

import (
	"context"
	"testing"

	"github.com/gomogile/gomogile/store"
)

// faulty is a Store (of which only the fault hooks are ever called here)
// with the fault hooks.
type faulty struct{ store.Backend }

func (faulty) KillLockSession(context.Context, store.Lock) error { return nil }
func (faulty) CrashOwner(context.Context) error                  { return nil }

// wrapper wraps a Store the way storemetrics' does, forwarding no fault
// hook.
type wrapper struct {
	store.Backend
	inner store.Backend
}

func (w wrapper) Unwrap() store.Backend { return w.inner }

type bareHarness struct{ Harness }

func (bareHarness) Name() string { return "test" }

// The suite finds the fault hooks of a Store through wrappers that Unwrap,
// and names what is missing when no Store in the chain has them.
func TestFaultsOf_ThroughWrappers(t *testing.T) {
	e := &env{h: bareHarness{}}
	inner := faulty{}
	for _, s := range []store.Backend{inner, wrapper{inner: inner}, wrapper{inner: wrapper{inner: inner}}} {
		f, err := e.faultsOf(s)
		if err != nil || f != Faults(inner) {
			t.Errorf("faultsOf(%T) = %v, %v; want the inner Store's hooks", s, f, err)
		}
	}
	if _, err := e.faultsOf(wrapper{inner: wrapper{}}); err == nil {
		t.Error("faultsOf found hooks in a chain without any")
	}
}
