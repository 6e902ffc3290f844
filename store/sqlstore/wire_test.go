package sqlstore_test

import (
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/faultproxy"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/mysql"
)

// serverDSNs are the server backends' test databases, each made private
// when called.
var serverDSNs = map[string]func(testing.TB) string{"postgres": testdb.Postgres, "mysql": testdb.MySQL}

// withParams adds query parameters to a URL DSN.
func withParams(tb testing.TB, dsn string, kv ...string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// openWire opens a Store on dsn through a proxy that counts its sessions
// and round trips.
func openWire(tb testing.TB, dsn string) (*store.Store, *faultproxy.Proxy) {
	tb.Helper()
	p, pdsn, err := faultproxy.Through(dsn, faultproxy.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	s, err := store.Open(tb.Context(), pdsn)
	if err != nil {
		tb.Fatalf("store.Open through the proxy: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s, p
}

// BenchmarkPool runs uploads (CreateTempFile, CommitFile, FileByKey) from 8
// goroutines at once, each pausing 1ms between create and commit for the
// client's upload to a storage node, on a Store whose pool keeps
// database/sql's default 2 idle connections and on one that keeps as many
// as a default tracker's concurrency (query_jobs 20 + workers + 2 = 26).
// sessions/op counts the server sessions opened per upload: the small pool
// closes connections the next burst must open again.
func BenchmarkPool(b *testing.B) {
	for _, backend := range []string{"postgres", "mysql"} {
		for _, idle := range []int{2, 26} {
			b.Run(backend+"/idle="+strconv.Itoa(idle), func(b *testing.B) {
				dsn := serverDSNs[backend](b)
				s, p := openWire(b, withParams(b, dsn, "max_idle_conns", strconv.Itoa(idle)))
				ctx := b.Context()
				d, err := s.CreateDomain(ctx, "pool")
				if err != nil {
					b.Fatal(err)
				}
				var seq atomic.Int64
				before := p.Stats().Accepted
				b.SetParallelism(8 / max(1, testingProcs()))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						key := "k" + strconv.FormatInt(seq.Add(1), 10)
						fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key})
						// The client's PUT to a storage node, during which
						// the tracker's pool sees fewer callers.
						time.Sleep(time.Millisecond)
						if err == nil {
							_, err = s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: key})
						}
						if err == nil {
							_, err = s.FileByKey(ctx, d.ID, key)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(p.Stats().Accepted-before)/float64(b.N), "sessions/op")
			})
		}
	}
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }

// BenchmarkCreateTempFile reserves fids from 8 goroutines on two Stores
// (two trackers) at once. Every reservation takes the one fid counter row,
// so what counts is how long each holds it: rt/op is the round trips per
// reservation on the wire.
func BenchmarkCreateTempFile(b *testing.B) {
	for _, backend := range []string{"postgres", "mysql"} {
		b.Run(backend, func(b *testing.B) {
			dsn := serverDSNs[backend](b)
			s1, p1 := openWire(b, dsn)
			s2, p2 := openWire(b, dsn)
			ctx := b.Context()
			d, err := s1.CreateDomain(ctx, "fids")
			if err != nil {
				b.Fatal(err)
			}
			ss := []*store.Store{s1, s2}
			var seq atomic.Int64
			before := p1.Stats().RoundTrips + p2.Stats().RoundTrips
			b.SetParallelism(8 / max(1, testingProcs()))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					if _, err := ss[n%2].CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k"}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			rt := p1.Stats().RoundTrips + p2.Stats().RoundTrips - before
			b.ReportMetric(float64(rt)/float64(b.N), "rt/op")
		})
	}
}

// BenchmarkLeaseManyDue leases 100 of 20,000 due rows, the replicate
// queue after a device died: rt/op is the round trips per Lease, and the
// (nexttry, fid) index lets the server stop after 100 rows instead of
// sorting them all. The leased rows are made due again between ops,
// untimed.
func BenchmarkLeaseManyDue(b *testing.B) {
	for _, backend := range []string{"postgres", "mysql"} {
		b.Run(backend, func(b *testing.B) {
			s, p := openWire(b, serverDSNs[backend](b))
			ctx := b.Context()
			const due = 20000
			entries := make([]store.QueueEntry, 0, 1000)
			for i := 1; i <= due; i++ {
				entries = append(entries, store.QueueEntry{Fid: int64(i)})
				if len(entries) == cap(entries) {
					if err := s.Enqueue(ctx, store.QueueReplicate, entries...); err != nil {
						b.Fatal(err)
					}
					entries = entries[:0]
				}
			}
			db := rawParts(b, s).DB
			unleased := "UPDATE file_to_replicate SET nexttry = 0 WHERE nexttry > " + rawParts(b, s).Dialect.UnixNow() + " + 60"
			if _, err := db.ExecContext(ctx, "ANALYZE TABLE file_to_replicate"); err != nil && backend == "mysql" {
				b.Fatal(err)
			} else if backend == "postgres" {
				if _, err := db.ExecContext(ctx, "ANALYZE file_to_replicate"); err != nil {
					b.Fatal(err)
				}
			}
			var rt int64
			b.ResetTimer()
			for range b.N {
				before := p.Stats().RoundTrips
				items, err := s.Lease(ctx, store.QueueReplicate, 100, time.Hour)
				if err != nil || len(items) != 100 {
					b.Fatalf("Lease(100) = %d items, %v", len(items), err)
				}
				rt += p.Stats().RoundTrips - before
				b.StopTimer()
				if _, err := db.ExecContext(ctx, unleased); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(rt)/float64(b.N), "rt/op")
		})
	}
}

