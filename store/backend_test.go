package store_test

import (
	"testing"

	"github.com/gomogile/gomogile/store"
)

// layer is a decorator around a Backend, as a test's or the Store.
type layer struct {
	store.Backend
	inner store.Backend
}

func (l layer) Unwrap() store.Backend { return l.inner }

type bottom struct{ store.Backend }

func (bottom) Marker() {}

func TestFind_ThroughLayers(t *testing.T) {
	b := bottom{}
	s := layer{inner: layer{inner: b}}
	got, ok := store.Find[interface{ Marker() }](s)
	if !ok || got != (interface{ Marker() })(b) {
		t.Errorf("Find through two layers = %v, %v; want the bottom Store", got, ok)
	}
	if _, ok := store.Find[bottom](layer{inner: layer{}}); ok {
		t.Error("Find found a type no layer has")
	}
	if _, ok := store.Held(s); ok {
		t.Error("Held reported a table for Stores New did not make")
	}
}
