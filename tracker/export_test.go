package tracker

import (
	"log/slog"

	"github.com/gomogile/gomogile/tracker/query"
)

// Test hooks.
var DefaultDSNIn = defaultDSN

// SetDefaultDSNFunc replaces what an empty db_dsn means; it returns a
// function restoring the original.
func SetDefaultDSNFunc(f func() string) (restore func()) {
	old := defaultDSNFunc
	defaultDSNFunc = f
	return func() { defaultDSNFunc = old }
}

// Logger is the tracker's own logger (the one "!watch" streams), so tests
// can log at a rate no request could.
func Logger(t *Tracker) *slog.Logger { return t.log }

// CommandCategories maps every query command to its category's name
// ("client", "admin", or "uncategorised" for one added without).
func CommandCategories() map[string]string {
	out := map[string]string{}
	for name, c := range query.Commands() {
		out[name] = c.Cat.String()
	}
	return out
}

// JobLines are "!jobs"' lines for jobs, self standing in for goroutine
// workers' pids.
var JobLines = jobLines
