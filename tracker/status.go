package tracker

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gomogile/gomogile/internal/statuslisten"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
	"github.com/gomogile/gomogile/tracker/query"
)

// The status listener (status_listen) is the tracker's HTTP side for
// operators: Prometheus metrics at /metrics, /healthz (the process
// answers), /readyz (the database answers within readyTimeout and has the
// schema this tracker speaks), net/http/pprof under /debug/pprof/, and at /
// a status page rendered from the same snapshot the gauges are read from.
// It answers only peers inside admin_networks when that is set: pprof and
// the page show as much as the "!" commands do.

// Status listener timeouts: readyTimeout bounds the database check of
// /readyz, snapshotTimeout the reads behind a scrape or the page, so a hung
// database makes them fail rather than hang.
const (
	readyTimeout    = 2 * time.Second
	snapshotTimeout = 5 * time.Second
)

// NewRegistry is the registry a daemon serves on /metrics: the Go runtime
// and process collectors, and nothing global. Main.Serve makes one, wraps
// the store into it (store/storemetrics) and gives it to New in
// Options.Registry.
func NewRegistry() *prometheus.Registry { return statuslisten.NewRegistry() }

// statusState is the tracker's part of the status listener.
type statusState struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	srv      *statuslisten.Server
}

// initStatus registers the tracker's metrics in reg (a new registry when
// nil).
func (t *Tracker) initStatus(reg *prometheus.Registry) error {
	if reg == nil {
		reg = NewRegistry()
	}
	s := &t.status
	s.reg = reg
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gomogile_requests_total", Help: "Protocol requests answered, by command and result (ok, error).",
	}, []string{"cmd", "result"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gomogile_request_seconds", Help: "Time to answer a protocol request, by command (waiting for a query slot included).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"cmd"})
	cs := []prometheus.Collector{
		s.requests, s.latency,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gomogile_requests_in_progress", Help: "Protocol requests being answered now."},
			func() float64 { return float64(t.stats.inProgress.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gomogile_requests_pending", Help: "Protocol requests waiting for a query slot."},
			func() float64 { return float64(t.stats.pending.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gomogile_build_info", Help: "Always 1; the labels name this build.", ConstLabels: prometheus.Labels{"version": Version},
		}, func() float64 { return 1 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gomogile_locks_info", Help: "Always 1; the labels say where the named locks live: the mechanism, and the outside lock service (lock_dsn) or \"database\".",
			ConstLabels: prometheus.Labels{"mechanism": t.q.Store.Capabilities().LockMechanism, "service": cmp.Or(t.q.Store.Capabilities().LockService, "database")},
		}, func() float64 { return 1 }),
		stateCollector{t},
	}
	cs = append(cs, t.q.Uploads.Collectors()...)
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, r := range cs[:i] {
				reg.Unregister(r)
			}
			return fmt.Errorf("tracker: metrics: %w", err)
		}
	}
	return nil
}

// observeRequest counts one answered request of a known command.
func (t *Tracker) observeRequest(cmd string, took time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	t.status.requests.WithLabelValues(cmd, result).Inc()
	t.status.latency.WithLabelValues(cmd).Observe(took.Seconds())
}

// openStatus listens on status_listen, if set. Called by Open with t.mu held.
func (t *Tracker) openStatus(ctx context.Context) error {
	if t.cfg.StatusListen == "" {
		return nil
	}
	h := statuslisten.Handler(statuslisten.Config{
		Registry: t.status.reg, Ready: t.ready, ReadyTimeout: readyTimeout,
		Networks: t.cfg.AdminNetworks, NetworksKey: "admin_networks",
		Page: t.statusPage, ScrapeTimeout: snapshotTimeout + time.Second,
	})
	srv, err := statuslisten.Listen(ctx, t.cfg.StatusListen, h, t.log)
	if err != nil {
		return fmt.Errorf("tracker: status_listen %s: %w", t.cfg.StatusListen, err)
	}
	t.status.srv = srv
	t.log.Info("status listening", "addr", srv.Addr().String())
	return nil
}

// closeStatus stops the status listener, giving requests in flight
// shutdown_timeout.
func (t *Tracker) closeStatus() {
	if t.status.srv != nil {
		t.status.srv.Close(t.cfg.ShutdownTimeout)
	}
}

// StatusAddr is the bound status listener address, nil when none.
func (t *Tracker) StatusAddr() net.Addr {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status.srv == nil {
		return nil
	}
	return t.status.srv.Addr()
}

// errSchema is /readyz's complaint about the database's schema version.
var errSchema = errors.New("schema version is not the tracker's")

