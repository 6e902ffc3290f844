package tracker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// The "!watch" stream copies the tracker's warnings and errors to the
// connections that asked for it. A watcher that does not read must cost the
// tracker nothing that grows: lines go into one ring shared by every
// watcher, each watcher's writer follows the ring at its own pace, and a
// writer that falls a whole ring behind skips ahead and tells its reader how
// many lines it lost. Memory is the ring (watchRingLines lines of at most
// maxWatchLine bytes) plus one goroutine per watcher, whatever the number of
// watchers or the rate of errors. (The original forked a child per watcher;
// gomogile once started a goroutine per watcher per line, and four silent
// watchers took a tracker from 25 MB to 706 MB in seven seconds.)
const (
	// watchRingLines is how many recent lines a slow watcher can catch up on.
	watchRingLines = 1024
	// maxWatchLine bounds one streamed line, in bytes.
	maxWatchLine = 1024
	// watchWriteTimeout bounds one write to a watcher; a watcher that stays
	// that long without reading keeps falling behind and losing lines, and
	// its ordinary replies are not delayed longer than this by the stream.
	watchWriteTimeout = time.Second
)

// maxLogValue bounds one string in a log record (keys, request arguments,
// error texts that quote them): a client can send 64 KB lines, and logging
// them whole made 115 MB of log out of 36,000 requests.
const maxLogValue = 256

// truncate shortens s to at most max bytes (on a UTF-8 boundary) and says
// how much was cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return fmt.Sprintf("%s...(%d bytes more)", s[:cut], len(s)-cut)
}

// watchRing is the shared ring of recent watch lines. seq numbers every line
// ever added; the ring holds the last watchRingLines of them.
type watchRing struct {
	mu     sync.Mutex
	lines  [watchRingLines]string
	seq    uint64        // sequence number of the next line
	notify chan struct{} // closed when a line is added
}

func (r *watchRing) add(line string) {
	r.mu.Lock()
	r.lines[r.seq%watchRingLines] = line
	r.seq++
	close(r.notify)
	r.notify = make(chan struct{})
	r.mu.Unlock()
}

// since returns the lines from sequence number from on (at most what the
// ring still holds), how many before them are gone, the next sequence
// number to ask for, and a channel closed when there is more.
func (r *watchRing) since(from uint64) (lines []string, dropped, next uint64, more <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seq > watchRingLines && from < r.seq-watchRingLines {
		dropped = r.seq - watchRingLines - from
		from = r.seq - watchRingLines
	}
	for s := from; s < r.seq; s++ {
		lines = append(lines, r.lines[s%watchRingLines])
	}
	return lines, dropped, r.seq, r.notify
}

// recentLines keeps the last recentWarnings warning lines for the status
// page, whether or not anyone watches: the watch ring takes lines only while
// a watcher is connected, so the page cannot read it. It is small and
// bounded, and costs the same whatever the rate of warnings.
type recentLines struct {
	mu    sync.Mutex
	lines [recentWarnings]string
	n     uint64 // lines ever added
}

// recentWarnings is how many recent warnings the status page shows.
const recentWarnings = 20

func (r *recentLines) add(line string) {
	r.mu.Lock()
	r.lines[r.n%recentWarnings] = line
	r.n++
	r.mu.Unlock()
}

// newestFirst returns the lines kept, the newest first.
func (r *recentLines) newestFirst() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for i := uint64(0); i < recentWarnings && i < r.n; i++ {
		out = append(out, r.lines[(r.n-1-i)%recentWarnings])
	}
	return out
}

// watchers are the connections that asked "!watch" for the tracker's
// warnings and errors, as the original streamed its children's errors.
// recent keeps the last few lines for the status page in any case.
type watchers struct {
	ring   watchRing
	recent recentLines

	mu  sync.Mutex
	set map[*conn]chan struct{} // closed to stop that watcher's writer
}

func newWatchers() *watchers {
	w := &watchers{set: map[*conn]chan struct{}{}}
	w.ring.notify = make(chan struct{})
	return w
}

func (w *watchers) toggle(c *conn) (added bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if stop, ok := w.set[c]; ok {
		close(stop)
		delete(w.set, c)
		return false
	}
	stop := make(chan struct{})
	w.set[c] = stop
	w.ring.mu.Lock()
	from := w.ring.seq // a new watcher sees lines from now on
	w.ring.mu.Unlock()
	go w.stream(c, from, stop)
	return true
}

func (w *watchers) remove(c *conn) {
	w.mu.Lock()
	if stop, ok := w.set[c]; ok {
		close(stop)
		delete(w.set, c)
	}
	w.mu.Unlock()
}

func (w *watchers) active() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.set) > 0
}

