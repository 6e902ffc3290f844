package jobs

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// downReminder is how often the monitor repeats that a device still fails
// its usage check.
const downReminder = time.Minute

// downLog keeps the monitor's failure lines to one per change. A pass runs
// every MonitorInterval (2.5 s), and logging each failed check made a line
// per down device per pass, forever. Now a device's failure is logged when
// it starts or its reason changes, then as a reminder every downReminder
// with the number of failed checks not logged since, and its recovery is
// logged once. The first line keeps the original's text, which scripts on
// "!watch" wait for.
type downLog struct {
	mu    sync.Mutex
	every time.Duration
	devs  map[int]*downEntry
}

type downEntry struct {
	line     string    // the failure as last logged; a new reason logs at once
	since    time.Time // first failed check of this outage
	logged   time.Time // when the failure was last logged
	repeats  int       // failed checks since then, not logged
	failures int       // failed checks in this outage
}

func newDownLog() *downLog {
	return &downLog{every: downReminder, devs: map[int]*downEntry{}}
}

// failed records a failed check of devid, described by msg and args, and
// logs it when it is new, when its reason changed, or as a reminder.
func (l *downLog) failed(log *slog.Logger, devid int, msg string, args ...any) {
	now := time.Now()
	line := msg + fmt.Sprint(args...)
	l.mu.Lock()
	e := l.devs[devid]
	switch {
	case e == nil:
		e = &downEntry{since: now}
		l.devs[devid] = e
		fallthrough
	case e.line != line:
		e.line, e.logged, e.repeats = line, now, 0
		e.failures++
		l.mu.Unlock()
		log.Warn(msg, args...)
		return
	}
	e.failures++
	e.repeats++
	if now.Sub(e.logged) < l.every {
		l.mu.Unlock()
		return
	}
	repeats, since := e.repeats, e.since
	e.logged, e.repeats = now, 0
	l.mu.Unlock()
	log.Warn(msg, append(args, "repeated", repeats, "down_since", since.UTC().Format(time.RFC3339))...)
}

// ok records a successful check of d and logs, once, that it is back.
func (l *downLog) ok(log *slog.Logger, d *device) {
	l.mu.Lock()
	e := l.devs[d.ID]
	delete(l.devs, d.ID)
	l.mu.Unlock()
	if e == nil {
		return
	}
	log.Info(fmt.Sprintf("dev%d on %s answers again", d.ID, d.Host.IP),
		"down_for", time.Since(e.since).Round(time.Second).String(), "failed_checks", e.failures)
}
