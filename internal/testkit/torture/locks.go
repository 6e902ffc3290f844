package torture

import (
	"time"

	"github.com/gomogile/gomogile/internal/testkit/torture/check"
)

// How a holding ended, as the history tells it.
const (
	endReleased = "released" // Release was called while Lost was still open
	endLost     = "lost"     // Lost closed first (stamped by a watcher goroutine)
	endKilled   = "killed"   // the process was SIGKILLed: it does nothing more
	endPaused   = "paused"   // the process was SIGSTOPped: whatever it does after SIGCONT must be fenced
	endCrashed  = "crashed"  // a session lock's server crashed: the lock died with it
	endOpen     = "open"     // never ended in the history
)

// holding is one held lock: from Lock's return to its end.
type holding struct {
	proc     string
	name     string
	id       int64
	token    int64
	from, to time.Time
	call     time.Time // when the Lock call began (zero: unknown)
	end      string
}

// check is the holding as package check judges it.
func (h *holding) check() check.Hold {
	c := check.Hold{Proc: h.proc, Name: h.name, Token: h.token, From: h.from, To: h.to}
	switch h.end {
	case endReleased:
		c.End = check.Released
	case endLost:
		c.End = check.Lost
	case endKilled, endCrashed:
		c.End = check.Killed
	case endPaused:
		c.End = check.Paused
	default:
		c.End, c.To = check.Open, time.Time{}
	}
	return c
}

func stamp(t time.Time) string { return t.Format("15:04:05.000000") }
