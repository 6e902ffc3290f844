package rawbench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/faultproxy"
	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/store"
)

// Passes and PassOps shape Compare: each pass times every operation
// PassOps times through the Store and PassOps times as raw SQL, ours and
// raw taking turns on who goes first; the reported figure is the median of
// the passes' means, so a burst of load from elsewhere moves one pass, not
// the result.
const (
	Passes  = 5
	PassOps = 100
)

// Result is one operation's medians, in microseconds; Raw is 0 where the
// backend has no raw equivalent.
type Result struct {
	Op        string
	Ours, Raw float64
	// OursRT and RawRT are the database round trips of one operation,
	// counted on the wire; 0 where they were not counted.
	OursRT, RawRT float64
}

// Line is the result as the machine-readable line make bench prints.
func (r Result) Line(backend string) string {
	var line string
	if r.Raw == 0 {
		line = fmt.Sprintf("bench: backend=%s op=%s ours_us=%.1f raw_us=- ratio=-", backend, r.Op, r.Ours)
	} else {
		line = fmt.Sprintf("bench: backend=%s op=%s ours_us=%.1f raw_us=%.1f ratio=%.2f", backend, r.Op, r.Ours, r.Raw, r.Ours/r.Raw)
	}
	if r.OursRT > 0 {
		line += fmt.Sprintf(" ours_rt=%.1f raw_rt=%.1f", r.OursRT, r.RawRT)
	}
	return line
}

// op is one compared operation. Each function runs one iteration i, its
// setup untimed, and returns the time of the part that counts.
type op struct {
	name      string
	ours, raw func(ctx context.Context, i int) (time.Duration, error)
}

