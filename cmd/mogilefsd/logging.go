package main

import (
	"io"

	"github.com/gomogile/gomogile/internal/logsetup"
	"github.com/gomogile/gomogile/tracker"
)

// logOutput is where the tracker's log goes: log_file when set (appended
// to), else syslog for a tracker detached with -D (its stderr is
// /dev/null; the original logged to syslog too), else stderr. The closer
// ends it after the tracker stops.
func logOutput(cfg tracker.Config, detached bool, stderr io.Writer) (io.Writer, func() error, error) {
	return logsetup.Output(cfg.LogFile, detached, "mogilefsd", stderr)
}
