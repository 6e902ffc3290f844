package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/freshdb"
)

// A line as the package doc of internal/testkit/load gives it, rt_per_upload
// counted (a number, not "-").
var lineRE = regexp.MustCompile(`^load: backend=(\w+) trackers=(\d+) clients=(\d+) ops_per_s=\d+ p50_ms=(\d+\.\d\d) p99_ms=(\d+\.\d\d) rt_per_upload=(\d+\.\d)(?: db_cpu_ms=\d+\.\d\d)?( driver=perl)?$`)

// backends are SQLite and the servers the environment names.
func backends() []string {
	b := []string{"sqlite"}
	if os.Getenv(freshdb.EnvMySQL) != "" {
		b = append(b, "mysql")
	}
	if os.Getenv(freshdb.EnvPostgres) != "" {
		b = append(b, "postgres")
	}
	return b
}

// checkLines checks that out is one line per cell, in the order of the
// cells, with a measured latency and round trips counted for real.
func checkLines(t *testing.T, out string, cells [][3]string, perl bool) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	per := 1
	if perl {
		per = 2
	}
	if len(lines) != len(cells)*per {
		t.Fatalf("got %d lines; want %d:\n%s", len(lines), len(cells)*per, out)
	}
	for i, line := range lines {
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("line %q does not match %s", line, lineRE)
			continue
		}
		cell := cells[i/per]
		if m[1] != cell[0] || m[2] != cell[1] || m[3] != cell[2] {
			t.Errorf("line %q: got backend=%s trackers=%s clients=%s; want %v", line, m[1], m[2], m[3], cell)
		}
		if (m[7] != "") != (perl && i%per == 1) {
			t.Errorf("line %q: driver=perl on the wrong line", line)
		}
		p50, _ := strconv.ParseFloat(m[4], 64)
		p99, _ := strconv.ParseFloat(m[5], 64)
		rt, _ := strconv.ParseFloat(m[6], 64)
		if p50 <= 0 || p99 < p50 {
			t.Errorf("line %q: p50 %v, p99 %v; want 0 < p50 <= p99", line, p50, p99)
		}
		// create_open, create_close and get_paths each reach the database.
		if rt < 3 {
			t.Errorf("line %q: rt_per_upload %v; want at least 3, one per command", line, rt)
		}
	}
}

func TestRun_EveryBackend(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	chart, saved := filepath.Join(dir, "load.svg"), filepath.Join(dir, "load.txt")
	bs := backends()
	code := run(t.Context(), []string{"-backends", strings.Join(bs, ","), "-clients", "2", "-trackers", "1,2",
		"-iterations", "6", "-chart", chart, "-save", saved}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	var cells [][3]string
	for _, b := range bs {
		cells = append(cells, [3]string{b, "1", "2"}, [3]string{b, "2", "2"})
	}
	checkLines(t, out.String(), cells, false)
	svg, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "concurrent clients", "sqlite, 1 tracker", "sqlite, 2 trackers"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("chart lacks %q", want)
		}
	}
	t.Logf("\n%s", out.String())

	// The saved lines draw the same chart again.
	if b, err := os.ReadFile(saved); err != nil || string(b) != out.String() {
		t.Fatalf("-save wrote %q, %v; want what was printed", b, err)
	}
	again := filepath.Join(dir, "again.svg")
	if code := run(t.Context(), []string{"-chart-from", saved, "-chart", again}, &out, &errb); code != 0 {
		t.Fatalf("-chart-from: exit %d, stderr %s", code, errb.String())
	}
	if b, err := os.ReadFile(again); err != nil || !bytes.Equal(b, svg) {
		t.Errorf("the chart drawn from the saved lines differs from the run's (%v)", err)
	}
}

// The Perl client's line follows the Go client's in each cell, when
// MogileFS::Client is installed (PERL5LIB).
func TestRun_PerlClient(t *testing.T) {
	if err := exec.Command("perl", "-MMogileFS::Client", "-e1").Run(); err != nil {
		t.Skipf("perl with MogileFS::Client: %v", err)
	}
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"-backends", "sqlite", "-clients", "1,3", "-trackers", "1",
		"-iterations", "6", "-perl-client", "../../scripts/load-client.pl"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	checkLines(t, out.String(), [][3]string{{"sqlite", "1", "1"}, {"sqlite", "1", "3"}}, true)
}

func TestRun_Usage(t *testing.T) {
	for _, args := range [][]string{{"-clients", "0"}, {"-trackers", "x"}, {"-backends", ""}, {"extra"}, {"-nosuchflag"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (usage)", args, code)
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-backends", "oracle", "-iterations", "1"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), `unknown backend "oracle"`) {
		t.Errorf("an unknown backend: exit %d, stderr %q; want 1 and the name", code, errb.String())
	}
}
