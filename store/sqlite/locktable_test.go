package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gomogile/gomogile/store"
)

// The file's lock table keeps only the names held or waited for. It used to
// keep a semaphore for every name ever locked, and a tracker locks two
// names per file it stores (mgfs:fid:N, mgfs:fid:N:replicate): its memory
// grew with every upload for the life of the process.
func TestLockTable_ForgetsReleasedNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	s, err := store.Open(t.Context(), "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held, err := s.Lock(t.Context(), "held", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		l, err := s.Lock(t.Context(), fmt.Sprintf("mgfs:fid:%d", i), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	canonical, err := canonicalPath(path)
	if err != nil {
		t.Fatal(err)
	}
	filesMu.Lock()
	n := -1
	for _, f := range files {
		if f.path == canonical {
			n = f.locks.Len()
		}
	}
	filesMu.Unlock()
	if n != 1 {
		t.Errorf("the file's lock table keeps %d names after 2000 were locked and released, one still held; want 1", n)
	}
	_ = held.Release(t.Context())
}
