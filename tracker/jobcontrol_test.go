package tracker_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/tracker"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// watchStream reads a !watch connection's lines into a channel.
func watchStream(t *testing.T, tt *testTracker) <-chan string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", tt.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	br := bufio.NewReader(nc)
	if _, err := nc.Write([]byte("!watch\r\n")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Added you to watcher list.\r\n", ".\r\n"} {
		if l, err := br.ReadString('\n'); err != nil || l != want {
			t.Fatalf("!watch reply %q, %v; want %q", l, err, want)
		}
	}
	ch := make(chan string, 1024)
	go func() {
		defer close(ch)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			ch <- l
		}
	}()
	return ch
}

// awaitWatch waits up to d for the exact line on a watch stream.
func awaitWatch(t *testing.T, ch <-chan string, line string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	var seen []string
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("watch stream ended waiting for %q; saw %q", line, seen)
			}
			if l == line {
				return
			}
			seen = append(seen, l)
		case <-deadline:
			t.Fatalf("no watch line %q within %v; saw %q", line, d, seen)
		}
	}
}

// The reply texts below are the original 2.73's, derived from its source
// (Connection/Client.pm's handle_admin_command and ProcManager.pm), since no
// original tracker could be run here; see testdata/README.md.
func TestJobControl_AsOriginal(t *testing.T) {
	st := openStore(t, testDSN(t))
	cfg := testConfig() // job_master = 0, as --no-job_master
	o := tracker.JobsOptions(cfg)
	o.Hostname = "h9test"
	o.MonitorInterval = 100 * time.Millisecond
	o.QueuePoll = 50 * time.Millisecond
	o.ReplicateWorkers = 2
	o.DeleteWorkers = 2
	o.CloseGrace = time.Second
	o.Logger = quietLogger()
	if !o.NoJobMaster {
		t.Fatal("job_master = 0 must mean no job master")
	}
	tt := startTracker(t, cfg, st, &tracker.Options{Jobs: jobs.New(st, o), Hostname: "h9test"})
	watch := watchStream(t, tt)
	c := tt.dial()
	block := func(cmd string) []string {
		t.Helper()
		c.send(cmd + "\r\n")
		var out []string
		for {
			l := c.readLine()
			if l == ".\r\n" {
				return out
			}
			out = append(out, strings.TrimSuffix(l, "\r\n"))
		}
	}
	one := func(cmd, want string) {
		t.Helper()
		if got := block(cmd); len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q; want %q", cmd, got, want)
		}
	}
	jobList := func() map[string]string {
		m := map[string]string{}
		for _, l := range block("!jobs") {
			f := strings.SplitN(l, " ", 3)
			if len(f) == 3 {
				m[f[0]+" "+f[1]] = f[2]
			} else if len(f) == 2 {
				m[f[0]+" "+f[1]] = ""
			}
		}
		return m
	}
	pid := fmt.Sprint(os.Getpid())

	// Without a job master no queue worker runs, and !jobs lists none.
	j := jobList()
	for _, job := range []string{"replicate", "delete", "fsck", "job_master"} {
		if _, ok := j[job+" count"]; ok {
			t.Errorf("!jobs lists %s without a job master: %q", job, j)
		}
	}
	if j["monitor count"] != "1" || j["monitor pids"] != pid || j["queryworker desired"] != "20" {
		t.Errorf("!jobs = %q", j)
	}

	// Point 1: every job class, 0 included.
	one("!want 0 queryworker", "Now desiring 0 children doing 'queryworker'.")
	one("!want 20 queryworker", "Now desiring 20 children doing 'queryworker'.")
	one("!want 0 reaper", "Now desiring 0 children doing 'reaper'.")
	one("!want 1 reaper", "Now desiring 1 children doing 'reaper'.")
	one("!want 1 nosuch", "ERROR: Invalid class 'nosuch'.  Valid classes: delete, fsck, job_master, monitor, queryworker, reaper, replicate")
	one("!want 2 monitor", "Now desiring 2 children doing 'monitor'.") // ignored, as the original does
	if j := jobList(); j["monitor desired"] != "1" {
		t.Errorf("monitor desired %q after !want 2 monitor; want 1", j["monitor desired"])
	}

	// Point 2: the job master brings the queue workers up and takes them away.
	one("!want 1 job_master", "Now desiring 1 children doing 'job_master'.")
	awaitWatch(t, watch, ":: Job job_master has only 0, wants 1, making 1.\r\n", 10*time.Second)
	waitFor(t, 10*time.Second, "queue workers up", func() bool {
		j := jobList()
		return j["fsck count"] == "1" && j["replicate count"] == "2" && j["delete count"] == "2" && j["job_master count"] == "1"
	})
	if j := jobList(); j["replicate pids"] != pid+" "+pid {
		t.Errorf("replicate pids %q; want the tracker's pid once per worker", j["replicate pids"])
	}

	// Point 3: !to reaches the workers; :shutdown ends them and they are
	// replaced, with the original's lines on the watch stream.
	one("!to fsck :shutdown", "Message sent to 1 children.")
	awaitWatch(t, watch, ":: Child "+pid+" (fsck) died: 0 (UNEXPECTED)\r\n", 10*time.Second)
	awaitWatch(t, watch, ":: Job fsck has only 0, wants 1, making 1.\r\n", 10*time.Second)
	one("!to replicate :wake_up", "Message sent to 2 children.")
	one("!to nosuch hello", "Message sent to 0 children.")
	one("!to fsck", "ERROR: usage: !to <jobclass> <message>")

	one("!want 0 job_master", "Now desiring 0 children doing 'job_master'.")
	waitFor(t, 10*time.Second, "queue workers down", func() bool {
		j := jobList()
		return j["fsck count"] == "0" && j["replicate count"] == "0" && j["delete count"] == "0" && j["job_master count"] == "0"
	})
	if j := jobList(); j["replicate desired"] != "2" || j["replicate pids"] != "" {
		t.Errorf("replicate after !want 0 job_master: %q", j)
	}
}

