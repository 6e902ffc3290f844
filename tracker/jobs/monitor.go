package jobs

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// Monitor constants from Worker/Monitor.pm.
const (
	updateDBEvery    = 15 * time.Second // write usage rows, test-write devices, at most this often
	usageTimeout     = 2 * time.Second  // the original's conn_timeout for monitor requests
	slowFailure      = 500 * time.Millisecond
	deviceUpdateLock = "mgfs:device_update"
)

// observations is what this tracker's monitor has seen; the original keeps
// it in process memory too and never writes it to the database.
type observations struct {
	mu        sync.Mutex
	dev       map[int]devObs
	hostOK    map[int]bool    // hostid -> observed reachable
	util      map[int]devUtil // devid -> latest watch figure
	firstPass chan struct{}
	once      sync.Once

	// Passes are numbered: started is the number of the pass running or
	// last run, completed the last one finished; passDone is closed (and
	// replaced) at each completion. MonitorRound waits on them.
	started, completed uint64
	passDone           chan struct{}
}

type devObs struct {
	state           string
	totalKB, usedKB int64
	lastTestWrite   time.Time
	hostID          int
	// The bad Content-MD5 probe's answer; md5Stale asks for a new probe
	// because the device was unreachable since (it may be another server
	// now), while the old answer is still reported, as the original does.
	md5Known, rejectMD5, md5Stale bool
}

func newObservations() *observations {
	return &observations{dev: map[int]devObs{}, hostOK: map[int]bool{}, util: map[int]devUtil{}, firstPass: make(chan struct{}), passDone: make(chan struct{})}
}

// observe is the monitor's view of devid as the cluster model takes it: a
// device whose host is not known reachable is unreachable.
func (o *observations) observe(devid int) cluster.Observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	ob := o.dev[devid]
	obs := cluster.Observation{Monitored: true, State: ob.state, TotalKB: ob.totalKB, UsedKB: ob.usedKB}
	if obs.State != "" && !o.hostOK[ob.hostID] {
		obs.State = cluster.StateUnreachable
	}
	if u, ok := o.util[devid]; ok {
		obs.Utilization, obs.UtilizationOK = u.text, true
	}
	obs.RejectBadMD5, obs.RejectBadMD5OK = ob.rejectMD5, ob.md5Known
	return obs
}

func (o *observations) update(devid int, f func(*devObs)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ob := o.dev[devid]
	f(&ob)
	o.dev[devid] = ob
}

func (o *observations) setHost(hostid int, ok bool) {
	o.mu.Lock()
	o.hostOK[hostid] = ok
	o.mu.Unlock()
}

// unreachable records d as unreachable; its Content-MD5 behaviour is to be
// probed again once it is back.
func (o *observations) unreachable(d *device) {
	o.update(d.ID, func(ob *devObs) {
		ob.state, ob.hostID = "unreachable", d.HostID
		ob.md5Stale = ob.md5Known
	})
}

func (o *observations) utilization(devid int) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	u, ok := o.util[devid]
	return u.text, ok
}

func (o *observations) rejectBadMD5(devid int) (reject, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ob := o.dev[devid]
	return ob.rejectMD5, ob.md5Known
}

func (o *observations) needMD5Probe(devid int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	ob := o.dev[devid]
	return !ob.md5Known || ob.md5Stale
}

// Utilization is devid's I/O utilisation in percent as its storage node
// last reported it on the watch stream, verbatim, since get_devices passes
// it on unchanged: "12.50" from our mogstored, iostat's figure from the
// original one, "-" when the node cannot tell for that disk. ok is false
// while no watch connection to the device's host delivers a figure for it
// (not connected yet, dropped, or the node does not list the device).
func (m *Manager) Utilization(devid int) (util string, ok bool) {
	return m.obs.utilization(devid)
}

// RejectBadMD5 is whether devid's storage node refuses a PUT whose body
// does not match its Content-MD5, as the monitor's probe found after the
// device tested writeable. ok is false until a probe was answered. After
// the device was unreachable the last answer stands until a new probe
// replaces it.
func (m *Manager) RejectBadMD5(devid int) (reject, ok bool) {
	return m.obs.rejectBadMD5(devid)
}

