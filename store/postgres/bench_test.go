package postgres_test

import (
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/rawbench"
	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store/postgres"
)

// BenchmarkLockCycle compares one Lock+Release of a free lock with the raw
// SQL alternatives, in the same run on the same server:
//
//   - Store: this backend (an INSERT and a DELETE on unlogged tables, each
//     one round trip, the DELETE also notifying).
//   - StoreLogged: the same Store with its lock tables made durable (ALTER
//     TABLE … SET LOGGED), the alternative to the lock epoch against a
//     crash's emptied tables; see the package doc, # Locks.
//   - Advisory: pg_advisory_lock + pg_advisory_unlock on one session, what
//     MogileFS did (and what cannot work behind a transaction pooler).
//   - LoggedInsertDelete: a durable INSERT then DELETE, each its own
//     transaction, as a lock table without UNLOGGED would cost.
//   - UnloggedInsertDelete: the same on an UNLOGGED table.
func BenchmarkLockCycle(b *testing.B) {
	dsn := testdb.Postgres(b)
	b.Run("Store", func(b *testing.B) {
		s := open(b, dsn)
		ctx := b.Context()
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
	b.Run("StoreLogged", func(b *testing.B) {
		ldsn := testdb.Postgres(b)
		s := open(b, ldsn)
		for _, t := range []string{postgres.EpochTable, postgres.OwnerTable, postgres.LockTable} {
			adminExec(b, ldsn, "ALTER TABLE "+t+" SET LOGGED")
		}
		ctx := b.Context()
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
	raw := func(b *testing.B, setup string, cycle ...string) {
		s := open(b, dsn) // a pool through the same pgx stdlib driver as the Store's
		db, ok := sqlaccess.DB(s)
		if !ok {
			b.Fatalf("%T opens up no pool", s)
		}
		conn, err := db.Conn(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		ctx := b.Context()
		if setup != "" {
			if _, err := conn.ExecContext(ctx, setup); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			for _, q := range cycle {
				if _, err := conn.ExecContext(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("Advisory", func(b *testing.B) {
		raw(b, "", "SELECT pg_advisory_lock(42)", "SELECT pg_advisory_unlock(42)")
	})
	b.Run("LoggedInsertDelete", func(b *testing.B) {
		raw(b, "CREATE TABLE IF NOT EXISTS bench_logged (name BYTEA PRIMARY KEY, owner BIGINT NOT NULL)",
			"INSERT INTO bench_logged VALUES ('\\x6c6f636b', 1)", "DELETE FROM bench_logged WHERE name = '\\x6c6f636b' AND owner = 1")
	})
	b.Run("UnloggedInsertDelete", func(b *testing.B) {
		raw(b, "CREATE UNLOGGED TABLE IF NOT EXISTS bench_unlogged (name BYTEA PRIMARY KEY, owner BIGINT NOT NULL)",
			"INSERT INTO bench_unlogged VALUES ('\\x6c6f636b', 1)", "DELETE FROM bench_unlogged WHERE name = '\\x6c6f636b' AND owner = 1")
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

// BenchmarkComparePooler is BenchmarkCompare in pooler mode, as a tracker
// behind a transaction-mode pooler is configured (no LISTEN, no prepared
// statements; see the package doc, # Poolers): its lines say
// backend=postgres-pooler, and its handoff figures are the ones without
// notifications.
func BenchmarkComparePooler(b *testing.B) {
	h := newHarness(b, "lock_notify=false", "default_query_exec_mode=simple_protocol")
	rawbench.CompareOnceAs(b, "postgres-pooler", h.DSN(), func(b *testing.B) {
		if err := h.Reset(b.Context()); err != nil {
			b.Fatal(err)
		}
	})
}
