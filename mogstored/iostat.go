package mogstored

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// iostatHub samples per-device I/O utilisation once an interval, while
// someone watches, and fans the reports out. The original ran "iostat -dx 1"
// and printed, per MogileFS device, "<devid>\t<util%>" (or "-" when the disk
// is unknown) and then "." (Mogstored::ChildProcess::IOStat); the tracker's
// IOStatWatcher reads exactly that. We compute %util the way iostat does:
// the growth of the disk's io_ticks (ms spent doing I/O) over wall time.
type iostatHub struct {
	docroot  string
	interval time.Duration
	log      *slog.Logger

	// Where the kernel's counters live; tests point them at fakes.
	diskstats string // /proc/diskstats
	sysBlock  string // /sys/dev/block

	mu   sync.Mutex
	subs map[chan string]struct{}
	wake chan struct{}
}

func newIOStatHub(docroot string, interval time.Duration, log *slog.Logger) *iostatHub {
	return &iostatHub{
		docroot:   docroot,
		interval:  interval,
		log:       log,
		diskstats: "/proc/diskstats",
		sysBlock:  "/sys/dev/block",
		subs:      make(map[chan string]struct{}),
		wake:      make(chan struct{}, 1),
	}
}

// available reports whether utilisation can be measured here at all.
func (h *iostatHub) available() bool {
	f, err := os.Open(h.diskstats)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

func (h *iostatHub) subscribe() (<-chan string, func()) {
	ch := make(chan string, 4)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

func (h *iostatHub) watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

func (h *iostatHub) publish(report string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- report:
		default: // slow watcher: drop, as the original did
		}
	}
}

func (h *iostatHub) run(ctx context.Context) {
	var prev map[string]uint64
	var prevAt time.Time
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		case <-t.C:
		}
		if h.watchers() == 0 {
			prev = nil // stale once nobody watched; start over
			continue
		}
		now := time.Now()
		cur, err := h.readDiskstats()
		if err != nil {
			h.log.Warn("reading disk statistics", "err", err)
			continue
		}
		if prev != nil && now.Sub(prevAt) > 0 {
			h.publish(h.report(prev, cur, now.Sub(prevAt)))
		}
		prev, prevAt = cur, now
	}
}

// report renders one group of lines: devices in numeric order, then ".".
func (h *iostatHub) report(prev, cur map[string]uint64, elapsed time.Duration) string {
	devs, _ := deviceDirs(h.docroot)
	ids := make([]int, 0, len(devs))
	byID := make(map[int]string)
	for _, d := range devs {
		id, err := strconv.Atoi(d[3:])
		if err != nil {
			continue
		}
		ids = append(ids, id)
		byID[id] = d
	}
	sort.Ints(ids)
	var b strings.Builder
	for _, id := range ids {
		util := "-"
		if disk, ok := h.diskOf(filepath.Join(h.docroot, byID[id])); ok {
			p, okp := prev[disk]
			c, okc := cur[disk]
			if okp && okc && c >= p {
				u := float64(c-p) / float64(elapsed.Milliseconds()) * 100
				if u > 100 {
					u = 100
				}
				util = strconv.FormatFloat(u, 'f', 2, 64)
			}
		}
		fmt.Fprintf(&b, "%d\t%s\n", id, util)
	}
	b.WriteString(".\n")
	return b.String()
}

// readDiskstats maps "major:minor" to io_ticks, the tenth statistic after
// the device name.
func (h *iostatHub) readDiskstats() (map[string]uint64, error) {
	f, err := os.Open(h.diskstats)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseDiskstats(f)
}

func parseDiskstats(r io.Reader) (map[string]uint64, error) {
	out := make(map[string]uint64)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 13 {
			continue
		}
		ticks, err := strconv.ParseUint(f[12], 10, 64)
		if err != nil {
			continue
		}
		out[f[0]+":"+f[1]] = ticks
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parsing diskstats: %w", err)
	}
	return out, nil
}

// diskOf finds the whole disk ("major:minor") under a device directory: a
// partition counts as its parent disk, as the original mapped sdb1 to sdb.
func (h *iostatHub) diskOf(dir string) (string, bool) {
	major, minor, ok := devNumber(dir)
	if !ok {
		return "", false
	}
	id := fmt.Sprintf("%d:%d", major, minor)
	// /sys/dev/block/M:m links to …/sda/sda1 for a partition, whose parent
	// directory is the disk.
	if sys, err := filepath.EvalSymlinks(filepath.Join(h.sysBlock, id)); err == nil {
		if _, err := os.Stat(filepath.Join(sys, "partition")); err == nil {
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(sys), "dev")); err == nil {
				return strings.TrimSpace(string(b)), true
			}
		}
	}
	return id, true
}
