package store

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// MaxLockName is the longest lock name, in bytes, every backend accepts.
const MaxLockName = 255

// CheckLock validates Lock's arguments; backends call it first so the rules
// are the same everywhere.
func CheckLock(name string, timeout time.Duration) error {
	if name == "" || len(name) > MaxLockName {
		return fmt.Errorf("%w: lock name must be 1 to %d bytes, got %d", ErrInvalid, MaxLockName, len(name))
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: lock name %q is not valid UTF-8", ErrInvalid, name)
	}
	if timeout < 0 {
		return fmt.Errorf("%w: negative lock timeout %v", ErrInvalid, timeout)
	}
	return nil
}
