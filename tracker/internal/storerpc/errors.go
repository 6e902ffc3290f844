package storerpc

import (
	"context"
	"errors"

	"github.com/gomogile/gomogile/store"
)

// wireErr is an error on the wire: its text, and the names of the
// sentinels it matched at the serving end, so errors.Is works at the
// calling end.
type wireErr struct {
	Op  string   `json:"op,omitempty"` // a store.OpError's Op; Msg is then its Err's text
	Msg string   `json:"msg"`
	Is  []string `json:"is,omitempty"`
}

// sentinels are the errors callers match with errors.Is: the store's, and
// the context's.
var sentinels = []struct {
	name string
	err  error
}{
	{"not_found", store.ErrNotFound},
	{"duplicate", store.ErrDuplicate},
	{"has_files", store.ErrHasFiles},
	{"has_classes", store.ErrHasClasses},
	{"has_devices", store.ErrHasDevices},
	{"invalid", store.ErrInvalid},
	{"lock_timeout", store.ErrLockTimeout},
	{"lock_lost", store.ErrLockLost},
	{"closed", store.ErrClosed},
	{"schema_mismatch", store.ErrSchemaMismatch},
	{"unknown_outcome", store.ErrUnknownOutcome},
	{"fenced", store.ErrFenced},
	{"lock_service_mismatch", store.ErrLockServiceMismatch},
	{"unavailable", store.ErrUnavailable},
	{"no_space", store.ErrNoSpace},
	{"canceled", context.Canceled},
	{"deadline", context.DeadlineExceeded},
}

func encodeErr(err error) *wireErr {
	w := &wireErr{Msg: err.Error()}
	if oe, ok := err.(*store.OpError); ok {
		// The other end's Store says what it was doing itself.
		w.Op, w.Msg = oe.Op, oe.Err.Error()
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			w.Is = append(w.Is, s.name)
		}
	}
	return w
}

// remoteError is an error the serving end returned.
type remoteError struct {
	msg string
	is  []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.is }

func decodeErr(w *wireErr) error {
	e := &remoteError{msg: w.Msg}
	for _, name := range w.Is {
		for _, s := range sentinels {
			if s.name == name {
				e.is = append(e.is, s.err)
			}
		}
	}
	if w.Op != "" {
		return &store.OpError{Op: w.Op, Err: e}
	}
	return e
}