// compare opens dsn (emptied by reset first) and measures, alternating and
// in the same run, each hot Store operation against the raw SQL that does
// its work: lock+unlock against the database's own lock pair, FileByKey,
// AddFileOn, CreateTempFile, CommitFile and Lease(100). It writes one
// "bench:" line per operation and then a Markdown table to w (os.Stdout
// when nil) and returns the results.
// label is the lines' backend= (the dialect's name when "").
func compare(b *testing.B, label, dsn string, reset func(b *testing.B), w io.Writer) []Result {
	if w == nil {
		w = os.Stdout
	}
	s := openSQL(b, dsn, reset)
	p := parts(b, s)
	e := &cmpEnv{s: s, db: p.DB, q: p.Dialect.Rebind, now: p.Dialect.UnixNow(), backend: p.Dialect.Name(), label: label}
	if e.label == "" {
		e.label = e.backend
	}
	e.dmid = mustDomain(b, s)
	ops, err := e.ops(b)
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	var out []Result
	for _, o := range ops {
		var ours, raw []float64
		for pass := range Passes {
			run := func(f func(context.Context, int) (time.Duration, error), dst *[]float64) {
				if f == nil {
					return
				}
				var total time.Duration
				for i := range PassOps {
					d, err := f(ctx, pass*PassOps+i)
					if err != nil {
						b.Fatalf("%s: %v", o.name, err)
					}
					total += d
				}
				*dst = append(*dst, float64(total.Microseconds())/PassOps)
			}
			if pass%2 == 0 {
				run(o.ours, &ours)
				run(o.raw, &raw)
			} else {
				run(o.raw, &raw)
				run(o.ours, &ours)
			}
		}
		r := Result{Op: o.name, Ours: median(ours), Raw: median(raw)}
		if rt := e.roundTrips[o.name]; rt != nil {
			r.OursRT, r.RawRT = rt(b, dsn)
		}
		out = append(out, r)
		fmt.Fprintln(w, r.Line(e.label))
	}
	for _, r := range e.handoff(b, dsn) {
		out = append(out, r)
		fmt.Fprintln(w, r.Line(e.label))
	}
	fmt.Fprintf(w, "\n| backend | op | ours µs | raw µs | ratio |\n|---|---|---|---|---|\n")
	for _, r := range out {
		ratio, raw := "-", "-"
		if r.Raw > 0 {
			ratio, raw = fmt.Sprintf("%.2f", r.Ours/r.Raw), fmt.Sprintf("%.1f", r.Raw)
		}
		fmt.Fprintf(w, "| %s | %s | %.1f | %s | %s |\n", e.label, r.Op, r.Ours, raw, ratio)
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

type cmpEnv struct {
	s   *store.Store
	db  *sql.DB
	q   func(string) string
	now string // the dialect's SQL for the database clock
	// roundTrips counts, per operation name, the round trips of one
	// operation through the Store and one as raw SQL, on a Store of its
	// own opened on dsn; operations without an entry are not counted.
	roundTrips map[string]func(b *testing.B, dsn string) (ours, raw float64)
	backend    string // the dialect's name
	label      string // backend= of the lines
	dmid       int
}

func timed(f func() error) (time.Duration, error) {
	t0 := time.Now()
	err := f()
	return time.Since(t0), err
}

func (e *cmpEnv) ops(b *testing.B) ([]op, error) {
	ctx := b.Context()
	s, db, q := e.s, e.db, e.q
	now := e.now
	// Files for the lookups, and a supply of fids for the raw writes far
	// above what the Store allocates.
	const files = 100
	for i := range files {
		commit(b, s, e.dmid, "file"+strconv.Itoa(i))
	}
	rawFid := int64(1 << 40)
	nextRaw := func() int64 { rawFid++; return rawFid }

	lock, err := e.lockOp(b)
	if err != nil {
		return nil, err
	}
	fileByKey := q("SELECT fid, dmid, dkey, length, classid, devcount FROM file WHERE dmid = ? AND dkey = ?")
	insTemp := q("INSERT INTO tempfile (fid, createtime, classid, dmid, dkey, devids) VALUES (?, " + now + ", 0, ?, ?, NULL)")
	insOn := q("INSERT INTO file_on (fid, devid) VALUES (?, ?)")
	bumpDev := q("UPDATE file SET devcount = devcount + 1 WHERE fid = ?")
	delTemp := q("DELETE FROM tempfile WHERE fid = ?")
	insFile := q("INSERT INTO file (fid, dmid, dkey, length, classid, devcount) VALUES (?, ?, ?, 0, 0, 1)")
	tx := func(ctx context.Context, stmts ...func(*sql.Tx) error) error {
		t, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for _, f := range stmts {
			if err := f(t); err != nil {
				t.Rollback()
				return err
			}
		}
		return t.Commit()
	}
	exec := func(query string, args ...any) func(*sql.Tx) error {
		return func(t *sql.Tx) error { _, err := t.ExecContext(ctx, query, args...); return err }
	}
	// AddFileOn adds copies to a fresh file every 100 devids.
	var onFid, onFidRaw int64
	const leaseRows = 100
	return []op{
		lock,
		{"FileByKey", func(ctx context.Context, i int) (time.Duration, error) {
			return timed(func() error { _, err := s.FileByKey(ctx, e.dmid, "file"+strconv.Itoa(i%files)); return err })
		}, func(ctx context.Context, i int) (time.Duration, error) {
			var f store.File
			return timed(func() error {
				return db.QueryRowContext(ctx, fileByKey, e.dmid, "file"+strconv.Itoa(i%files)).
					Scan(&f.Fid, &f.DomainID, &f.Key, &f.Length, &f.ClassID, &f.DevCount)
			})
		}},
		{"AddFileOn", func(ctx context.Context, i int) (time.Duration, error) {
			if i%100 == 0 {
				onFid = commit(b, s, e.dmid, "on"+strconv.Itoa(i))
			}
			return timed(func() error { _, err := s.AddFileOn(ctx, onFid, i%100+1); return err })
		}, func(ctx context.Context, i int) (time.Duration, error) {
			if i%100 == 0 {
				onFidRaw = commit(b, s, e.dmid, "onraw"+strconv.Itoa(i))
			}
			return timed(func() error { return tx(ctx, exec(insOn, onFidRaw, i%100+1), exec(bumpDev, onFidRaw)) })
		}},
		{"CreateTempFile", func(ctx context.Context, i int) (time.Duration, error) {
			return timed(func() error {
				_, err := s.CreateTempFile(ctx, store.TempFile{DomainID: e.dmid, Key: "t" + strconv.Itoa(i)})
				return err
			})
		}, func(ctx context.Context, i int) (time.Duration, error) {
			return timed(func() error {
				_, err := db.ExecContext(ctx, insTemp, nextRaw(), e.dmid, "traw"+strconv.Itoa(i))
				return err
			})
		}},
		{"CommitFile", func(ctx context.Context, i int) (time.Duration, error) {
			key := "c" + strconv.Itoa(i)
			fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: e.dmid, Key: key, DevIDs: []int{1}})
			if err != nil {
				return 0, err
			}
			return timed(func() error {
				_, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: e.dmid, Key: key, DevIDs: []int{1}})
				return err
			})
		}, func(ctx context.Context, i int) (time.Duration, error) {
			key, fid := "craw"+strconv.Itoa(i), nextRaw()
			if _, err := db.ExecContext(ctx, insTemp, fid, e.dmid, key); err != nil {
				return 0, err
			}
			return timed(func() error { return tx(ctx, exec(delTemp, fid), exec(insFile, fid, e.dmid, key), exec(insOn, fid, 1)) })
		}},
		e.leaseOp(b, leaseRows),
	}, nil
}

