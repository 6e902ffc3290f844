//go:build unix

package main_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// tracker is a running mogilefsd binary.
type tracker struct {
	t    *testing.T
	addr string
	cmd  *exec.Cmd
}

func startTracker(t *testing.T, bin, dsn string) *tracker {
	t.Helper()
	addr := freePort(t)
	cmd := exec.Command(bin, "--skipconfig", "--dsn", dsn, "--listen", addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("mogilefsd did not stop on SIGTERM\n%s", stderr.String())
		}
	})
	tr := &tracker{t: t, addr: addr, cmd: cmd}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := noop(addr); err == nil {
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatalf("mogilefsd never answered\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ask sends one request and reads its reply ("." ends a "!" command's),
// all within d.
func (tr *tracker) ask(line string, d time.Duration) (string, error) {
	nc, err := net.DialTimeout("tcp", tr.addr, d)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(d))
	if _, err := fmt.Fprint(nc, line+"\r\n"); err != nil {
		return "", err
	}
	r := bufio.NewReader(nc)
	var out strings.Builder
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return out.String(), err
		}
		if !strings.HasPrefix(line, "!") {
			return l, nil
		}
		if l == ".\r\n" {
			return out.String(), nil
		}
		out.WriteString(l)
	}
}

// pids is "!jobs"' pids per job.
func (tr *tracker) pids() map[string][]int {
	tr.t.Helper()
	out, err := tr.ask("!jobs", 5*time.Second)
	if err != nil {
		tr.t.Fatalf("!jobs: %v", err)
	}
	m := map[string][]int{}
	for _, l := range strings.Split(out, "\r\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[1] != "pids" {
			continue
		}
		for _, p := range f[2:] {
			n, _ := strconv.Atoi(p)
			m[f[0]] = append(m[f[0]], n)
		}
	}
	return m
}

// watcher is a "!watch" connection's lines.
type watcher struct {
	mu    sync.Mutex
	lines []string
}

