// Package rawbench measures the raw SQL that the shared layer's hottest
// operations wrap, so that an SQL backend's benchmarks show each operation
// beside its floor in the same run: conformance.RunBenchmarks times the
// Store, Run here times the bare statements on the same database and pool.
package rawbench

import (
	"database/sql"
	"strconv"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/store"
)

// Run opens dsn once and times, as sub-benchmarks, the statements behind
// FileByKey (one indexed SELECT), AddFileOn (INSERT into file_on and a
// devcount UPDATE in one transaction) and a one-row Lease (a due-row SELECT
// and a conditional UPDATE). reset empties the database before each.
func Run(b *testing.B, dsn string, reset func(b *testing.B)) {
	open := func(b *testing.B) (*store.Store, *sql.DB, func(string) string) {
		ss := openSQL(b, dsn, reset)
		p := parts(b, ss)
		return ss, p.DB, p.Dialect.Rebind
	}
	b.Run("RawFileByKey", func(b *testing.B) {
		s, db, q := open(b)
		ctx := b.Context()
		d := mustDomain(b, s)
		const files = 100
		for i := range files {
			commit(b, s, d, "k"+strconv.Itoa(i))
		}
		stmt := q("SELECT fid, dmid, dkey, length, classid, devcount FROM file WHERE dmid = ? AND dkey = ?")
		var f store.File
		for i := 0; b.Loop(); i++ {
			err := db.QueryRowContext(ctx, stmt, d, "k"+strconv.Itoa(i%files)).
				Scan(&f.Fid, &f.DomainID, &f.Key, &f.Length, &f.ClassID, &f.DevCount)
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RawAddFileOn", func(b *testing.B) {
		s, db, q := open(b)
		ctx := b.Context()
		d := mustDomain(b, s)
		ins := q("INSERT INTO file_on (fid, devid) VALUES (?, ?)")
		upd := q("UPDATE file SET devcount = devcount + 1 WHERE fid = ?")
		// A fresh file every copiesPerFile ops, as in the suite's benchmark.
		const copiesPerFile = 200
		var fid int64
		b.ResetTimer()
		for i := range b.N {
			if i%copiesPerFile == 0 {
				b.StopTimer()
				fid = commit(b, s, d, "k"+strconv.Itoa(i))
				b.StartTimer()
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, ins, fid, i%copiesPerFile+1); err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, upd, fid); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RawLease", func(b *testing.B) {
		s, db, q := open(b)
		ctx := b.Context()
		var entries []store.QueueEntry
		for i := range b.N {
			entries = append(entries, store.QueueEntry{Fid: int64(i + 1)})
		}
		if err := s.Enqueue(ctx, store.QueueReplicate, entries...); err != nil {
			b.Fatal(err)
		}
		now := unixNow(b, s)
		due := q("SELECT fid, nexttry FROM file_to_replicate WHERE nexttry <= " + now + " ORDER BY nexttry LIMIT 1")
		claim := q("UPDATE file_to_replicate SET nexttry = " + now + " + 3600 WHERE fid = ? AND nexttry = ?")
		b.ResetTimer()
		for range b.N {
			var fid, next int64
			if err := db.QueryRowContext(ctx, due).Scan(&fid, &next); err != nil {
				b.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, claim, fid, next); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func mustDomain(b *testing.B, s *store.Store) int {
	d, err := s.CreateDomain(b.Context(), "rawbench")
	if err != nil {
		b.Fatal(err)
	}
	return d.ID
}

func commit(b *testing.B, s *store.Store, dmid int, key string) int64 {
	fid, err := s.CreateTempFile(b.Context(), store.TempFile{DomainID: dmid, Key: key})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.CommitFile(b.Context(), store.Commit{Fid: fid, DomainID: dmid, Key: key}); err != nil {
		b.Fatal(err)
	}
	return fid
}

// unixNow is the dialect's SQL for the database clock.
func unixNow(b *testing.B, s *store.Store) string {
	p, ok := sqlaccess.Of(s)
	if !ok {
		b.Fatalf("%T opens up no dialect", s)
	}
	return p.Dialect.UnixNow()
}

// openSQL empties the database with reset, then opens dsn (a Store as
// users get it, the portable layer in front of sqlstore), closed with b; a
// Store of another kind skips b, having no raw SQL to compare with.
func openSQL(b *testing.B, dsn string, reset func(b *testing.B)) *store.Store {
	reset(b)
	s, err := store.Open(b.Context(), dsn)
	if err != nil {
		b.Fatalf("store.Open: %v", err)
	}
	b.Cleanup(func() { s.Close() })
	if _, ok := sqlaccess.Of(s); !ok {
		b.Skipf("%T is not built on sqlstore: no raw SQL to compare with", s)
	}
	return s
}

// parts is what sqlaccess opens up of s: its pool and dialect.
func parts(b *testing.B, s *store.Store) sqlaccess.Parts {
	p, ok := sqlaccess.Of(s)
	if !ok {
		b.Fatalf("%T opens up no pool or dialect", s)
	}
	return p
}
