package mogstored

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// parseUsage reads a usage file the way MogileFS::Worker::Monitor does.
func parseUsage(t *testing.T, data string) (keys []string, kv map[string]string) {
	t.Helper()
	kv = make(map[string]string)
	line := regexp.MustCompile(`^(\w+)\s*:\s*(.+)$`)
	for _, l := range strings.Split(strings.TrimSuffix(data, "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("usage line %q does not parse", l)
		}
		keys = append(keys, m[1])
		kv[m[1]] = m[2]
	}
	return keys, kv
}

func TestUsageFileFormat(t *testing.T) {
	before := time.Now().Unix()
	s, docroot := startServer(t, nil)
	data, err := os.ReadFile(filepath.Join(docroot, "dev1", "usage"))
	if err != nil {
		t.Fatalf("usage file not written by Open: %v", err)
	}
	keys, kv := parseUsage(t, string(data))
	// Perl's sort of the keys puts "use" before "used".
	want := []string{"available", "device", "disk", "time", "total", "use", "used"}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	num := func(k string) uint64 {
		n, err := strconv.ParseUint(kv[k], 10, 64)
		if err != nil {
			t.Fatalf("%s = %q is not an integer", k, kv[k])
		}
		return n
	}
	avail, used, total := num("available"), num("used"), num("total")
	if total != used+avail || total == 0 {
		t.Errorf("total %d != used %d + available %d", total, used, avail)
	}
	if kv["use"] != usePercent(used, avail) {
		t.Errorf("use %q, want %q", kv["use"], usePercent(used, avail))
	}
	if ts := int64(num("time")); ts < before || ts > time.Now().Unix() {
		t.Errorf("time %d not between %d and now", ts, before)
	}
	if kv["disk"] != filepath.Join(docroot, "dev1") {
		t.Errorf("disk %q, want %q", kv["disk"], filepath.Join(docroot, "dev1"))
	}
	if kv["device"] == "" {
		t.Error("device is empty")
	}

	// Cross-check against the kernel in KiB, allowing for other writers on
	// the same filesystem between the two measurements.
	if kavail, ktotal, ok := kernelKiB(t, filepath.Join(docroot, "dev1")); !ok {
		t.Logf("no statfs cross-check on %s", runtime.GOOS)
	} else {
		if diff := int64(ktotal) - int64(total); diff > int64(ktotal/100) || -diff > int64(ktotal/100) {
			t.Errorf("total %d KiB, statfs says %d KiB", total, ktotal)
		}
		if diff := int64(kavail) - int64(avail); diff > int64(ktotal/20) || -diff > int64(ktotal/20) {
			t.Errorf("available %d KiB, statfs says %d KiB", avail, kavail)
		}
	}

	// The monitor fetches it over HTTP.
	res, body := do(t, "GET", "http://"+s.HTTPAddr()+"/dev2/usage", nil, nil)
	if res.StatusCode != 200 {
		t.Fatalf("GET /dev2/usage: %d", res.StatusCode)
	}
	if _, kv2 := parseUsage(t, body); kv2["total"] == "" || kv2["used"] == "" {
		t.Fatalf("served usage lacks used/total: %q", body)
	}
}

func TestUsageRefresh(t *testing.T) {
	_, docroot := startServer(t, func(c *Config) { c.UsageInterval = 50 * time.Millisecond })
	first, err := os.Stat(filepath.Join(docroot, "dev1", "usage"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"dev3", "devX", "other", "dev"} {
		os.Mkdir(filepath.Join(docroot, d), 0o755)
	}
	os.WriteFile(filepath.Join(docroot, "dev4"), []byte("a file, not a device"), 0o644)
	waitFor(t, "dev3/usage", func() bool {
		_, err := os.Stat(filepath.Join(docroot, "dev3", "usage"))
		return err == nil
	})
	waitFor(t, "dev1/usage to be rewritten", func() bool {
		fi, err := os.Stat(filepath.Join(docroot, "dev1", "usage"))
		return err == nil && !os.SameFile(fi, first)
	})
	for _, d := range []string{"devX", "other", "dev"} {
		if _, err := os.Stat(filepath.Join(docroot, d, "usage")); err == nil {
			t.Errorf("%s is not a device but got a usage file", d)
		}
	}
	for _, n := range listDir(t, docroot) {
		if strings.Contains(n, ".tmp-") {
			t.Errorf("usage temporary left: %s", n)
		}
	}
}

func TestUsePercent(t *testing.T) {
	for _, c := range []struct {
		used, avail uint64
		want        string
	}{
		{0, 100, "0%"}, {45, 55, "45%"}, {1, 199, "1%"}, {1, 1000, "1%"}, {999, 1, "100%"}, {0, 0, "-"},
	} {
		if got := usePercent(c.used, c.avail); got != c.want {
			t.Errorf("usePercent(%d, %d) = %q, want %q", c.used, c.avail, got, c.want)
		}
	}
}

func TestStaleTemporariesSwept(t *testing.T) {
	docroot := t.TempDir()
	dir := filepath.Join(docroot, "dev1", "0", "000", "000")
	os.MkdirAll(dir, 0o755)
	old := time.Now().Add(-2 * staleTempAge)
	files := map[string]bool{ // name → should survive
		".0000000001.fid.tmp-0123456789abcdef": false,
		".0000000002.fid.tmp-fedcba9876543210": true, // recent: maybe in progress
		"0000000003.fid":                       true,
		".hidden":                              true,
		".x.tmp-notours":                       true,
	}
	for name, survive := range files {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("x"), 0o644)
		if !survive || name == "0000000003.fid" || name == ".hidden" || name == ".x.tmp-notours" {
			os.Chtimes(p, old, old)
		}
	}
	cfg := DefaultConfig()
	cfg.DocRoot, cfg.HTTPListen, cfg.MgmtListen = docroot, "127.0.0.1:0", "127.0.0.1:0"
	s := New(cfg)
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitFor(t, "the stale temporary to go", func() bool {
		_, err := os.Stat(filepath.Join(dir, ".0000000001.fid.tmp-0123456789abcdef"))
		return os.IsNotExist(err)
	})
	for name, survive := range files {
		if _, err := os.Stat(filepath.Join(dir, name)); survive && err != nil {
			t.Errorf("%s removed", name)
		}
	}
}