// ready is /readyz: the database answers and holds schema SchemaVersion.
func (t *Tracker) ready(ctx context.Context) error {
	if err := t.q.Store.Ping(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	v, err := t.q.Store.ServerSetting(ctx, "schema_version")
	if err != nil {
		return fmt.Errorf("database: schema_version: %w", err)
	}
	if v != strconv.Itoa(store.SchemaVersion) {
		return fmt.Errorf("%w: have %q, want %d", errSchema, v, store.SchemaVersion)
	}
	return nil
}

// statusSnapshot is what the page shows and the state gauges report, read
// at once so both say the same.
type statusSnapshot struct {
	Version   string
	Backend   store.Info
	Caps      store.Capabilities
	Uptime    time.Duration
	Now       time.Time
	Hosts     []statusHost
	Devices   []statusDevice
	Queues    []statusQueue
	Jobs      []JobStatus
	Fsck      statusFsck
	Rebalance statusRebalance
	Warnings  []string
	Namespace statusNamespace
	// Locks are the named locks this tracker holds now, oldest first;
	// LocksKnown is false when its Store does not list them.
	Locks       []store.HeldLock
	LocksKnown  bool
	Unavailable string // why some of the above could not be read
	// Alerts are the banner's lines: what an operator must look at first
	// (the database not ready, hosts or devices the monitor cannot reach).
	Alerts []string
}

type statusHost struct {
	ID     int
	Name   string
	Status store.HostStatus
	Addr   string
}

type statusDevice struct {
	ID       int
	Host     string
	Status   store.DeviceState
	Observed string // the monitor's view; "" = not seen yet or no monitor
	Weight   int
	MBTotal  int64
	MBUsed   int64
	UsedPct  int
}

type statusQueue struct {
	Name  string
	Depth int64
}

type statusFsck struct {
	Running    bool
	Host       string
	MaxChecked int64
	EndFid     int64
	Percent    int
}

type statusRebalance struct {
	Running       bool
	Host          string
	Started       bool // a state is saved
	SourceDevs    int
	CompletedDevs int
	FidsQueued    int64
	BytesQueued   int64
	Percent       int
}

// statusQueues are the queues in the order the page lists them.
var statusQueues = []store.Queue{store.QueueReplicate, store.QueueDelete, store.QueueFsck, store.QueueRebalance}

func pct(part, whole int64) int {
	if whole <= 0 {
		return 0
	}
	return int(min(100, max(0, part*100/whole)))
}

// snapshot reads the cluster's state. A read that fails leaves its part
// empty and says why in Unavailable (the page still renders); the error is
// the first failure, for the metrics. Only the page asks for the file
// counts (withFiles): a scrape every few seconds must not make the
// database read every file row once a minute when nobody looks.
func (t *Tracker) snapshot(ctx context.Context, withFiles bool) (statusSnapshot, error) {
	s := statusSnapshot{Version: Version, Caps: t.q.Store.Capabilities(), Now: time.Now()}
	t.mu.Lock()
	if !t.started.IsZero() {
		s.Uptime = time.Since(t.started).Truncate(time.Second)
	}
	t.mu.Unlock()
	var errs []error
	fail := func(what string, err error) { errs = append(errs, fmt.Errorf("%s: %w", what, err)) }
	if info, err := t.q.Store.Info(ctx); err != nil {
		fail("backend", err)
	} else {
		s.Backend = info
	}
	hosts, err := t.q.Store.Hosts(ctx)
	if err != nil {
		fail("hosts", err)
	}
	names := map[int]string{}
	for _, h := range hosts {
		names[h.ID] = h.Name
		s.Hosts = append(s.Hosts, statusHost{ID: h.ID, Name: h.Name, Status: h.Status, Addr: net.JoinHostPort(h.IP, strconv.Itoa(h.HTTPPort))})
	}
	devs, err := t.q.Store.Devices(ctx)
	if err != nil {
		fail("devices", err)
	}
	for _, d := range devs {
		obs := t.q.Observe(d.ID)
		sd := statusDevice{ID: d.ID, Host: names[d.HostID], Status: d.Status, Observed: obs.State, Weight: d.Weight,
			MBTotal: d.MBTotal, MBUsed: d.MBUsed}
		if sd.MBTotal == 0 && obs.TotalKB > 0 {
			sd.MBTotal, sd.MBUsed = obs.TotalKB/1024, obs.UsedKB/1024
		}
		sd.UsedPct = pct(sd.MBUsed, sd.MBTotal)
		s.Devices = append(s.Devices, sd)
	}
	sort.Slice(s.Devices, func(i, j int) bool { return s.Devices[i].ID < s.Devices[j].ID })
	for _, q := range statusQueues {
		n, err := t.q.Store.QueueLength(ctx, q)
		if err != nil {
			fail("queue "+q.String(), err)
			continue
		}
		s.Queues = append(s.Queues, statusQueue{Name: q.String(), Depth: n})
	}
	if t.q.Jobs != nil {
		s.Jobs = jobStatus(t.q.Jobs)
	}
	if all, err := t.q.Store.ServerSettings(ctx); err != nil {
		fail("settings", err)
	} else {
		s.Fsck, s.Rebalance = fsckStatus(all), rebalanceStatus(all)
	}
	s.Warnings = t.watch.recent.newestFirst()
	if domains, err := t.q.Store.Domains(ctx); err != nil {
		fail("domains", err)
	} else if classes, err := t.q.Store.Classes(ctx); err != nil {
		fail("classes", err)
	} else {
		var counts []store.FileCount
		var at time.Time
		if withFiles {
			if counts, at, err = t.files.get(ctx, t.q.Store, s.Now); err != nil {
				fail("file counts", err)
			}
		}
		s.Namespace = summarize(domains, classes, counts, t.cfg.DefaultMinDevCount)
		s.Namespace.Counted = at
	}
	s.Locks, s.LocksKnown = t.heldLocks()
	if err := t.ready(ctx); err != nil {
		s.Alerts = append(s.Alerts, "Database not ready: "+err.Error())
	}
	s.Alerts = append(s.Alerts, unreachable(hosts, devs, t.q.Observe)...)
	err = errors.Join(errs...)
	if err != nil {
		s.Unavailable = err.Error()
	}
	return s, err
}

// unreachable is the banner's lines for what the monitor cannot reach: a
// host whose every device it watches is unreachable, as one line, and then
// each other unreachable device. Devices an operator marked down or dead,
// and hosts marked down or dead, are expected to be away and are left out.
func unreachable(hosts []store.Host, devs []store.Device, observe func(int) cluster.Observation) []string {
	type tally struct{ watched, away []int }
	byHost := map[int]*tally{}
	for _, d := range devs {
		if d.Status == store.DeviceDown || d.Status == store.DeviceDead {
			continue
		}
		o := observe(d.ID)
		if !o.Monitored || o.State == "" {
			continue
		}
		tl := byHost[d.HostID]
		if tl == nil {
			tl = &tally{}
			byHost[d.HostID] = tl
		}
		tl.watched = append(tl.watched, d.ID)
		if o.State == cluster.StateUnreachable {
			tl.away = append(tl.away, d.ID)
		}
	}
	devList := func(ids []int) string {
		sort.Ints(ids)
		names := make([]string, len(ids))
		for i, id := range ids {
			names[i] = fmt.Sprintf("dev%d", id)
		}
		return strings.Join(names, ", ")
	}
	var loose []int
	var out []string
	for _, h := range hosts {
		tl := byHost[h.ID]
		if tl == nil || len(tl.away) == 0 || h.Status != store.HostAlive {
			continue
		}
		if len(tl.away) == len(tl.watched) {
			out = append(out, fmt.Sprintf("Host %s (%s:%d) unreachable: %s", h.Name, h.IP, h.HTTPPort, devList(tl.away)))
			continue
		}
		loose = append(loose, tl.away...)
	}
	if len(loose) > 0 {
		out = append(out, fmt.Sprintf("Devices unreachable: %s", devList(loose)))
	}
	return out
}

// fsckStatus reads fsck's progress from the server settings fsck_status
// reports.
func fsckStatus(all map[string]string) statusFsck {
	f := statusFsck{
		Running:    query.PerlTrue(all["fsck_host"]),
		Host:       all["fsck_host"],
		MaxChecked: query.PerlNum(all["fsck_highest_fid_checked"]),
		EndFid:     query.PerlNum(all["fsck_fid_at_end"]),
	}
	f.Percent = pct(f.MaxChecked, f.EndFid)
	return f
}

// rebalanceStatus reads the rebalance worker's saved state (rebal_state).
func rebalanceStatus(all map[string]string) statusRebalance {
	r := statusRebalance{Running: query.PerlTrue(all["rebal_host"]), Host: all["rebal_host"], Started: query.PerlTrue(all["rebal_state"])}
	if r.Started {
		st := cluster.ParseRebalState(all["rebal_state"])
		r.SourceDevs, r.CompletedDevs = len(st.SourceDevs), len(st.CompletedDevs)
		r.FidsQueued, r.BytesQueued = st.FidsQueued, st.BytesQueued
		r.Percent = pct(int64(r.CompletedDevs), int64(r.SourceDevs))
	}
	return r
}

// stateCollector reports the snapshot as gauges when scraped.
type stateCollector struct{ t *Tracker }

var (
	descDeviceMBTotal = prometheus.NewDesc("gomogile_device_mb_total", "Device size in MiB as last reported.", []string{"devid", "host"}, nil)
	descDeviceMBUsed  = prometheus.NewDesc("gomogile_device_mb_used", "Device usage in MiB as last reported.", []string{"devid", "host"}, nil)
	descDeviceWeight  = prometheus.NewDesc("gomogile_device_weight", "Device weight.", []string{"devid", "host"}, nil)
	descDeviceState   = prometheus.NewDesc("gomogile_device_state", "1 for each device's database state and the monitor's observed state (\"\" before it looked).", []string{"devid", "host", "state", "observed"}, nil)
	descQueueDepth    = prometheus.NewDesc("gomogile_queue_depth", "Rows in each queue, parked ones included.", []string{"queue"}, nil)
	descJobWorkers    = prometheus.NewDesc("gomogile_job_workers", "Workers running, by job.", []string{"job"}, nil)
	descJobDesired    = prometheus.NewDesc("gomogile_job_workers_desired", "Workers wanted, by job.", []string{"job"}, nil)
	descFsckRunning   = prometheus.NewDesc("gomogile_fsck_running", "1 while an fsck runs on some tracker.", nil, nil)
	descFsckChecked   = prometheus.NewDesc("gomogile_fsck_max_fid_checked", "Highest fid fsck has checked.", nil, nil)
	descFsckEnd       = prometheus.NewDesc("gomogile_fsck_end_fid", "Fid at which the running fsck ends.", nil, nil)
	descRebalRunning  = prometheus.NewDesc("gomogile_rebalance_running", "1 while a rebalance runs on some tracker.", nil, nil)
	descRebalSources  = prometheus.NewDesc("gomogile_rebalance_source_devices", "Source devices of the saved rebalance.", nil, nil)
	descRebalDone     = prometheus.NewDesc("gomogile_rebalance_completed_devices", "Source devices the rebalance has finished.", nil, nil)
	descRebalFids     = prometheus.NewDesc("gomogile_rebalance_fids_queued", "Fids the rebalance has queued.", nil, nil)
	descRebalBytes    = prometheus.NewDesc("gomogile_rebalance_bytes_queued", "Bytes the rebalance has queued.", nil, nil)
	descSnapshotError = prometheus.NewDesc("gomogile_status_read_errors", "Reads of the cluster state that failed during this scrape.", nil, nil)
)

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDeviceMBTotal, descDeviceMBUsed, descDeviceWeight, descDeviceState, descQueueDepth,
		descJobWorkers, descJobDesired, descFsckRunning, descFsckChecked, descFsckEnd, descRebalRunning, descRebalSources,
		descRebalDone, descRebalFids, descRebalBytes, descSnapshotError} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	s, err := c.t.snapshot(ctx, false)
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	nerr := 0
	if err != nil {
		nerr = len(unwrapJoined(err))
	}
	g(descSnapshotError, float64(nerr))
	for _, d := range s.Devices {
		id := strconv.Itoa(d.ID)
		g(descDeviceMBTotal, float64(d.MBTotal), id, d.Host)
		g(descDeviceMBUsed, float64(d.MBUsed), id, d.Host)
		g(descDeviceWeight, float64(d.Weight), id, d.Host)
		g(descDeviceState, 1, id, d.Host, string(d.Status), d.Observed)
	}
	for _, q := range s.Queues {
		g(descQueueDepth, float64(q.Depth), q.Name)
	}
	for _, j := range s.Jobs {
		g(descJobWorkers, float64(j.Count), j.Job)
		g(descJobDesired, float64(j.Desired), j.Job)
	}
	if s.Unavailable != "" && s.Fsck == (statusFsck{}) && s.Rebalance == (statusRebalance{}) {
		return // settings unread: no progress to report
	}
	g(descFsckRunning, b(s.Fsck.Running))
	g(descFsckChecked, float64(s.Fsck.MaxChecked))
	g(descFsckEnd, float64(s.Fsck.EndFid))
	g(descRebalRunning, b(s.Rebalance.Running))
	g(descRebalSources, float64(s.Rebalance.SourceDevs))
	g(descRebalDone, float64(s.Rebalance.CompletedDevs))
	g(descRebalFids, float64(s.Rebalance.FidsQueued))
	g(descRebalBytes, float64(s.Rebalance.BytesQueued))
}

func unwrapJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

//go:embed status.html
var statusHTML string

var statusTmpl = template.Must(template.New("status").Funcs(template.FuncMap{
	"heldFor": func(now, since time.Time) time.Duration { return max(0, now.Sub(since)).Round(time.Millisecond) },
	"stateClass": func(s string) string {
		switch s {
		case "alive", cluster.StateWriteable:
			return "ok"
		case "readonly", "drain", cluster.StateReadable, "":
			return "warn"
		}
		return "bad"
	},
}).Parse(statusHTML))

func (t *Tracker) statusPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), snapshotTimeout)
	defer cancel()
	s, _ := t.snapshot(ctx, true) // a partial snapshot still renders, saying what is missing
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := statusTmpl.Execute(w, s); err != nil {
		t.log.Warn("status page", "err", err)
	}
}
