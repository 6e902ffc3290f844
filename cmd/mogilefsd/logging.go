package main

import (
	"fmt"
	"io"
	"os"

	"github.com/gomogile/gomogile/tracker"
)

// logOutput is where the tracker's log goes: log_file when set (appended
// to), else syslog for a tracker detached with -D (its stderr is
// /dev/null; the original logged to syslog too), else stderr. The closer
// ends it after the tracker stops.
func logOutput(cfg tracker.Config, detached bool, stderr io.Writer) (io.Writer, func() error, error) {
	switch {
	case cfg.LogFile != "":
		f, err := os.OpenFile(cfg.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, nil, fmt.Errorf("log_file: %w", err)
		}
		return f, f.Close, nil
	case detached:
		w, err := openSyslog()
		if err != nil {
			return nil, nil, fmt.Errorf("logging to syslog (set log_file to log to a file instead): %w", err)
		}
		return w, w.Close, nil
	}
	return stderr, func() error { return nil }, nil
}
