package mogstored

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseDiskstats(t *testing.T) {
	in := `   8       0 sda 1000 20 3000 400 500 60 7000 800 0 1234 5678 0 0 0 0
   8       1 sda1 10 2 30 4 5 6 70 8 0 99 100
 253       0 dm-0 short line
`
	got, err := parseDiskstats(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got["8:0"] != 1234 || got["8:1"] != 99 || len(got) != 2 {
		t.Fatalf("parsed %v", got)
	}
}

// TestIOStatReport runs the report against fake kernel files: dev1 lives on
// a partition whose disk is 8:0 in a fake /sys, dev2 on a disk the kernel
// does not list.
func TestIOStatReport(t *testing.T) {
	docroot := t.TempDir()
	for _, d := range []string{"dev1", "dev10", "dev2"} {
		os.Mkdir(filepath.Join(docroot, d), 0o755)
	}
	major, minor, ok := devNumber(docroot)
	if !ok {
		t.Skip("no device numbers on this platform")
	}
	sys := t.TempDir()
	part := filepath.Join(sys, "devices", "sda", "sda1")
	os.MkdirAll(part, 0o755)
	os.WriteFile(filepath.Join(part, "partition"), []byte("1\n"), 0o644)
	os.WriteFile(filepath.Join(sys, "devices", "sda", "dev"), []byte("8:0\n"), 0o644)
	os.MkdirAll(filepath.Join(sys, "block"), 0o755)
	mustSymlink(t, part, filepath.Join(sys, "block", fmt.Sprintf("%d:%d", major, minor)))

	h := newIOStatHub(docroot, time.Second, slog.New(slog.DiscardHandler))
	h.sysBlock = filepath.Join(sys, "block")
	prev := map[string]uint64{"8:0": 1000}
	cur := map[string]uint64{"8:0": 1500}
	got := h.report(prev, cur, time.Second)
	// All three directories are on the same filesystem here.
	want := "1\t50.00\n2\t50.00\n10\t50.00\n.\n"
	if got != want {
		t.Fatalf("report %q, want %q", got, want)
	}
	// Counters that went past the interval are capped; unknown disks are "-".
	if got := h.report(prev, map[string]uint64{"8:0": 9000}, time.Second); !strings.HasPrefix(got, "1\t100.00\n") {
		t.Errorf("capped report %q", got)
	}
	if got := h.report(map[string]uint64{}, map[string]uint64{}, time.Second); got != "1\t-\n2\t-\n10\t-\n.\n" {
		t.Errorf("unknown-disk report %q", got)
	}
}
