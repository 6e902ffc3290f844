//go:build unix

package jobs_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// TestMain lets this test binary be a worker process: the Manager under
// test starts it again with jobs.WorkerArgs, as mogilefsd starts itself.
func TestMain(m *testing.M) {
	if _, ok := jobs.IsWorker(os.Args[1:]); ok {
		if err := jobs.RunWorker(context.Background(), os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if db := os.Getenv(parentEnv); db != "" {
		os.Exit(runParent(db))
	}
	os.Exit(m.Run())
}

// parentEnv makes this test binary a tracker's worker side on its own: a
// Manager with worker processes on the SQLite file it names, printing the
// workers' pids each quarter second, until its stdin closes. The test can
// stop it as a whole, as kill -STOP stops a tracker.
const parentEnv = "GOMOGILE_TEST_JOBS_PARENT"

func runParent(db string) int {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:///"+db)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	o := jobs.DefaultOptions()
	o.Watchdog = 2 * time.Second
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	o.Process = func(class string) *exec.Cmd { return exec.Command(os.Args[0], jobs.WorkerArgs(class)...) }
	m := jobs.New(st, o)
	if err := m.Open(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer m.Close()
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	for {
		var pids []int
		for _, s := range m.Stats() {
			pids = append(pids, s.Pids...)
		}
		fmt.Println(pids)
		select {
		case <-done:
			return 0
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// procOptions are fastOptions with every worker in a process of its own,
// and a log the test can read.
func procOptions(t *testing.T) (jobs.Options, *syncLog) {
	o := fastOptions(t)
	o.Process = func(class string) *exec.Cmd {
		return exec.Command(os.Args[0], jobs.WorkerArgs(class)...)
	}
	lg := &syncLog{}
	o.Logger = slog.New(slog.NewTextHandler(lg, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return o, lg
}

type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func pidsOf(m *jobs.Manager, class string) []int {
	for _, s := range m.Stats() {
		if s.Name == class {
			return s.Pids
		}
	}
	return nil
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// The workers run in processes of their own and do their work there:
// replication through the tracker's Store, the monitor's view reaching the
// tracker, each with a pid that is not the tracker's.
func TestProcesses_WorkAndPids(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	cls := c.class("c", 2, store.HashNone)
	data := bytes.Repeat([]byte("in another process "), 500)
	fid := c.putFile("k", cls, data, 1)
	o, lg := procOptions(t)
	m := start(t, c.st, o)

	waitFor(t, 20*time.Second, "replication by the worker process", func() bool { return len(fileOn(t, c.st, fid)) == 2 })
	if got := c.blob(2, fid); !bytes.Equal(got, data) {
		t.Fatalf("dev2 holds %d bytes; want the %d uploaded", len(got), len(data))
	}
	waitFor(t, 10*time.Second, "the monitor's view in the tracker", func() bool {
		st, ok := m.Observed(2)
		return ok && st == "writeable"
	})
	seen := map[int]string{}
	for _, class := range []string{jobs.JobReplicate, jobs.JobDelete, jobs.JobFsck, jobs.JobReaper, jobs.JobMonitor, jobs.JobMaster} {
		pids := pidsOf(m, class)
		if len(pids) != 1 {
			t.Fatalf("%s pids %v; want one", class, pids)
		}
		pid := pids[0]
		if pid == os.Getpid() || !alive(pid) || seen[pid] != "" {
			t.Fatalf("%s pid %d: tracker %d, alive %v, also %q", class, pid, os.Getpid(), alive(pid), seen[pid])
		}
		seen[pid] = class
	}
	// A monitor round asked of the tracker is run by the monitor process.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := m.MonitorRound(ctx); err != nil {
		t.Fatalf("MonitorRound through the monitor process: %v", err)
	}
	// Workers' log records reach the tracker's log with their pids.
	if !strings.Contains(lg.String(), fmt.Sprintf("pid=%d", pidsOf(m, jobs.JobMonitor)[0])) {
		t.Errorf("no record of the monitor process in the tracker's log:\n%s", lg.String())
	}
	m.Close()
	for pid, class := range seen {
		if alive(pid) {
			// A zombie would still answer kill 0; Close waits for each.
			t.Errorf("%s process %d still running after Close", class, pid)
		}
	}
}

// kill -9 of a worker: the tracker logs its death with 2.73's line and
// starts another; the killed worker's locks are free at once.
func TestProcesses_KilledWorkerReplaced(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	o, lg := procOptions(t)
	m := start(t, c.st, o)
	waitFor(t, 10*time.Second, "a reaper process", func() bool { return len(pidsOf(m, jobs.JobReaper)) == 1 })
	old := pidsOf(m, jobs.JobReaper)[0]
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a new reaper", func() bool {
		p := pidsOf(m, jobs.JobReaper)
		return len(p) == 1 && p[0] != old
	})
	want := fmt.Sprintf("Child %d (reaper) died: 9 (UNEXPECTED)", old)
	waitFor(t, 5*time.Second, want, func() bool { return strings.Contains(lg.String(), want) })
	if !strings.Contains(lg.String(), "Job reaper has only 0, wants 1, making 1.") {
		t.Errorf("no shortfall line after the death:\n%s", lg.String())
	}
}

// kill -STOP of a worker: the watchdog kills it once it has been silent for
// its timeout, the locks it held are given up, and a new worker runs.
func TestProcesses_StoppedWorkerKilledByWatchdog(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	o, lg := procOptions(t)
	o.Watchdog = 2 * time.Second
	m := start(t, c.st, o)
	waitFor(t, 10*time.Second, "a job master process", func() bool { return len(pidsOf(m, jobs.JobMaster)) == 1 })
	old := pidsOf(m, jobs.JobMaster)[0]
	if err := syscall.Kill(old, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Watchdog killing worker %d (job_master)", old)
	waitFor(t, 15*time.Second, want, func() bool { return strings.Contains(lg.String(), want) })
	waitFor(t, 10*time.Second, "a new job master", func() bool {
		p := pidsOf(m, jobs.JobMaster)
		return len(p) == 1 && p[0] != old
	})
}

// A worker that dies as it starts (a broken binary) is restarted at most
// once a second, not in a tight loop.
func TestProcesses_CrashLoopThrottled(t *testing.T) {
	c := newCluster(t)
	o, lg := procOptions(t)
	o.Process = func(string) *exec.Cmd { return exec.Command("/bin/false") }
	start(t, c.st, o)
	time.Sleep(3 * time.Second)
	n := strings.Count(lg.String(), "(reaper) died: 256 (UNEXPECTED)")
	if n < 1 || n > 4 {
		t.Fatalf("a reaper dying at once was restarted %d times in 3 s; want 1 to 4:\n%s", n, lg.String())
	}
}

// A tracker stopped for longer than the watchdog timeout (kill -STOP, a VM
// pause) keeps its workers when it resumes: their heartbeats waited in the
// sockets, and the silence was its own.
func TestProcesses_TrackerPauseKillsNoWorker(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), parentEnv+"="+filepath.Join(t.TempDir(), "db"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncLog
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		stdin.Close()
		cmd.Wait()
	})
	var mu sync.Mutex
	last := ""
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			last = sc.Text()
			mu.Unlock()
		}
	}()
	pids := func() string { mu.Lock(); defer mu.Unlock(); return last }
	waitFor(t, 10*time.Second, "six workers", func() bool { return len(strings.Fields(pids())) == 6 })
	before := pids()
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // the watchdog's 2 s, well past
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if after := pids(); after != before || strings.Contains(stderr.String(), "Watchdog killing") {
		t.Fatalf("workers %s before the pause, %s after:\n%s", before, after, stderr.String())
	}
}