// monitorLoop checks every readable device each MonitorInterval.
func (m *Manager) monitorLoop(ctx context.Context) {
	jc := m.classes[JobMonitor]
	log := m.log.With("job", JobMonitor)
	t := time.NewTicker(m.opts.MonitorInterval)
	defer t.Stop()
	if m.watch != nil {
		// The watch connections belong to the monitor: they end with it,
		// and so within Close.
		defer m.watch.stop()
	}
	for {
		m.obs.mu.Lock()
		m.obs.started++
		n := m.obs.started
		m.obs.mu.Unlock()
		if m.publish != nil {
			m.publish("pass_start")
		}
		err := m.monitorPass(ctx, log)
		m.obs.mu.Lock()
		m.obs.completed = n
		close(m.obs.passDone)
		m.obs.passDone = make(chan struct{})
		m.obs.mu.Unlock()
		if err != nil {
			if isCtxErr(ctx, err) {
				return
			}
			jc.errors.Add(1)
			log.Error("pass", "err", err)
		}
		// Workers wait for one pass, failed or not: a failed pass leaves
		// devices unobserved, which they treat as unusable, as they should.
		m.obs.once.Do(func() { close(m.obs.firstPass) })
		if m.publish != nil {
			m.publish("pass_done")
		}
		jc.processed.Add(1)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wakeOf(ctx):
		}
	}
}

// monitorPass is one usage_refresh: GET /dev<N>/usage of each readable
// device, record usage (only the tracker holding mgfs:device_update writes
// rows, and at most every 15 s per device), and test-write devices to tell
// writeable from readable.
func (m *Manager) monitorPass(ctx context.Context, log *slog.Logger) error {
	// The watch connections live as long as the monitor (loopCtx); the
	// pass's own reads and writes are bounded by PassTimeout.
	loopCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, m.opts.PassTimeout)
	defer cancel()
	w, err := m.freshWorld(ctx)
	if err != nil {
		return err
	}
	var canUpdate bool
	if l, err := m.st.Lock(ctx, deviceUpdateLock, 0); err == nil {
		canUpdate = true
		defer m.release(l)
		ctx = store.WithFence(ctx, l)
	} else if !errors.Is(err, store.ErrLockTimeout) {
		return fmt.Errorf("jobs: monitor: lock %s: %w", deviceUpdateLock, err)
	}
	now, err := m.st.Now(ctx)
	if err != nil {
		return fmt.Errorf("jobs: monitor: %w", err)
	}

	// Hosts are checked in parallel, as the original's event loop does, so
	// that one host timing out does not hold up the others; a host's own
	// devices go one after the other.
	byHost := map[int][]*device{}
	watch := map[string]map[int]bool{} // host IP -> devices, as seen_hosts
	for _, id := range sortedIDs(w.devs) {
		if d := w.devs[id]; d.CanReadFrom() {
			byHost[d.HostID] = append(byHost[d.HostID], d)
			if watch[d.Host.IP] == nil {
				watch[d.Host.IP] = map[int]bool{}
			}
			watch[d.Host.IP][d.ID] = true
		}
	}
	if m.watch != nil {
		m.watch.set(loopCtx, watch)
	}
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	for _, devs := range byHost {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.monitorHost(ctx, log, devs, canUpdate, now); err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return firstErr
}

