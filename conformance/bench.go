package conformance

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// RunBenchmarks measures the operations a tracker repeats most, through
// store.Open like Run. Backends put their raw-SQL baselines beside it in
// the same benchmark function, so each operation is compared with the
// statement it wraps in one run.
func RunBenchmarks(b *testing.B, h Harness) {
	benches := []struct {
		name string
		fn   func(*testing.B, *benchEnv)
	}{
		{"LockUncontended", benchLockUncontended},
		{"LockHandoff", benchLockHandoff},
		{"CreateCommit", benchCreateCommit},
		{"FileByKey", benchFileByKey},
		{"AddFileOn", benchAddFileOn},
		{"Lease", benchLease},
	}
	for _, bc := range benches {
		b.Run(bc.name, func(b *testing.B) {
			if err := h.Reset(b.Context()); err != nil {
				b.Fatalf("Reset: %v", err)
			}
			bc.fn(b, &benchEnv{h: h})
		})
	}
}

type benchEnv struct{ h Harness }

func (e *benchEnv) open(b *testing.B) *store.Store {
	b.Helper()
	s, err := store.Open(b.Context(), e.h.DSN())
	if err != nil {
		b.Fatalf("store.Open: %v", err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Errorf("Close: %v", err)
		}
	})
	return s
}

func benchLockUncontended(b *testing.B, e *benchEnv) {
	s := e.open(b)
	ctx := b.Context()
	b.ResetTimer()
	for range b.N {
		l, err := s.Lock(ctx, "bench:uncontended", time.Second)
		if err != nil {
			b.Fatalf("Lock: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatalf("Release: %v", err)
		}
	}
}

// benchLockHandoff has two trackers take turns on one lock; each op is one
// acquisition, most of them straight after the other's release.
func benchLockHandoff(b *testing.B, e *benchEnv) {
	ss := []*store.Store{e.open(b), e.open(b)}
	ctx := b.Context()
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 2)
	b.ResetTimer()
	for i, s := range ss {
		wg.Go(func() {
			for n.Add(1) <= int64(b.N) {
				l, err := s.Lock(ctx, "bench:handoff", 30*time.Second)
				if err != nil {
					errs[i] = err
					return
				}
				if err := l.Release(ctx); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

func benchCreateCommit(b *testing.B, e *benchEnv) {
	s := e.open(b)
	ctx := b.Context()
	d, err := s.CreateDomain(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		key := "k" + strconv.Itoa(i)
		fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key, DevIDs: []int{1, 2}})
		if err != nil {
			b.Fatalf("CreateTempFile: %v", err)
		}
		if _, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: key, Length: 1, DevIDs: []int{1, 2}, Replicate: true}); err != nil {
			b.Fatalf("CommitFile: %v", err)
		}
	}
}

func benchFileByKey(b *testing.B, e *benchEnv) {
	s := e.open(b)
	ctx := b.Context()
	d, err := s.CreateDomain(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	const files = 100
	for i := range files {
		key := "k" + strconv.Itoa(i)
		fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: key}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.FileByKey(ctx, d.ID, "k"+strconv.Itoa(i%files)); err != nil {
			b.Fatalf("FileByKey: %v", err)
		}
	}
}

// benchAddFileOn records a new copy of a committed file per op, so each op
// inserts a row and updates devcount. A fresh file every copiesPerFile ops
// keeps devcount within MogileFS's TINYINT column.
func benchAddFileOn(b *testing.B, e *benchEnv) {
	s := e.open(b)
	ctx := b.Context()
	d, err := s.CreateDomain(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	const copiesPerFile = 200
	var fid int64
	b.ResetTimer()
	for i := range b.N {
		if i%copiesPerFile == 0 {
			b.StopTimer()
			key := "k" + strconv.Itoa(i)
			if fid, err = s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key}); err != nil {
				b.Fatal(err)
			}
			if _, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: key}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, err := s.AddFileOn(ctx, fid, i%copiesPerFile+1); err != nil {
			b.Fatalf("AddFileOn: %v", err)
		}
	}
}

func benchLease(b *testing.B, e *benchEnv) {
	s := e.open(b)
	ctx := b.Context()
	entries := make([]store.QueueEntry, 0, 1000)
	for i := range b.N {
		entries = append(entries, store.QueueEntry{Fid: int64(i + 1)})
		if len(entries) == cap(entries) || i == b.N-1 {
			if err := s.Enqueue(ctx, store.QueueReplicate, entries...); err != nil {
				b.Fatalf("Enqueue: %v", err)
			}
			entries = entries[:0]
		}
	}
	b.ResetTimer()
	for range b.N {
		items, err := s.Lease(ctx, store.QueueReplicate, 1, time.Hour)
		if err != nil {
			b.Fatalf("Lease: %v", err)
		}
		if len(items) != 1 {
			b.Fatalf("Lease() returned %d rows; want 1", len(items))
		}
	}
}
