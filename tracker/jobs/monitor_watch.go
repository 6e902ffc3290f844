package jobs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The watch side channel is how the original learns each device's I/O
// utilisation (MogileFS::IOStatWatcher): a storage node's mogstored answers
// "watch" on its management port and then streams, about once a second, one
// "<devid>\t<util>" line per device directory followed by a line ".". The
// port is mogstored_stream_port, one setting for all hosts (7501), because
// the hosts table has no column for it. The monitor keeps one connection per
// host IP with readable devices and remembers each device's latest figure,
// which get_devices reports as utilization and `mogadm check` shows as I/O%.
const (
	defaultStreamPort = 7501
	watchDialTimeout  = usageTimeout
	// A node reports every second; one silent this long is taken for hung
	// and its connection is made anew (the original relied on TCP
	// keepalive alone and could wait for hours).
	watchIdle = 15 * time.Second
	// Failed connections are retried after watchRetryMin, doubling up to
	// watchRetryMax, the original's retry interval after an error; the
	// monitor cuts a wait short when it sees the host come back, as the
	// original's restart_monitoring_if_needed does.
	watchRetryMin = time.Second
	watchRetryMax = 60 * time.Second
	// Bounds on what one node may make us buffer.
	watchMaxLine   = 4096
	watchMaxReport = 1 << 16
)

// errNoWatch: the node answered "ERR …" (mogstored without iostat). Asking
// again soon is pointless, so the next try waits watchRetryMax.
var errNoWatch = errors.New("node does not serve watch")

// devUtil is one device's last figure and the connection that delivered
// it, so that a connection going away forgets exactly its own figures.
type devUtil struct {
	text string
	src  *hostWatch
}

// watchers are the monitor's watch connections by host IP. Only the
// monitor loop starts and stops them; kick may come from its per-host
// goroutines.
type watchers struct {
	obs  *observations
	port int
	log  *slog.Logger
	wg   sync.WaitGroup

	mu    sync.Mutex
	hosts map[string]*hostWatch
}

// hostWatch is the connection to one host's watch stream.
type hostWatch struct {
	addr   string
	cancel context.CancelFunc
	kick   chan struct{}

	mu   sync.Mutex
	devs map[int]bool // devices the database places on this IP
}

func newWatchers(obs *observations, port int, log *slog.Logger) *watchers {
	return &watchers{obs: obs, port: port, log: log, hosts: map[string]*hostWatch{}}
}

// set makes the connections match want (host IP → its device ids): new
// hosts get a connection, hosts no longer listed lose theirs (the original
// leaves those open forever), and each keeps to the devices the database
// puts on it, as the original ignores devices "accidentally found".
func (ws *watchers) set(ctx context.Context, want map[string]map[int]bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for ip, w := range ws.hosts {
		if _, ok := want[ip]; !ok {
			w.cancel() // its goroutine forgets its figures on the way out
			delete(ws.hosts, ip)
		}
	}
	for ip, devs := range want {
		w, ok := ws.hosts[ip]
		if !ok {
			wctx, cancel := context.WithCancel(ctx)
			w = &hostWatch{
				addr:   net.JoinHostPort(ip, strconv.Itoa(ws.port)),
				cancel: cancel,
				kick:   make(chan struct{}, 1),
				devs:   devs,
			}
			ws.hosts[ip] = w
			ws.wg.Add(1)
			go ws.run(wctx, w)
			continue
		}
		w.mu.Lock()
		w.devs = devs
		w.mu.Unlock()
		ws.obs.keepUtil(w, devs)
	}
}