func (tr *tracker) watch() *watcher {
	tr.t.Helper()
	nc, err := net.Dial("tcp", tr.addr)
	if err != nil {
		tr.t.Fatal(err)
	}
	tr.t.Cleanup(func() { nc.Close() })
	fmt.Fprint(nc, "!watch\r\n")
	w := &watcher{}
	r := bufio.NewReader(nc)
	first, err := r.ReadString('\n') // registered once it has answered
	if err != nil {
		tr.t.Fatalf("!watch: %v", err)
	}
	w.lines = append(w.lines, first)
	go func() {
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			w.mu.Lock()
			w.lines = append(w.lines, strings.TrimRight(l, "\r\n"))
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *watcher) has(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

// Each job runs in a process of its own, with its pid in "!jobs", as
// 2.73's did; an operator who stops or kills that pid stops or kills the
// worker, and the tracker keeps answering within a second.
func TestMogilefsd_JobsAreProcesses(t *testing.T) {
	bin := buildBinary(t)
	for _, b := range []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:///" + filepath.Join(t.TempDir(), "mogilefs.db") }},
		{"mysql", func(t *testing.T) string { return testdb.MySQL(t) }},
		{"postgres", func(t *testing.T) string { return testdb.Postgres(t) }},
	} {
		t.Run(b.name, func(t *testing.T) { testJobsAreProcesses(t, startTracker(t, bin, b.dsn(t))) })
	}
}

func testJobsAreProcesses(t *testing.T, tr *tracker) {
	jobs := []string{"delete", "fsck", "job_master", "monitor", "reaper", "replicate"}
	var pids map[string][]int
	waitUntil(t, 10*time.Second, "a pid for every job", func() bool {
		pids = tr.pids()
		for _, j := range jobs {
			if len(pids[j]) != 1 {
				return false
			}
		}
		return true
	})
	trackerPid := tr.cmd.Process.Pid
	for _, j := range jobs {
		pid := pids[j][0]
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if pid == trackerPid || err != nil || !strings.HasSuffix(string(cmdline), "\x00["+j+"]\x00") {
			t.Fatalf("%s pid %d (tracker %d): cmdline %q, %v", j, pid, trackerPid, cmdline, err)
		}
	}

	// queries answers the commands an operator and mogadm send, each
	// within a second.
	n := 0
	queries := func(when string) {
		t.Helper()
		n++
		for _, q := range []string{
			"noop", "get_domains", "get_hosts", "get_devices", "server_settings",
			fmt.Sprintf("create_domain domain=d%d", n), "list_keys domain=d1", "!jobs", "!stats",
		} {
			t0 := time.Now()
			reply, err := tr.ask(q, time.Second)
			if err != nil {
				t.Fatalf("%s: %q: %v after %v", when, q, err, time.Since(t0))
			}
			if strings.HasPrefix(reply, "ERR") && !strings.Contains(reply, "none_match") {
				t.Fatalf("%s: %q: %q", when, q, reply)
			}
		}
	}
	queries("all running")

	for _, j := range []string{"replicate", "monitor", "job_master"} {
		pid := pids[j][0]
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		queries("kill -STOP " + j)
		syscall.Kill(pid, syscall.SIGCONT)
	}

	// A worker's own log lines reach "!watch" with its pid: the monitor's
	// about a storage node that does not listen.
	w := tr.watch()
	closed := freePort(t)
	_, port, _ := net.SplitHostPort(closed)
	for _, q := range []string{
		"create_host host=h1&ip=127.0.0.1&port=" + port + "&status=alive",
		"create_device hostid=1&devid=1&state=alive",
	} {
		if reply, err := tr.ask(q, 5*time.Second); err != nil || !strings.HasPrefix(reply, "OK") {
			t.Fatalf("%s: %q, %v", q, reply, err)
		}
	}
	want := fmt.Sprintf("[monitor(%d)] Port %s not listening", pids["monitor"][0], port)
	waitUntil(t, 10*time.Second, "watch line "+want, func() bool { return w.has(want) })

	old := pids["replicate"][0]
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	queries("kill -9 replicate")
	waitUntil(t, 10*time.Second, "a new replicate worker", func() bool {
		p := tr.pids()["replicate"]
		return len(p) == 1 && p[0] != old
	})
	for _, want := range []string{
		fmt.Sprintf("Child %d (replicate) died: 9 (UNEXPECTED)", old),
		"Job replicate has only 0, wants 1, making 1.",
	} {
		waitUntil(t, 5*time.Second, "watch line "+want, func() bool { return w.has(want) })
	}

	// "!to <job> :shutdown" ends the worker process; a watcher that
	// registered just before sees its death and its replacement.
	w = tr.watch()
	old = tr.pids()["delete"][0]
	if out, err := tr.ask("!to delete :shutdown", 5*time.Second); err != nil || !strings.Contains(out, "Message sent to 1 children") {
		t.Fatalf("!to delete :shutdown: %q, %v", out, err)
	}
	for _, want := range []string{
		fmt.Sprintf("Child %d (delete) died: 0 (UNEXPECTED)", old),
		"Job delete has only 0, wants 1, making 1.",
	} {
		waitUntil(t, 10*time.Second, "watch line "+want, func() bool { return w.has(want) })
	}
	waitUntil(t, 10*time.Second, "the delete process gone", func() bool {
		return syscall.Kill(old, 0) != nil || isZombie(old)
	})
}

// isZombie: a child of a tracker that exited is reaped by init, which a
// container may not run; such a process has exited all the same.
func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

// A package upgrade replaces the binary under a running tracker: the
// workers it starts afterwards are still its own binary, which speaks its
// protocol, not the new file at the same path.
func TestMogilefsd_WorkersAfterBinaryReplaced(t *testing.T) {
	bin := buildBinary(t)
	tr := startTracker(t, bin, "sqlite:///"+filepath.Join(t.TempDir(), "mogilefs.db"))
	var old int
	waitUntil(t, 10*time.Second, "a reaper", func() bool {
		p := tr.pids()["reaper"]
		if len(p) == 1 {
			old = p[0]
		}
		return len(p) == 1
	})
	// The new "version": a program that is no worker at all.
	tmp := bin + ".new"
	if err := os.WriteFile(tmp, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var pid int
	waitUntil(t, 10*time.Second, "a new reaper", func() bool {
		p := tr.pids()["reaper"]
		if len(p) == 1 && p[0] != old {
			pid = p[0]
			return true
		}
		return false
	})
	time.Sleep(500 * time.Millisecond)
	if p := tr.pids()["reaper"]; len(p) != 1 || p[0] != pid || syscall.Kill(pid, 0) != nil || isZombie(pid) {
		t.Fatalf("the new reaper %d did not stay up (now %v): it is not the tracker's own binary", pid, p)
	}
}

// A tracker killed with kill -9 leaves no worker behind: each sees its
// connection end and exits at once (it can record nothing without the
// tracker, whose locks the database has freed).
func TestMogilefsd_WorkersEndWithTheTracker(t *testing.T) {
	bin := buildBinary(t)
	tr := startTracker(t, bin, "sqlite:///"+filepath.Join(t.TempDir(), "mogilefs.db"))
	var all []int
	waitUntil(t, 10*time.Second, "six worker processes", func() bool {
		all = all[:0]
		for job, pids := range tr.pids() {
			if job != "queryworker" {
				all = append(all, pids...)
			}
		}
		return len(all) == 6
	})
	if err := tr.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range all {
		waitUntil(t, 3*time.Second, fmt.Sprintf("worker %d gone", pid), func() bool {
			return syscall.Kill(pid, 0) != nil || isZombie(pid)
		})
	}
}
