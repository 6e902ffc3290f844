package tracker

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/gomogile/gomogile/internal/logsetup"
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
	return logsetup.New(w, cfg.LogLevel, cfg.LogFormat, cfg.Debug > 0)
}
