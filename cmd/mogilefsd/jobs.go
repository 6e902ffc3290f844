package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// newJobs builds the background workers: replicate, delete, fsck, reaper,
// monitor and (unless --no-job_master) the job master, each in a process
// of its own, as 2.73's were: this binary started again with
// jobs.WorkerArgs ("mogilefsd [replicate]"), so that "!jobs" lists real
// pids and an operator who kills or stops one stops that worker, not the
// tracker. Where the system cannot (jobs.ProcessesSupported: not Unix),
// the workers are goroutines.
func newJobs(st *store.Store, cfg tracker.Config, log *slog.Logger) (*jobs.Manager, error) {
	o := tracker.JobsOptions(cfg)
	o.Logger = log
	if !jobs.ProcessesSupported {
		return jobs.New(st, o), nil // goroutines, the tracker's pid in !jobs
	}
	exe, err := runningBinary()
	if err != nil {
		return nil, fmt.Errorf("worker processes: %w", err)
	}
	o.Process = func(class string) *exec.Cmd {
		cmd := exec.Command(exe, jobs.WorkerArgs(class)...)
		// ps shows the name the tracker was started by, as 2.73's children
		// showed "mogilefsd [replicate]".
		cmd.Args[0] = os.Args[0]
		// A worker has nothing to say on stderr but a failure to start;
		// everything else goes to the tracker over its connection.
		cmd.Stderr = os.Stderr
		return cmd
	}
	return jobs.New(st, o), nil
}

// runningBinary is the file this process runs. On Linux that is
// /proc/self/exe, which stays this very binary when a package upgrade
// replaces the file on disk: a worker must speak its tracker's protocol,
// so it must never be the newer binary the path names now.
func runningBinary() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// runWorker is a worker process's main (see newJobs). SIGINT, which a
// terminal sends to the tracker and its workers alike, is the tracker's to
// act on: it stops its workers in order. SIGTERM from an operator ends
// this worker gracefully, and the tracker starts another.
func runWorker() int {
	signal.Ignore(syscall.SIGINT)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := jobs.RunWorker(ctx, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mogilefsd worker:", err)
		return 1
	}
	return 0
}