// monitorHost checks the devices of one host.
func (m *Manager) monitorHost(ctx context.Context, log *slog.Logger, devs []*device, canUpdate bool, now time.Time) error {
	var firstErr error
	for i, d := range devs {
		if err := ctx.Err(); err != nil {
			return err
		}
		totalKB, usedKB, err := m.checkUsage(ctx, d)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ue *usageError
			switch {
			case errors.As(err, &ue) && ue.fast():
				// The original's line for a port that answers at once with
				// a refusal or an HTTP error; scripts on !watch wait for it.
				port := ""
				if pu, perr := url.Parse(ue.url); perr == nil {
					port = pu.Port()
				}
				m.downLog.failed(log, d.ID, fmt.Sprintf("Port %s not listening on %s (%s)?  Error was: %s", port, d.Host.IP, ue.url, ue.statusLine()))
			default:
				m.downLog.failed(log, d.ID, "usage check failed", "dev", d.ID, "host", d.Host.IP, "err", err)
			}
			m.obs.unreachable(d)
			if ue != nil && ue.slow {
				// A host that times out is down as a whole: its other
				// devices are unreachable too, without waiting for each.
				m.obs.setHost(d.HostID, false)
				for _, o := range devs[i+1:] {
					m.obs.unreachable(o)
				}
				return firstErr
			}
			continue
		}
		if m.obs.observe(d.ID).State == cluster.StateUnreachable && m.watch != nil {
			// Back: reconnect its watch stream now rather than after the
			// backoff (restart_monitoring_if_needed).
			m.watch.kick(d.Host.IP)
		}
		m.downLog.ok(log, d)
		m.obs.setHost(d.HostID, true)
		m.obs.update(d.ID, func(o *devObs) { o.totalKB, o.usedKB, o.hostID = totalKB, usedKB, d.HostID })
		d.Obs = m.obs.observe(d.ID)
		if canUpdate && (d.MBAsOf.IsZero() || d.MBAsOf.Add(updateDBEvery).Before(now)) {
			// A failed write must not keep the other devices unobserved.
			if err := m.st.SetDeviceUsage(ctx, d.ID, totalKB/1024, usedKB/1024); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("jobs: monitor: usage of dev%d: %w", d.ID, err)
			}
		}
		m.checkWrite(ctx, d)
	}
	return firstErr
}

type usageError struct {
	slow   bool
	url    string
	status int // the node's HTTP status; 0 when it gave none
	err    error
}

// fast is whether the node's port failed the usage request at once (a
// refusal or an HTTP error), rather than timing out or answering nonsense.
func (e *usageError) fast() bool {
	return !e.slow && (e.status != 0 || errors.Is(e.err, syscall.ECONNREFUSED))
}

// statusLine is the failure as the original's HTTP client put it: the
// status line, or "500 write_error" for a refused connection (its write to
// a socket whose connect failed is what fails first).
func (e *usageError) statusLine() string {
	if e.status != 0 {
		return fmt.Sprintf("%d %s", e.status, http.StatusText(e.status))
	}
	return "500 write_error"
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

var usageLineRE = regexp.MustCompile(`^(\w+)\s*:\s*(.+)$`)

// checkUsage reads /dev<N>/usage ("key: value" lines; used and total in
// KiB) from the device's GET port.
func (m *Manager) checkUsage(ctx context.Context, d *device) (totalKB, usedKB int64, err error) {
	start := time.Now()
	u := d.BaseURL(true) + "/dev" + strconv.Itoa(d.ID) + "/usage"
	fail := func(err error) (int64, int64, error) {
		return 0, 0, &usageError{slow: time.Since(start) >= slowFailure, url: u, err: err}
	}
	rctx, cancel := context.WithTimeout(ctx, usageTimeout)
	defer cancel()
	resp, err := m.nodes.Do(rctx, http.MethodGet, u, nil, 0, nil)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fail(fmt.Errorf("jobs: GET %s: %w", u, err))
	}
	if resp.StatusCode/100 != 2 {
		return 0, 0, &usageError{url: u, status: resp.StatusCode, err: fmt.Errorf("jobs: GET %s: HTTP %d", u, resp.StatusCode)}
	}
	stats := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if mm := usageLineRE.FindStringSubmatch(sc.Text()); mm != nil {
			stats[mm[1]] = mm[2]
		}
	}
	used, err1 := strconv.ParseInt(stats["used"], 10, 64)
	total, err2 := strconv.ParseInt(stats["total"], 10, 64)
	if err1 != nil || err2 != nil || total == 0 {
		return 0, 0, &usageError{url: u, err: fmt.Errorf("jobs: GET %s: reports used = %q, total = %q", u, stats["used"], stats["total"])}
	}
	return total, used, nil
}