// lockOp compares Lock+Release with the database's own lock pair on one
// session (PostgreSQL's advisory locks, MySQL's GET_LOCK); SQLite's locks
// live in the process and have no SQL to compare with.
func (e *cmpEnv) lockOp(b *testing.B) (op, error) {
	o := op{name: "lock+unlock", ours: func(ctx context.Context, i int) (time.Duration, error) {
		return timed(func() error {
			l, err := e.s.Lock(ctx, "bench:cycle", time.Second)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		})
	}}
	var pair [2]string
	switch e.backend {
	case "postgres":
		pair = [2]string{"SELECT pg_advisory_lock(42)", "SELECT pg_advisory_unlock(42)"}
	case "mysql":
		pair = [2]string{"SELECT GET_LOCK('gomogile-rawbench', 1)", "SELECT RELEASE_LOCK('gomogile-rawbench')"}
	default:
		return o, nil
	}
	c, err := e.db.Conn(b.Context())
	if err != nil {
		return o, err
	}
	b.Cleanup(func() { c.Close() })
	rawPair := func(ctx context.Context, c *sql.Conn) error {
		var v any // void from PostgreSQL, 1 from MySQL
		for _, q := range pair {
			if err := c.QueryRowContext(ctx, q).Scan(&v); err != nil {
				return err
			}
		}
		return nil
	}
	o.raw = func(ctx context.Context, i int) (time.Duration, error) {
		return timed(func() error { return rawPair(ctx, c) })
	}
	e.roundTrips = map[string]func(*testing.B, string) (float64, float64){
		o.name: func(b *testing.B, dsn string) (float64, float64) { return lockRoundTrips(b, dsn, rawPair) },
	}
	return o, nil
}

