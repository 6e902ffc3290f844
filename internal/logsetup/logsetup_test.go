package logsetup

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// The level: log_level when given, else debug with -d, else info; the
// format: JSON when asked, else text.
func TestNew(t *testing.T) {
	for _, c := range []struct {
		level string
		debug bool
		want  slog.Level
	}{
		{"", false, slog.LevelInfo},
		{"", true, slog.LevelDebug},
		{"warn", true, slog.LevelWarn},
		{"error", false, slog.LevelError},
		{"info", true, slog.LevelInfo},
		{"debug", false, slog.LevelDebug},
	} {
		l := New(&bytes.Buffer{}, c.level, "", c.debug)
		for _, lv := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			if got := l.Enabled(context.Background(), lv); got != (lv >= c.want) {
				t.Errorf("New(level %q, debug %v): %v enabled = %v; want the level %v", c.level, c.debug, lv, got, c.want)
			}
		}
	}
	var b bytes.Buffer
	New(&b, "", "json", false).Info("hello", "k", 1)
	if !strings.HasPrefix(b.String(), "{") || !strings.Contains(b.String(), `"msg":"hello"`) {
		t.Errorf("json format wrote %q", b.String())
	}
	b.Reset()
	New(&b, "", "text", false).Info("hello")
	if !strings.Contains(b.String(), "msg=hello") {
		t.Errorf("text format wrote %q", b.String())
	}
}
