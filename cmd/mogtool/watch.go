package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// DefaultInterval is how often --watch asks the tracker for progress.
const DefaultInterval = 2 * time.Second

var (
	// errStopped: a watched job ended before it finished (fsck_stop,
	// rebalance_stop), so a script waiting on it must not go on as if it had.
	errStopped = errors.New("stopped before it finished")
	// errInterrupted: the operator interrupted --watch; the job itself goes
	// on on the tracker.
	errInterrupted = errors.New("watch interrupted; the job goes on on the tracker")
)

// watchFlags adds --watch and --interval to a command's flags.
func watchFlags(fs *flag.FlagSet) (watch *bool, interval *time.Duration) {
	watch = fs.Bool("watch", false, "follow progress on one live line until the job ends")
	interval = fs.Duration("interval", DefaultInterval, "time between progress polls with --watch")
	return watch, interval
}

func checkInterval(name string, d time.Duration) error {
	if d <= 0 {
		return usagef("%s: --interval must be positive, not %v", name, d)
	}
	return nil
}

// terminal reports whether w is a terminal, where the progress line is
// redrawn in place rather than appended, and its width in columns (0 if
// unknown).
func terminal(w io.Writer) (ok bool, width int) {
	f, isFile := w.(*os.File)
	if !isFile || !term.IsTerminal(int(f.Fd())) {
		return false, 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		width = 0
	}
	return true, width
}

// poll asks the tracker once: the progress line to show, and whether the
// job is over. A job that ended without finishing returns its last line
// with done and an error wrapping errStopped.
type poll func(ctx context.Context) (line string, done bool, err error)

// liveLine shows successive progress lines: on a terminal one line
// rewritten in place (carriage return, padded over the previous text),
// elsewhere one line per poll, so logs and pipes get a readable record.
type liveLine struct {
	w     io.Writer
	tty   bool
	width int // the terminal's columns, 0 if unknown
	last  int // length of the line on screen (tty only)
}

func (l *liveLine) show(s string) {
	if !l.tty {
		fmt.Fprintln(l.w, s)
		return
	}
	// A line that wrapped could not be redrawn by a carriage return; cut
	// it one column short of the edge (the lines are ASCII).
	if l.width > 1 && len(s) > l.width-1 {
		s = s[:l.width-1]
	}
	pad := ""
	if n := l.last - len(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprint(l.w, "\r"+s+pad)
	l.last = len(s)
}

// end leaves the cursor on a fresh line after an in-place line.
func (l *liveLine) end() {
	if l.tty && l.last > 0 {
		fmt.Fprintln(l.w)
		l.last = 0
	}
}

// watch polls every interval, showing each line, until p reports the job
// over, p fails (a tracker error) or ctx ends (errInterrupted).
func watch(ctx context.Context, w io.Writer, interval time.Duration, p poll) error {
	l := &liveLine{w: w}
	l.tty, l.width = terminal(w)
	defer l.end()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		line, done, err := p(ctx)
		if ctx.Err() != nil {
			return errInterrupted
		}
		if line != "" {
			l.show(line)
		}
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return errInterrupted
		case <-t.C:
		}
	}
}

// meter turns successive progress counts into a rate and an ETA, measured
// from the first count it saw (the tracker's numbers carry no rate).
type meter struct {
	seen bool
	t0   time.Time
	n0   int64
}

// observe records done of total at now. ok is false while no rate is
// known yet (first sample, or no progress since).
func (m *meter) observe(now time.Time, done, total int64) (rate float64, eta time.Duration, ok bool) {
	if !m.seen {
		m.seen, m.t0, m.n0 = true, now, done
		return 0, 0, false
	}
	el := now.Sub(m.t0).Seconds()
	if el <= 0 || done <= m.n0 {
		return 0, 0, false
	}
	rate = float64(done-m.n0) / el
	if left := total - done; left > 0 {
		eta = time.Duration(float64(left) / rate * float64(time.Second))
	}
	return rate, eta, true
}

// progress formats "DONE/TOTAL UNIT (P%) R/s ETA D", most telling first
// since a terminal cuts the line at its edge; the rate and ETA are left
// out while the meter knows none.
func progress(done, total int64, unit string, rate float64, eta time.Duration, ok bool) string {
	pct := "-"
	if total > 0 {
		pct = fmt.Sprintf("%.1f%%", 100*float64(min(max(done, 0), total))/float64(total))
	}
	s := fmt.Sprintf("%d/%d %s (%s)", done, total, unit, pct)
	if ok {
		s += fmt.Sprintf(" %.1f/s ETA %s", rate, eta.Round(time.Second))
	}
	return s
}