// lockRoundTrips counts the round trips of a Lock+Release cycle, and of
// the raw pair (rawPair), through a proxy on the wire: the mean of
// PassOps cycles each, after a first one that opens the sessions. A
// Store's background traffic in the meantime (a watcher's ping, a lease
// renewal) counts too, so the mean may lie a little above the cycle's own.
func lockRoundTrips(b *testing.B, dsn string, rawPair func(context.Context, *sql.Conn) error) (ours, raw float64) {
	ctx := b.Context()
	p, pdsn, err := faultproxy.Through(dsn, faultproxy.Options{})
	if err != nil {
		b.Logf("lock round trips not counted: %v", err)
		return 0, 0
	}
	defer p.Close()
	s, err := store.Open(ctx, pdsn)
	if err != nil {
		b.Fatalf("store.Open through a proxy: %v", err)
	}
	defer s.Close()
	cycle := func() {
		l, err := s.Lock(ctx, "bench:rt", time.Second)
		if err == nil {
			err = l.Release(ctx)
		}
		if err != nil {
			b.Fatalf("lock cycle through a proxy: %v", err)
		}
	}
	count := func(f func()) float64 {
		f()
		before := p.Stats().RoundTrips
		for range PassOps {
			f()
		}
		return float64(p.Stats().RoundTrips-before) / PassOps
	}
	ours = count(cycle)
	db, ok := sqlaccess.DB(s)
	if !ok {
		return ours, 0
	}
	c, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	raw = count(func() {
		if err := rawPair(ctx, c); err != nil {
			b.Fatalf("raw lock pair through a proxy: %v", err)
		}
	})
	return ours, raw
}

// leaseOp compares Lease(n) of the replicate queue with its floor: the
// due rows read in order and moved in one UPDATE, in one transaction.
// Between iterations (untimed) the leased rows are made due again.
func (e *cmpEnv) leaseOp(b *testing.B, n int) op {
	ctx := b.Context()
	now := e.now
	var entries []store.QueueEntry
	for i := range 10 * n {
		entries = append(entries, store.QueueEntry{Fid: int64(i + 1)})
	}
	if err := e.s.Enqueue(ctx, store.QueueReplicate, entries...); err != nil {
		b.Fatal(err)
	}
	undo := "UPDATE file_to_replicate SET nexttry = 0 WHERE nexttry > " + now + " + 60"
	due := e.q("SELECT fid, nexttry FROM file_to_replicate WHERE nexttry <= " + now + " ORDER BY nexttry, fid LIMIT " + strconv.Itoa(n))
	return op{name: "Lease(" + strconv.Itoa(n) + ")", ours: func(ctx context.Context, i int) (time.Duration, error) {
		if _, err := e.db.ExecContext(ctx, undo); err != nil {
			return 0, err
		}
		return timed(func() error {
			items, err := e.s.Lease(ctx, store.QueueReplicate, n, time.Hour)
			if err == nil && len(items) != n {
				err = fmt.Errorf("Lease(%d) = %d items", n, len(items))
			}
			return err
		})
	}, raw: func(ctx context.Context, i int) (time.Duration, error) {
		if _, err := e.db.ExecContext(ctx, undo); err != nil {
			return 0, err
		}
		return timed(func() error {
			t, err := e.db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer t.Rollback()
			rows, err := t.QueryContext(ctx, due)
			if err != nil {
				return err
			}
			var fids []any
			for rows.Next() {
				var fid, next int64
				if err := rows.Scan(&fid, &next); err != nil {
					rows.Close()
					return err
				}
				fids = append(fids, fid)
			}
			rows.Close()
			marks := strings.TrimSuffix(strings.Repeat("?, ", len(fids)), ", ")
			if _, err := t.ExecContext(ctx, e.q("UPDATE file_to_replicate SET nexttry = "+now+" + 3600 WHERE fid IN ("+marks+")"), fids...); err != nil {
				return err
			}
			return t.Commit()
		})
	}}
}

var compared sync.Map // benchmark name -> true

// CompareOnce runs Compare from a Benchmark function the first time the
// testing package calls it (it calls it again with a larger b.N, which
// Compare does not use: its passes are fixed so every run measures alike).
func CompareOnce(b *testing.B, dsn string, reset func(b *testing.B)) {
	CompareOnceAs(b, "", dsn, reset)
}

// CompareOnceAs is CompareOnce with label as the lines' backend= (a
// backend in another mode: "postgres-pooler").
func CompareOnceAs(b *testing.B, label, dsn string, reset func(b *testing.B)) {
	if _, done := compared.LoadOrStore(b.Name(), true); done {
		return
	}
	compare(b, label, dsn, reset, nil)
}

