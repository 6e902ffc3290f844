package sqlstore

import (
	"errors"
	"testing"
)

// classifyOnly is a Dialect that only classifies errors.
type classifyOnly struct{ Dialect }

var (
	errConflict = errors.New("conflict")
	errLost     = errors.New("connection lost")
)

func (classifyOnly) Classify(err error) ErrorKind {
	switch {
	case errors.Is(err, errConflict):
		return ErrKindRetry
	case errors.Is(err, errLost):
		return ErrKindConnLost
	}
	return ErrOther
}

// Config.ConflictAttempts raises the budget of conflicts only: a lost
// connection is given up after maxAttempts as before, and 0 (or less than
// maxAttempts) leaves conflicts at maxAttempts too.
func TestLastAttempt(t *testing.T) {
	for _, c := range []struct {
		cfg  int
		err  error
		last int // the attempt (from 0) that is the last
	}{
		{0, errConflict, maxAttempts - 1},
		{0, errLost, maxAttempts - 1},
		{3, errConflict, maxAttempts - 1},
		{32, errConflict, 31},
		{32, errLost, maxAttempts - 1},
	} {
		s := &Store{d: classifyOnly{}, conflictAttempts: conflictAttempts(c.cfg)}
		for attempt := range c.last + 2 {
			if got, want := s.lastAttempt(c.err, attempt), attempt >= c.last; got != want {
				t.Errorf("ConflictAttempts %d, %v: lastAttempt(attempt %d) = %v; want %v", c.cfg, c.err, attempt, got, want)
			}
		}
	}
}
