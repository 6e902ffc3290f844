package load

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/testdb"
	_ "github.com/gomogile/gomogile/store/etcd"
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// Against an external tracker the run starts no tracker, registers its
// storage node there — again on a second run, the host moved to the new
// node's port — and reports the round trips it cannot count as "-".
func TestRun_ExternalTracker(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	n, err := startNode(ctx, dir, "", "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.stop() })
	d, addr, err := startTracker(ctx, "sqlite://"+filepath.Join(dir, "ext.db"), n, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.stop() })
	want := regexp.MustCompile(`^load: backend=ext trackers=1 clients=2 ops_per_s=\d+ p50_ms=\d+\.\d\d p99_ms=\d+\.\d\d rt_per_upload=-\n$`)
	for run := range 2 {
		var out bytes.Buffer
		rs, err := Run(ctx, Config{Backends: []string{"ext"}, Clients: []int{2}, Iterations: 5,
			TrackerAddrs: []string{addr}, Out: &out})
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if !want.MatchString(out.String()) {
			t.Errorf("run %d printed %q; want a line matching %s", run, out.String(), want)
		}
		if len(rs) != 1 || rs[0].Ops != 5 || rs[0].RTPerUpload >= 0 {
			t.Errorf("run %d: results %+v; want one of 5 iterations, round trips unknown", run, rs)
		}
	}
}

// Duration, not Iterations, ends a cell when set.
func TestRun_Duration(t *testing.T) {
	rs, err := Run(t.Context(), Config{Backends: []string{"sqlite"}, Clients: []int{1}, Trackers: []int{1},
		Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Ops == 0 || rs[0].RTPerUpload <= 0 {
		t.Errorf("results %+v; want one cell with iterations and counted round trips", rs)
	}
}

func TestParseLine(t *testing.T) {
	for _, r := range []Result{
		{Backend: "sqlite", Trackers: 2, Clients: 8, Driver: "go", OpsPerS: 499, P50: 14460 * time.Microsecond, P99: 41300 * time.Microsecond, RTPerUpload: 13.1},
		{Backend: "original-mysql", Trackers: 1, Clients: 32, Driver: "go", OpsPerS: 89, P50: 291940 * time.Microsecond, P99: 1189500 * time.Microsecond, RTPerUpload: -1},
		{Backend: "postgres", Trackers: 1, Clients: 1, Driver: "perl", OpsPerS: 34, P50: 22030 * time.Microsecond, P99: 169620 * time.Microsecond, RTPerUpload: 14.5},
		{Backend: "mysql", Trackers: 1, Clients: 8, Driver: "go", OpsPerS: 776, P50: 10 * time.Millisecond, P99: 17 * time.Millisecond, RTPerUpload: 5, DBCPU: 1740 * time.Microsecond},
		{Backend: "sqlite", Trackers: 1, Clients: 8, Driver: "go", OpsPerS: 1000, P50: 7 * time.Millisecond, P99: 19 * time.Millisecond, RTPerUpload: 9, DBCPU: -1},
	} {
		got, ok := ParseLine(r.Line() + "\n")
		if !ok || got.Line() != r.Line() || got.Driver != r.Driver || got.RTPerUpload != r.RTPerUpload || got.DBCPU != r.DBCPU {
			t.Errorf("ParseLine(%q) = %+v, %v; want %+v", r.Line(), got, ok, r)
		}
	}
	for _, bad := range []string{"", "# a comment", "load: backend=sqlite trackers=1", "load: backend=sqlite trackers=x clients=1 ops_per_s=1 p50_ms=1 p99_ms=1 rt_per_upload=1",
		"torture: backend=sqlite seconds=3", "load: backend=sqlite trackers=1 clients=1 ops_per_s=1 p50_ms=1 p99_ms=1 rt_per_upload=1 colour=red"} {
		if r, ok := ParseLine(bad); ok {
			t.Errorf("ParseLine(%q) = %+v, true; want false", bad, r)
		}
	}
}

// procCPU reads the CPU time of processes by name from /proc: this test
// binary's grows as it computes.
func TestProcCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/<pid>/stat is Linux's")
	}
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	name := []string{strings.TrimSpace(string(comm))}
	before, ok := procCPU(name)
	if !ok {
		t.Fatalf("procCPU(%q) found no process", name)
	}
	x := 0
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
		x++
	}
	after, _ := procCPU(name)
	if spent := cpuSince(before, after); spent < 100*time.Millisecond {
		t.Errorf("300ms of computing (%d loops) counted %v", x, spent)
	}
	if _, ok := procCPU([]string{"no-such-process-name"}); ok {
		t.Error("procCPU found a process that does not exist")
	}
	// A server process that ended between the readings (another test's
	// private instance) is left out; one that started is counted whole;
	// a reused pid counts as a new process.
	if got := cpuSince(map[int]time.Duration{1: 5 * time.Second, 2: time.Second, 3: 4 * time.Second},
		map[int]time.Duration{1: 6 * time.Second, 3: time.Second, 4: 2 * time.Second}); got != 4*time.Second {
		t.Errorf("cpuSince = %v; want 4s (1s of pid 1, 1s of reused pid 3, 2s of new pid 4)", got)
	}
	if dbProcs("sqlite") != nil || !slices.Contains(dbProcs("postgres-pgbouncer/etcd"), "postgres") || !slices.Contains(dbProcs("galera/etcd"), "mariadbd") {
		t.Error("dbProcs names the wrong servers")
	}
}

// Trackers on a private Galera cluster, each through a node of its own,
// their locks in a private etcd cluster: a cell runs, its round trips are
// counted through one proxy per tracker, and the line names both.
func TestRun_GaleraWithEtcdLocks(t *testing.T) {
	for _, kind := range []string{"galera", "etcd"} {
		if err := dbinstance.Available(kind); err != nil {
			testdb.Unavailable(t, kind, err.Error())
		}
	}
	rs, err := Run(t.Context(), Config{Backends: []string{Galera}, Locks: "etcd", Clients: []int{2}, Trackers: []int{3}, Logf: t.Logf,
		Iterations: 60})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Backend != "galera/etcd" || rs[0].Ops != 60 || rs[0].RTPerUpload <= 0 || rs[0].DBCPU <= 0 {
		t.Errorf("results %+v; want one galera/etcd cell of 60 iterations with counted round trips and the nodes' CPU", rs)
	}
}

// A Galera backend without a lock service is refused before anything
// starts: a Galera node's GET_LOCK is its own.
func TestRun_GaleraNeedsEtcdLocks(t *testing.T) {
	_, err := Run(t.Context(), Config{Backends: []string{Galera}, Clients: []int{1}, Trackers: []int{1}, Iterations: 1})
	if err == nil || !strings.Contains(err.Error(), "-locks etcd") {
		t.Fatalf("Run on galera without etcd locks: %v; want a refusal naming -locks etcd", err)
	}
}
