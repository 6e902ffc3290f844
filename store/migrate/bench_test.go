package migrate

import (
	"crypto/sha1"
	"encoding/binary"
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
)

// moveFiles is how many files BenchmarkMove's installation holds (make
// bench-move runs 100,000 and 1,000,000); 0, the default, skips it, so
// that make bench's fixed iteration count does not repeat whole moves.
var moveFiles = flag.Int("move.files", 0, "files in BenchmarkMove's installation (0: skip it)")

// movePairs restricts BenchmarkMove to some source>target pairs
// ("sqlite>postgres,sqlite>mysql"); empty: all nine.
var movePairs = flag.String("move.pairs", "", "source>target pairs BenchmarkMove runs, comma-separated")

// generate fills st with n files of a SHA-1 class, two copies each, and
// their checksums, written as a move writes them (ImportRows), so that a
// million files take minutes rather than hours of uploads.
func generate(b *testing.B, st *store.Store, n int) {
	ctx := b.Context()
	d, err := st.CreateDomain(ctx, "bench")
	must(b, err, "CreateDomain")
	c, err := st.CreateClass(ctx, store.Class{DomainID: d.ID, Name: "sha", MinDevCount: 2, HashType: store.HashSHA1})
	must(b, err, "CreateClass")
	for i := 1; i <= 2; i++ {
		_, err := st.CreateHost(ctx, store.Host{ID: i, Name: fmt.Sprintf("h%d", i), IP: fmt.Sprintf("10.0.0.%d", i), HTTPPort: 7500, Status: store.HostAlive})
		must(b, err, "CreateHost")
		_, err = st.CreateDevice(ctx, store.Device{ID: i, HostID: i, Status: store.DeviceAlive, Weight: 100})
		must(b, err, "CreateDevice")
	}
	const batch = 5000
	for from := 1; from <= n; from += batch {
		var im store.Import
		for fid := int64(from); fid < int64(min(from+batch, n+1)); fid++ {
			var k [8]byte
			binary.BigEndian.PutUint64(k[:], uint64(fid))
			sum := sha1.Sum(k[:])
			im.Files = append(im.Files, store.File{Fid: fid, DomainID: d.ID, Key: fmt.Sprintf("photos/%09d.jpg", fid),
				Length: fid * 37 % 1000000, ClassID: c.ID, DevCount: 2})
			im.FileOn = append(im.FileOn, store.FileOnRow{Fid: fid, DevID: 1}, store.FileOnRow{Fid: fid, DevID: 2})
			im.Checksums = append(im.Checksums, store.Checksum{Fid: fid, HashType: store.HashSHA1, Sum: sum[:]})
		}
		must(b, st.ImportRows(ctx, im), "ImportRows")
	}
}

// BenchmarkMove moves an installation of -move.files files (two copies
// each, SHA-1 checksums) between every pair of backends, check included,
// and reports files per second. One move per pair: run it with
// -benchtime=1x (make bench-move).
func BenchmarkMove(b *testing.B) {
	backends := map[string]func(testing.TB) string{
		"sqlite":   func(tb testing.TB) string { return "sqlite:///" + filepath.Join(tb.TempDir(), "db") },
		"mysql":    testdb.MySQL,
		"postgres": testdb.Postgres,
	}
	names := []string{"sqlite", "mysql", "postgres"}
	want := map[string]bool{}
	if *movePairs != "" {
		for _, p := range splitComma(*movePairs) {
			want[p] = true
		}
	}
	for _, from := range names {
		for _, to := range names {
			pair := from + ">" + to
			if len(want) > 0 && !want[pair] {
				continue
			}
			b.Run(fmt.Sprintf("%s_to_%s/files=%d", from, to, *moveFiles), func(b *testing.B) {
				if *moveFiles <= 0 || b.N > 1 {
					b.Skip("one move per pair, of -move.files files: make bench-move")
				}
				src := open(b, backends[from](b))
				t0 := time.Now()
				generate(b, src, *moveFiles)
				gen := time.Since(t0)
				dst := open(b, backends[to](b))
				b.ResetTimer()
				start := time.Now()
				err := Move(b.Context(), src, dst, Options{SourceQuiesced: true, Source: from})
				took := time.Since(start)
				b.StopTimer()
				must(b, err, "Move")
				b.ReportMetric(float64(*moveFiles)/took.Seconds(), "files/s")
				b.ReportMetric(took.Seconds(), "s/move")
				fmt.Printf("move: from=%s to=%s files=%d seconds=%.1f files_per_s=%.0f generate_s=%.1f\n",
					from, to, *moveFiles, took.Seconds(), float64(*moveFiles)/took.Seconds(), gen.Seconds())
			})
		}
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
