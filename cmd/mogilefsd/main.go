// Command mogilefsd is the gomogile tracker: a drop-in for MogileFS's
// mogilefsd, configured by the same file, flags and keys (see
// tracker.Main). The first SIGINT or SIGTERM shuts it down gracefully;
// a second one exits at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gomogile/gomogile/internal/buildinfo"
	"github.com/gomogile/gomogile/tracker"
	"github.com/gomogile/gomogile/tracker/jobs"
)

func main() {
	if _, ok := jobs.IsWorker(os.Args[1:]); ok {
		os.Exit(runWorker())
	}
	if buildinfo.VersionRequested(os.Args[1:]) {
		fmt.Println(buildinfo.Read().String("mogilefsd"))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		cancel()
		<-sig
		fmt.Fprintln(os.Stderr, "mogilefsd: second signal, exiting now")
		os.Exit(1)
	}()
	m := &tracker.Main{Stdout: os.Stdout, Stderr: os.Stderr, NewJobs: newJobs}
	err := run(ctx, m, os.Args[1:])
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, tracker.ErrUsage):
		fmt.Fprintln(os.Stderr, "mogilefsd:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "mogilefsd:", err)
		os.Exit(1)
	}
}
