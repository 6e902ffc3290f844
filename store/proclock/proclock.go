// Package proclock is a table of named locks held within one process: the
// lock mechanism of an embedded backend, whose database only one process
// may open (store/sqlite, examples/bolt-backend). A name is a one-slot
// semaphore; holding the lock is holding the slot.
//
// The table keeps an entry only while someone holds or waits for its name,
// so it does not grow with every name ever locked: a tracker locks two
// names per file it stores (mgfs:fid:N, mgfs:fid:N:replicate), which over
// its life are millions.
//
// A Table grants slots only; the backend around it keeps which Store holds
// what, fences, and frees a closed Store's slots (see store.LockService).
package proclock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Table is the lock namespace of one database in this process, shared by
// every Store open on it. The zero value is ready to use.
type Table struct {
	mu    sync.Mutex
	names map[string]*entry
}

type entry struct {
	slot chan struct{}
	refs int // the holder and the waiters; guarded by Table.mu
}

// Slot is a granted name. Free gives it back.
type Slot struct {
	t    *Table
	name string
	e    *entry
	once sync.Once
}

// Acquire takes name's slot, waiting at most timeout (0: not at all). It
// fails with store.ErrLockTimeout (wrapped) when the name stays held, with
// ctx's error when ctx ends first, and with store.ErrClosed when closed is
// closed first (the Store closing: its waits end).
func (t *Table) Acquire(ctx context.Context, name string, timeout time.Duration, closed <-chan struct{}) (*Slot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e := t.ref(name)
	select {
	case e.slot <- struct{}{}:
		return &Slot{t: t, name: name, e: e}, nil
	default:
	}
	var err error
	if timeout == 0 {
		err = fmt.Errorf("%w: %q is held", store.ErrLockTimeout, name)
	} else {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case e.slot <- struct{}{}:
			return &Slot{t: t, name: name, e: e}, nil
		case <-timer.C:
			err = fmt.Errorf("%w: %q still held after %v", store.ErrLockTimeout, name, timeout)
		case <-ctx.Done():
			err = ctx.Err()
		case <-closed:
			err = store.ErrClosed
		}
	}
	t.unref(name, e)
	return nil, err
}

// Free gives the slot back, once; later calls do nothing.
func (s *Slot) Free() {
	s.once.Do(func() {
		<-s.e.slot
		s.t.unref(s.name, s.e)
	})
}

// Len is how many names the table keeps now: those held or waited for.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.names)
}

// ref counts one more user of name's entry, making it when missing.
func (t *Table) ref(name string) *entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.names == nil {
		t.names = map[string]*entry{}
	}
	e := t.names[name]
	if e == nil {
		e = &entry{slot: make(chan struct{}, 1)}
		t.names[name] = e
	}
	e.refs++
	return e
}

// unref counts one user less, dropping the entry when nobody is left.
func (t *Table) unref(name string, e *entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(t.names, name)
	}
}