// TestStore_RoundTrips pins the round trips of store operations the tracker
// runs per request or per queue item, counted on the wire as
// TestCommands_RoundTrips counts them per command (the least of a few runs,
// so PostgreSQL's lock renewal cannot add to it). Lease is one statement on
// PostgreSQL (a Claimer); on MySQL a transaction of two round trips on a
// connection that takes several statements per query (Config.Batch).
func TestStore_RoundTrips(t *testing.T) {
	want := map[string]map[string]int64{
		"postgres": {"CreateTempFile": 1, "Lease": 1, "CommitFile": 6, "AddFileOn": 6, "AddFileOnFenced": 7, "Enqueue": 3, "Reschedule": 4, "DeleteFile": 6, "LockRelease": 2},
		"mysql":    {"CreateTempFile": 1, "Lease": 2, "CommitFile": 2, "AddFileOn": 2, "AddFileOnFenced": 3, "Enqueue": 3, "Reschedule": 4, "DeleteFile": 6, "LockRelease": 2},
	}
	for backend, want := range want {
		t.Run(backend, func(t *testing.T) {
			s, p := openWire(t, serverDSNs[backend](t))
			ctx := t.Context()
			d, err := s.CreateDomain(ctx, "rt")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			count := func(op string, f func() error) {
				t.Helper()
				before := p.Stats().RoundTrips
				if err := f(); err != nil {
					t.Fatalf("%s: %v", op, err)
				}
				rt := p.Stats().RoundTrips - before
				if old, ok := got[op]; !ok || rt < old {
					got[op] = rt
				}
			}
			for i := range 3 {
				key := "k" + strconv.Itoa(i)
				var fid int64
				count("CreateTempFile", func() error {
					var err error
					fid, err = s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key, DevIDs: []int{1}})
					return err
				})
				count("CommitFile", func() error {
					_, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: key, Length: 1, DevIDs: []int{1}, Replicate: true})
					return err
				})
				count("AddFileOn", func() error { _, err := s.AddFileOn(ctx, fid, 2); return err })
				l, err := s.Lock(ctx, "rt:"+key, time.Second)
				if err != nil {
					t.Fatal(err)
				}
				count("AddFileOnFenced", func() error { _, err := s.AddFileOn(store.WithFence(ctx, l), fid, 3); return err })
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
				count("Enqueue", func() error { return s.Enqueue(ctx, store.QueueDelete, store.QueueEntry{Fid: fid + 1000}) })
				count("Lease", func() error {
					items, err := s.Lease(ctx, store.QueueReplicate, 10, time.Hour)
					if err == nil && len(items) != 1 {
						t.Errorf("Lease = %v; want fid %d alone", items, fid)
					}
					return err
				})
				count("Reschedule", func() error { return s.Reschedule(ctx, store.QueueReplicate, fid, 0, true) })
				if err := s.Finish(ctx, store.QueueReplicate, fid); err != nil {
					t.Fatal(err)
				}
				count("DeleteFile", func() error { return s.DeleteFile(ctx, fid) })
				// A free lock, its grant with its fencing token and its
				// release (no waiter: no notification).
				count("LockRelease", func() error {
					l, err := s.Lock(ctx, "rt:free", 0)
					if err != nil {
						return err
					}
					return l.Release(ctx)
				})
			}
			for op, w := range want {
				if got[op] > w {
					t.Errorf("%s: %d round trips; want at most %d", op, got[op], w)
				}
			}
			t.Logf("round trips: %v", got)
		})
	}
}

// TestCreateTempFile_CounterRecovers: the one-round-trip allocation
// (FidInserter) still restores the fid counter's invariant when something
// else broke it — a tempfile row another program put above the counter, the
// counter row deleted, the counter set below rows that exist — and never
// hands out a fid at or below one in use.
func TestCreateTempFile_CounterRecovers(t *testing.T) {
	for backend, dsn := range serverDSNs {
		t.Run(backend, func(t *testing.T) {
			s, p := openWire(t, dsn(t))
			ctx := t.Context()
			db := rawParts(t, s).DB
			d, err := s.CreateDomain(ctx, "ctr")
			if err != nil {
				t.Fatal(err)
			}
			top, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "first"})
			if err != nil {
				t.Fatal(err)
			}
			before := p.Stats().RoundTrips
			if _, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "second"}); err != nil {
				t.Fatal(err)
			}
			if rt := p.Stats().RoundTrips - before; rt != 1 {
				t.Errorf("CreateTempFile took %d round trips; want 1", rt)
			}
			top++
			breakers := []struct{ name, sql string }{
				{"a row above the counter", fmt.Sprintf("INSERT INTO tempfile (fid, createtime, classid, dmid, dkey) VALUES (%d, 0, 0, %d, 'intruder')", top+1, d.ID)},
				{"the counter row deleted", "DELETE FROM gomogile_counter WHERE name = 'fid'"},
				{"the counter below the rows", "UPDATE gomogile_counter SET value = 1 WHERE name = 'fid'"},
			}
			for i, b := range breakers {
				if _, err := db.ExecContext(ctx, b.sql); err != nil {
					t.Fatalf("%s: %v", b.name, err)
				}
				var used int64
				if err := db.QueryRowContext(ctx, "SELECT MAX(fid) FROM tempfile").Scan(&used); err != nil {
					t.Fatal(err)
				}
				fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "after" + strconv.Itoa(i)})
				if err != nil {
					t.Fatalf("after %s: CreateTempFile: %v", b.name, err)
				}
				if fid <= used {
					t.Errorf("after %s: CreateTempFile = fid %d; want above %d, the largest in use", b.name, fid, used)
				}
			}
		})
	}
}
