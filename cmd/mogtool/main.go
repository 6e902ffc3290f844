// Command mogtool is a command-line client for MogileFS trackers, ours or
// the original: it stores, fetches, lists and deletes files, and manages
// domains, classes, hosts, devices, settings, fsck and rebalance, and
// drains devices; fsck and rebalance can be followed on a live progress
// line (--watch).
//
//	mogtool [--trackers=h:p,...] [--domain=d] [--timeout=30s] COMMAND [args]
//
// Trackers come from --trackers, else $MOGTOOL_TRACKERS, else
// 127.0.0.1:7001. Run "mogtool help" for the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gomogile/gomogile/internal/buildinfo"
)

func main() {
	if buildinfo.VersionRequested(os.Args[1:]) {
		fmt.Println(buildinfo.Read().String("mogtool"))
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := NewMain().Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode maps Run's error to the process status: 0 ok, 2 usage, 1 the
// rest.
func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintln(stderr, "mogtool:", err)
	var u *usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}
