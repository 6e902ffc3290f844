package mysql_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/rawbench"
	"github.com/gomogile/gomogile/store/mysql"
)

// BenchmarkLock compares a Lock+Release cycle through the Store with the
// raw statements it wraps, GET_LOCK and RELEASE_LOCK on one pinned
// connection, in the same run against the same server.
func BenchmarkLock(b *testing.B) {
	h := newHarness(b)
	ctx := context.Background()

	b.Run("Store", func(b *testing.B) {
		s := h.open(b)
		for b.Loop() {
			l, err := s.Lock(ctx, "bench", 0)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("RawGetLock", func(b *testing.B) {
		c := conn(b, h.admin)
		key := mysql.ServerLockName(h.database, "bench")
		for b.Loop() {
			var got, rel sql.NullInt64
			if err := c.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", key).Scan(&got); err != nil || got.Int64 != 1 {
				b.Fatalf("GET_LOCK = %v, %v", got, err)
			}
			if err := c.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", key).Scan(&rel); err != nil || rel.Int64 != 1 {
				b.Fatalf("RELEASE_LOCK = %v, %v", rel, err)
			}
		}
	})

	// The raw pair again, each statement under a cancellable context as
	// the Store's are: the driver then hands every query to its cancel
	// watcher goroutine, a cost any caller honouring ctx pays.
	b.Run("RawGetLockWithContext", func(b *testing.B) {
		c := conn(b, h.admin)
		key := mysql.ServerLockName(h.database, "bench")
		for b.Loop() {
			cctx, cancel := context.WithCancel(ctx)
			var got, rel sql.NullInt64
			if err := c.QueryRowContext(cctx, "SELECT GET_LOCK(?, 0)", key).Scan(&got); err != nil || got.Int64 != 1 {
				b.Fatalf("GET_LOCK = %v, %v", got, err)
			}
			if err := c.QueryRowContext(cctx, "SELECT RELEASE_LOCK(?)", key).Scan(&rel); err != nil || rel.Int64 != 1 {
				b.Fatalf("RELEASE_LOCK = %v, %v", rel, err)
			}
			cancel()
		}
	})

	// Two Stores taking turns on one name, each on its own sessions.
	b.Run("TwoStoresAlternating", func(b *testing.B) {
		s1, s2 := h.open(b), h.open(b)
		for i := 0; b.Loop(); i++ {
			s := s1
			if i%2 == 1 {
				s = s2
			}
			l, err := s.Lock(ctx, "bench", 0)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCompare prints, for make bench, each hot Store operation beside
// the raw SQL doing its work, alternating over several passes (medians):
// "bench: backend=… op=… ours_us=… raw_us=… ratio=…" lines and a table.
func BenchmarkCompare(b *testing.B) {
	h := newHarness(b)
	rawbench.CompareOnce(b, h.DSN(), func(b *testing.B) {
		if err := h.Reset(b.Context()); err != nil {
			b.Fatal(err)
		}
	})
}