// checkWrite decides writeable or readable, at most every 15 s per device:
// devices that may not be deleted from (readonly) are readable without a
// test; others get a test file PUT and read back.
func (m *Manager) checkWrite(ctx context.Context, d *device) {
	var last time.Time
	m.obs.mu.Lock()
	last = m.obs.dev[d.ID].lastTestWrite
	cur := m.obs.dev[d.ID].state
	m.obs.mu.Unlock()
	if cur != "" && cur != "unreachable" && time.Since(last) < updateDBEvery {
		return
	}
	state := "readable"
	var reject, probed bool
	if d.CanDeleteFrom() && m.testWrite(ctx, d) {
		state = "writeable"
		if m.obs.needMD5Probe(d.ID) {
			reject, probed = m.probeBadMD5(ctx, d)
		}
	}
	// State and probe answer change together, as the original ships them
	// to the tracker in one batch of events: whoever sees the device
	// writeable also sees whether it checks Content-MD5.
	m.obs.update(d.ID, func(o *devObs) {
		o.state = state
		o.lastTestWrite = time.Now()
		o.hostID = d.HostID
		if probed {
			o.md5Known, o.rejectMD5, o.md5Stale = true, reject, false
		}
	})
}

// badMD5 is the Content-MD5 the probe sends with the body ".": the digest
// of "!", as check_bogus_md5 sends.
var badMD5 = func() string {
	sum := md5.Sum([]byte("!"))
	return base64.StdEncoding.EncodeToString(sum[:])
}()

// probeBadMD5 is check_bogus_md5: PUT "." with a Content-MD5 that does not
// match it to /dev<N>/test-write/test-md5. A node that verifies the header
// refuses the body (our mogstored answers 400) and then reject is true; one
// that stores it anyway answers 2xx. As in the original any other answer
// counts as refusal; but no answer at all (ok false) decides nothing, and
// the probe is made again at the next test write. Whatever the node may have
// stored is deleted, which the original leaves behind.
func (m *Manager) probeBadMD5(ctx context.Context, d *device) (reject, ok bool) {
	rctx, cancel := context.WithTimeout(ctx, usageTimeout)
	defer cancel()
	u := d.BaseURL(false) + "/dev" + strconv.Itoa(d.ID) + "/test-write/test-md5"
	hdr := http.Header{"Content-Md5": {badMD5}}
	resp, err := m.nodes.Do(rctx, http.MethodPut, u, strings.NewReader("."), 1, hdr)
	if err != nil {
		m.log.Debug("bad Content-MD5 probe unanswered", "dev", d.ID, "err", err)
		return false, false
	}
	cluster.Drain(resp)
	if del, err := m.nodes.Do(rctx, http.MethodDelete, u, nil, 0, nil); err == nil {
		cluster.Drain(del)
	}
	return resp.StatusCode/100 != 2, true
}

func (m *Manager) testWrite(ctx context.Context, d *device) bool {
	rctx, cancel := context.WithTimeout(ctx, usageTimeout)
	defer cancel()
	dir := "/dev" + strconv.Itoa(d.ID) + "/test-write"
	m.nodes.MkcolDirs(rctx, d.BaseURL(false), d.ID, []string{dir})
	n := rand.IntN(100)
	path := dir + "/test-write-" + strconv.Itoa(n)
	content := []byte(fmt.Sprintf("time=%d rand=%d", time.Now().Unix(), n))
	resp, err := m.nodes.Do(rctx, http.MethodPut, d.BaseURL(false)+path, bytes.NewReader(content), int64(len(content)), nil)
	if err != nil {
		return false
	}
	cluster.Drain(resp)
	if resp.StatusCode/100 != 2 {
		return false
	}
	resp, err = m.nodes.Do(rctx, http.MethodGet, d.BaseURL(true)+path, nil, 0, nil)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return err == nil && resp.StatusCode/100 == 2 && bytes.Equal(got, content)
}

func sortedIDs[T any](m map[int]T) []int {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}