// A watcher that connects right after a "!to fsck :shutdown" has been
// answered — a script's "!watch" sent just before it on another
// connection, processed after it — still sees the death and the
// replacement, as with 2.73, whose parent writes those lines from its
// loop after the request. gomogile wrote them inside the request, so such
// a watcher never saw them.
func TestJobControl_WatcherAfterShutdownRequest(t *testing.T) {
	st := openStore(t, testDSN(t))
	cfg := testConfig()
	o := tracker.JobsOptions(cfg)
	o.Hostname = "h9test"
	o.MonitorInterval = 100 * time.Millisecond
	o.QueuePoll = 50 * time.Millisecond
	o.CloseGrace = time.Second
	o.Logger = quietLogger()
	tt := startTracker(t, cfg, st, &tracker.Options{Jobs: jobs.New(st, o), Hostname: "h9test"})
	c := tt.dial()
	ask := func(cmd string) string {
		t.Helper()
		c.send(cmd + "\r\n")
		var out []string
		for l := c.readLine(); l != ".\r\n"; l = c.readLine() {
			out = append(out, strings.TrimSuffix(l, "\r\n"))
		}
		return strings.Join(out, "\n")
	}
	ask("!want 1 job_master")
	waitFor(t, 10*time.Second, "an fsck worker", func() bool { return strings.Contains(ask("!jobs"), "fsck count 1") })

	if got := ask("!to fsck :shutdown"); got != "Message sent to 1 children." {
		t.Fatalf("!to fsck :shutdown = %q", got)
	}
	watch := watchStream(t, tt)
	pid := fmt.Sprint(os.Getpid())
	awaitWatch(t, watch, ":: Child "+pid+" (fsck) died: 0 (UNEXPECTED)\r\n", 10*time.Second)
	awaitWatch(t, watch, ":: Job fsck has only 0, wants 1, making 1.\r\n", 10*time.Second)
	waitFor(t, 10*time.Second, "fsck replaced", func() bool { return strings.Contains(ask("!jobs"), "fsck count 1") })
}

// Issue 9, point 5: the original's test-rig variables reach the workers:
// TESTING and, only with it, T_FAKE_IO_DEV<N>, read by Main from the
// environment it is given (library code reads no environment variable:
// the process's own TESTING changes nothing).
func TestJobsOptions_TestingEnv(t *testing.T) {
	t.Setenv("TESTING", "1")
	if o := tracker.JobsOptions(testConfig()); o.Testing || o.FakeIOUtil != nil {
		t.Errorf("a Config built in code: Testing %v, FakeIOUtil %v; want off whatever the environment", o.Testing, o.FakeIOUtil)
	}
	load := func(env ...string) tracker.Config {
		t.Helper()
		m := &tracker.Main{Environ: env, Stderr: io.Discard}
		cfg, err := m.LoadConfig([]string{"--config=/dev/null"})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if o := tracker.JobsOptions(load("T_FAKE_IO_DEV3=80")); o.Testing || o.FakeIOUtil != nil {
		t.Errorf("without TESTING: Testing %v, FakeIOUtil %v; want off", o.Testing, o.FakeIOUtil)
	}
	o := tracker.JobsOptions(load("TESTING=1", "T_FAKE_IO_DEV3=80"))
	if !o.Testing || o.FakeIOUtil[3] != "80" || len(o.FakeIOUtil) != 1 {
		t.Errorf("with TESTING=1: Testing %v, FakeIOUtil %v; want on, {3: 80}", o.Testing, o.FakeIOUtil)
	}
}

// "!jobs" lists a worker process's own pid, and for a job whose workers
// are processes, none while they start — never the tracker's, which an
// operator would kill; goroutine workers show the tracker's pid once per
// worker; jobs never started are left out, as 2.73 leaves them.
func TestJobLines_Pids(t *testing.T) {
	got := tracker.JobLines([]tracker.JobStatus{
		{Job: "replicate", Count: 2, Desired: 2, Started: true, Processes: true, Pids: []int{11, 12}},
		{Job: "delete", Count: 1, Desired: 1, Started: true, Processes: true},
		{Job: "fsck", Count: 2, Desired: 2, Started: true},
		{Job: "reaper", Desired: 1},
	}, 7)
	want := []string{
		"delete count 1", "delete desired 1", "delete pids ",
		"fsck count 2", "fsck desired 2", "fsck pids 7 7",
		"replicate count 2", "replicate desired 2", "replicate pids 11 12",
	}
	if !slices.Equal(got, want) {
		t.Errorf("!jobs lines:\n%q\nwant\n%q", got, want)
	}
}
