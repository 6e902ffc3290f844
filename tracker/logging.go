package tracker

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
)

// oneOfKey accepts one of the named values, case-insensitively.
func oneOfKey(f func(*Config) *string, values ...string) keySetter {
	return func(c *Config, v string) error {
		v = strings.ToLower(strings.TrimSpace(v))
		if !slices.Contains(values, v) {
			return fmt.Errorf("%q: want one of %s", v, strings.Join(values, ", "))
		}
		*f(c) = v
		return nil
	}
}

// NewLogger is the tracker's logger as cfg asks for it (log_level,
// log_format, -d), writing to w. Where w leads (log_file, syslog, stderr)
// is the mogilefsd command's choice.
func NewLogger(w io.Writer, cfg Config) *slog.Logger {
	level := slog.LevelInfo
	if cfg.Debug > 0 {
		level = slog.LevelDebug
	}
	switch cfg.LogLevel {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	case "info":
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
