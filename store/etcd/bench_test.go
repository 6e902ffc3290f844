package etcd_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// BenchmarkLockCycle prints, for make bench, one lock cycle (acquire +
// release of a free name, try-once) three ways on the same etcd cluster:
// the raw concurrency.Mutex pair on one session (TryLock, Unlock: two
// round trips), the Service's (the same two, plus its bookkeeping), and a
// Store's with lock_dsn (the Service's, plus raising the name's fence row
// in the metadata database, one database round trip), as
// "bench: backend=etcd op=… us=… ratio=… round_trips=…" lines.
func BenchmarkLockCycle(b *testing.B) {
	lockDSN := testdb.Etcd(b)
	ctx := context.Background()
	name := "mgfs:fid:1"

	raw := func(b *testing.B) func() {
		d, err := store.ParseLockDSN(lockDSN)
		if err != nil {
			b.Fatal(err)
		}
		var eps []string
		for _, h := range d.AllHosts() {
			eps = append(eps, fmt.Sprintf("%s:%d", h.Host, h.Port))
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cli.Close() })
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sess.Close() })
		m := concurrency.NewMutex(sess, d.Path+"/raw")
		return func() {
			if err := m.TryLock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	service := func(b *testing.B) func() {
		s := open(b, lockDSN, 5)
		return func() {
			g, err := s.Acquire(ctx, name, 0)
			if err != nil {
				b.Fatal(err)
			}
			if err := g.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	storeCycle := func(b *testing.B) func() {
		st, err := store.Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "meta.db"), store.WithLockDSN(lockDSN))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return func() {
			l, err := st.Lock(ctx, name, 0)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	ops := []struct {
		name  string
		setup func(*testing.B) func()
		trips string
	}{
		{"RawMutex", raw, "2 etcd"},
		{"Service", service, "2 etcd"},
		{"Store", storeCycle, "2 etcd + 1 database"},
	}
	us := map[string]float64{}
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			cycle := op.setup(b)
			cycle() // connect and warm up outside the timing
			var per []time.Duration
			for b.Loop() {
				t0 := time.Now()
				cycle()
				per = append(per, time.Since(t0))
			}
			sort.Slice(per, func(i, j int) bool { return per[i] < per[j] })
			med := float64(per[len(per)/2].Microseconds())
			b.ReportMetric(med, "median_us")
			us[op.name] = med
		})
	}
	if us["RawMutex"] == 0 {
		return
	}
	var lines []string
	for _, op := range ops {
		lines = append(lines, fmt.Sprintf("bench: backend=etcd op=lock_cycle_%s us=%.0f ratio=%.2f round_trips=%q",
			strings.ToLower(op.name), us[op.name], us[op.name]/us["RawMutex"], op.trips))
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}