// send adds a line to the recent lines and, when someone watches, for
// every watcher; it never blocks on one.
func (w *watchers) send(line string) {
	line = truncate(line, maxWatchLine)
	w.recent.add(line)
	if !w.active() {
		return
	}
	w.ring.add(line)
}

// stream writes the ring to one watcher until stop is closed or a write
// fails for another reason than its deadline. Lines stay whole on the wire
// whatever the reader does: when a write times out in the middle of a
// line, the rest of that line (at most maxWatchLine bytes, the only memory
// a watcher holds) goes out before anything else, and the lines after it
// are read from the ring again (or reported dropped).
func (w *watchers) stream(c *conn, seq uint64, stop <-chan struct{}) {
	var pending string
	for {
		var segs []string
		first, next := seq, seq
		var more <-chan struct{}
		if pending != "" {
			segs = []string{pending}
		} else {
			var lines []string
			var dropped uint64
			lines, dropped, next, more = w.ring.since(seq)
			first = next - uint64(len(lines))
			if dropped > 0 {
				segs = append(segs, fmt.Sprintf("!watch: %d lines dropped (reader too slow)\r\n", dropped))
			}
			for _, l := range lines {
				segs = append(segs, l+"\r\n")
			}
		}
		if len(segs) == 0 {
			select {
			case <-stop:
				return
			case <-more:
			}
			continue
		}
		select {
		case <-stop:
			return
		default:
		}
		hadPending := pending != ""
		pending = ""
		c.wmu.Lock()
		c.nc.SetWriteDeadline(time.Now().Add(watchWriteTimeout))
		var err error
		written := 0 // whole segments written
		for _, sg := range segs {
			var n int
			n, err = io.WriteString(c.nc, sg)
			if err != nil {
				pending = sg[n:]
				break
			}
			written++
		}
		c.wmu.Unlock()
		switch {
		case hadPending:
			// seq already points past the line pending belonged to.
		case err == nil:
			seq = next
		default:
			// The cut segment's rest is pending; resume after it. A cut
			// "dropped" notice is segment 0, before the first line.
			lineSegs := len(segs) - int(next-first) // 1 with a notice, else 0
			cut := written - lineSegs               // index of the cut line; -1 for the notice
			seq = first + uint64(cut+1)
		}
		if err != nil && !isTimeout(err) {
			return // connection gone; serve removes the watcher
		}
	}
}

// newLogHandler is the tracker's log handler over parent: every string
// value is truncated to maxLogValue, and warnings and errors are copied to
// the watchers.
func newLogHandler(parent slog.Handler, w *watchers) slog.Handler {
	return &truncHandler{next: &watchHandler{Handler: parent, w: w}}
}

// truncHandler truncates long values before any handler sees them.
type truncHandler struct{ next slog.Handler }

func truncAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if len(v.String()) > maxLogValue {
			return slog.String(a.Key, truncate(v.String(), maxLogValue))
		}
	case slog.KindAny:
		if s := fmt.Sprint(v.Any()); len(s) > maxLogValue {
			return slog.String(a.Key, truncate(s, maxLogValue))
		}
	case slog.KindGroup:
		as := v.Group()
		out := make([]any, len(as))
		for i, g := range as {
			out[i] = truncAttr(g)
		}
		return slog.Group(a.Key, out...)
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h *truncHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *truncHandler) Handle(ctx context.Context, r slog.Record) error {
	nr := slog.NewRecord(r.Time, r.Level, truncate(r.Message, maxLogValue), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		nr.AddAttrs(truncAttr(a))
		return true
	})
	return h.next.Handle(ctx, nr)
}

func (h *truncHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = truncAttr(a)
	}
	return &truncHandler{next: h.next.WithAttrs(out)}
}

func (h *truncHandler) WithGroup(name string) slog.Handler {
	return &truncHandler{next: h.next.WithGroup(name)}
}

// watchHandler copies warnings and errors to watchers and to the recent
// lines the status page shows.
type watchHandler struct {
	slog.Handler
	w     *watchers
	attrs []slog.Attr
}

func (h *watchHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		attrs := append([]slog.Attr(nil), h.attrs...)
		r.Attrs(func(a slog.Attr) bool {
			attrs = append(attrs, a)
			return true
		})
		h.w.send(watchLine(r.Message, attrs))
	}
	return h.Handler.Handle(ctx, r)
}

func (h *watchHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &watchHandler{Handler: h.Handler.WithAttrs(as), w: h.w, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *watchHandler) WithGroup(name string) slog.Handler {
	return &watchHandler{Handler: h.Handler.WithGroup(name), w: h.w, attrs: h.attrs}
}