// kick ends the wait before the next connection attempt to ip, if any.
func (ws *watchers) kick(ip string) {
	ws.mu.Lock()
	w := ws.hosts[ip]
	ws.mu.Unlock()
	if w == nil {
		return
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// stop closes every connection and waits for their goroutines.
func (ws *watchers) stop() {
	ws.mu.Lock()
	for ip, w := range ws.hosts {
		w.cancel()
		delete(ws.hosts, ip)
	}
	ws.mu.Unlock()
	ws.wg.Wait()
}

// run keeps w connected until ctx ends. Figures live only while the
// connection that delivered them does: a node that went away has no
// current utilisation (the original kept showing the last one).
func (ws *watchers) run(ctx context.Context, w *hostWatch) {
	defer ws.wg.Done()
	defer ws.obs.keepUtil(w, nil)
	wait := watchRetryMin
	quiet := false // a failure was logged and nothing has worked since
	for {
		delivered, err := ws.session(ctx, w)
		ws.obs.keepUtil(w, nil)
		if ctx.Err() != nil {
			return
		}
		if delivered {
			wait, quiet = watchRetryMin, false
		}
		if errors.Is(err, errNoWatch) {
			wait = watchRetryMax
		}
		if !quiet {
			ws.log.Info("watch connection failed", "addr", w.addr, "err", err, "retry_in", wait)
			quiet = true
		} else {
			ws.log.Debug("watch connection failed", "addr", w.addr, "err", err, "retry_in", wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-w.kick:
		case <-t.C:
		}
		t.Stop()
		wait = min(2*wait, watchRetryMax)
	}
}

// session connects, asks to watch and reads reports until the connection
// fails or ctx ends. delivered is whether at least one report arrived.
func (ws *watchers) session(ctx context.Context, w *hostWatch) (delivered bool, err error) {
	d := net.Dialer{Timeout: watchDialTimeout, KeepAlive: 15 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", w.addr)
	if err != nil {
		return false, fmt.Errorf("jobs: watch %s: %w", w.addr, err)
	}
	defer conn.Close()
	// Close unblocks a read in progress when the monitor stops.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	if err := conn.SetWriteDeadline(time.Now().Add(watchDialTimeout)); err != nil {
		return false, fmt.Errorf("jobs: watch %s: %w", w.addr, err)
	}
	if _, err := io.WriteString(conn, "watch\n"); err != nil {
		return false, fmt.Errorf("jobs: watch %s: send: %w", w.addr, err)
	}
	br := bufio.NewReaderSize(conn, watchMaxLine)
	report := map[int]string{}
	for {
		if err := conn.SetReadDeadline(time.Now().Add(watchIdle)); err != nil {
			return delivered, fmt.Errorf("jobs: watch %s: %w", w.addr, err)
		}
		raw, err := br.ReadSlice('\n')
		if err != nil {
			if ctx.Err() != nil {
				return delivered, fmt.Errorf("jobs: watch %s: %w", w.addr, ctx.Err())
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				return delivered, fmt.Errorf("jobs: watch %s: line longer than %d bytes: %w", w.addr, watchMaxLine, err)
			}
			return delivered, fmt.Errorf("jobs: watch %s: read: %w", w.addr, err)
		}
		line := strings.TrimRight(string(raw), "\r\n")
		switch {
		case line == ".":
			ws.obs.setUtil(w, report)
			delivered = true
			report = map[int]string{}
		case strings.HasPrefix(line, "ERR"):
			return delivered, fmt.Errorf("jobs: watch %s: node answered %q: %w", w.addr, line, errNoWatch)
		default:
			// "<devid> <util>", split on white space as the original does;
			// util is kept verbatim ("12.50", or "-" for an unknown disk).
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			id, err := strconv.Atoi(f[0])
			if err != nil || id <= 0 {
				continue
			}
			if len(report) >= watchMaxReport {
				return delivered, fmt.Errorf("jobs: watch %s: more than %d devices in one report", w.addr, watchMaxReport)
			}
			report[id] = f[1]
		}
	}
}

// setUtil records one report of w: the figures of w's devices in it, and
// forgets those of w's devices it leaves out.
func (o *observations) setUtil(w *hostWatch, report map[int]string) {
	w.mu.Lock()
	devs := w.devs
	w.mu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	for id := range devs {
		if v, ok := report[id]; ok {
			o.util[id] = devUtil{text: v, src: w}
		} else if o.util[id].src == w {
			delete(o.util, id)
		}
	}
	o.pruneUtilLocked(w, devs)
}

// keepUtil forgets the figures w delivered for devices not in keep (all of
// them when keep is nil).
func (o *observations) keepUtil(w *hostWatch, keep map[int]bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pruneUtilLocked(w, keep)
}

func (o *observations) pruneUtilLocked(w *hostWatch, keep map[int]bool) {
	for id, u := range o.util {
		if u.src == w && !keep[id] {
			delete(o.util, id)
		}
	}
}