// Handoffs is how many lock handoffs the handoff figures are taken from.
const Handoffs = 60

// handoff measures lock handoff: a second Store (a second tracker) waits
// in Lock while the first holds the lock, then the roles swap; the time
// from the holder's Release returning to the waiter's Lock returning, p50
// and p99, beside the same for the database's own lock pair on two
// sessions.
func (e *cmpEnv) handoff(b *testing.B, dsn string) []Result {
	ctx := b.Context()
	other, err := store.Open(ctx, dsn)
	if err != nil {
		b.Fatalf("store.Open: %v", err)
	}
	defer other.Close()
	stores := [2]*store.Store{e.s, other}
	const name = "bench:handoff"
	held, err := stores[0].Lock(ctx, name, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	ours := handoffs(b, func(i int) (time.Duration, error) {
		type grant struct {
			l   store.Lock
			err error
			at  time.Time
		}
		got := make(chan grant, 1)
		go func() {
			l, err := stores[(i+1)%2].Lock(ctx, name, 10*time.Second)
			got <- grant{l, err, time.Now()}
		}()
		time.Sleep(5 * time.Millisecond) // the waiter is waiting
		if err := held.Release(ctx); err != nil {
			return 0, err
		}
		released := time.Now()
		g := <-got
		held = g.l
		return g.at.Sub(released), g.err
	})
	if held != nil {
		held.Release(ctx)
	}
	var raw []time.Duration
	var lock, unlock string
	switch e.backend {
	case "postgres":
		lock, unlock = "SELECT pg_advisory_lock(43)", "SELECT pg_advisory_unlock(43)"
	case "mysql":
		lock, unlock = "SELECT GET_LOCK('gomogile-rawbench-handoff', 10)", "SELECT RELEASE_LOCK('gomogile-rawbench-handoff')"
	}
	if lock != "" {
		var conns [2]*sql.Conn
		for i := range conns {
			if conns[i], err = e.db.Conn(ctx); err != nil {
				b.Fatal(err)
			}
			defer conns[i].Close()
		}
		var v any
		if err := conns[0].QueryRowContext(ctx, lock).Scan(&v); err != nil {
			b.Fatal(err)
		}
		raw = handoffs(b, func(i int) (time.Duration, error) {
			got := make(chan time.Time, 1)
			errc := make(chan error, 1)
			go func() {
				var v any
				errc <- conns[(i+1)%2].QueryRowContext(ctx, lock).Scan(&v)
				got <- time.Now()
			}()
			time.Sleep(5 * time.Millisecond)
			if err := conns[i%2].QueryRowContext(ctx, unlock).Scan(&v); err != nil {
				return 0, err
			}
			released := time.Now()
			err := <-errc
			return (<-got).Sub(released), err
		})
		conns[Handoffs%2].QueryRowContext(ctx, unlock).Scan(&v)
	}
	return []Result{
		{Op: "handoff_p50", Ours: percentile(ours, 50), Raw: percentile(raw, 50)},
		{Op: "handoff_p99", Ours: percentile(ours, 99), Raw: percentile(raw, 99)},
	}
}

// handoffs runs Handoffs rounds of f and returns their times.
func handoffs(b *testing.B, f func(i int) (time.Duration, error)) []time.Duration {
	var out []time.Duration
	for i := range Handoffs {
		d, err := f(i)
		if err != nil {
			b.Fatalf("handoff %d: %v", i, err)
		}
		out = append(out, max(d, 0))
	}
	return out
}

// percentile is the p-th percentile of ds in microseconds (nearest rank),
// 0 for none. A raw handoff can be quicker than a microsecond: it is
// reported as one so that a ratio stays defined.
func percentile(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	i := max(0, (len(ds)*p+99)/100-1)
	return max(float64(ds[i].Nanoseconds())/1000, 1)
}
