// Package logsetup builds a daemon's logger the one way mogilefsd and
// mogstored both do: a level (log_level) and a format (log_format) over an
// output chosen by log_file, else syslog for a daemon detached from its
// terminal (whose stderr is /dev/null), else stderr — as the original
// daemons logged to syslog once detached.
package logsetup

import (
	"fmt"
	"io"
	"log/slog"
	"os"
)

// Levels and Formats are the values log_level and log_format take.
var (
	Levels  = []string{"debug", "info", "warn", "error"}
	Formats = []string{"text", "json"}
)

// New is a logger writing to w at level ("" = info, or debug when debug is
// set: mogilefsd's -d; a level given wins over it) in format ("" = text).
// Values outside Levels and Formats are the caller's to refuse; here they
// mean the defaults.
func New(w io.Writer, level, format string, debug bool) *slog.Logger {
	l := slog.LevelInfo
	if debug {
		l = slog.LevelDebug
	}
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	case "info":
		l = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Output is where a daemon's log goes: file when set (appended to, created
// 0640), else syslog tagged tag when detached, else stderr. The closer
// ends it after the daemon stops.
func Output(file string, detached bool, tag string, stderr io.Writer) (io.Writer, func() error, error) {
	switch {
	case file != "":
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, nil, fmt.Errorf("log_file: %w", err)
		}
		return f, f.Close, nil
	case detached:
		w, err := OpenSyslog(tag)
		if err != nil {
			return nil, nil, fmt.Errorf("logging to syslog (set log_file to log to a file instead): %w", err)
		}
		return w, w.Close, nil
	}
	return stderr, func() error { return nil }, nil
}
