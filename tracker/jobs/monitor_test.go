package jobs_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/jobs"
)

func TestMonitor_UsageAndObservedState(t *testing.T) {
	c := newCluster(t)
	c.addNode(1, 2)
	n2 := c.addNode(3)
	if err := c.st.SetDeviceState(t.Context(), 2, store.DeviceReadOnly); err != nil {
		t.Fatal(err)
	}
	m := start(t, c.st, fastOptions(t))

	observed := func(dev int, want string) func() bool {
		return func() bool { got, ok := m.Observed(dev); return ok && got == want }
	}
	waitFor(t, 10*time.Second, "dev1 writeable", observed(1, "writeable"))
	waitFor(t, 10*time.Second, "dev3 writeable", observed(3, "writeable"))
	// readonly devices are not test-written: readable.
	waitFor(t, 10*time.Second, "dev2 readable", observed(2, "readable"))

	devs, err := c.st.Devices(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.MBTotal <= 0 || d.MBUsed < 0 || d.MBUsed > d.MBTotal || d.MBAsOf.IsZero() {
			t.Errorf("dev%d usage total=%d used=%d asof=%v; want recorded", d.ID, d.MBTotal, d.MBUsed, d.MBAsOf)
		}
	}
	if _, ok := m.Observed(99); ok {
		t.Errorf("Observed(99) ok; want false for an unknown device")
	}

	n2.srv.Close()
	waitFor(t, 10*time.Second, "dev3 unreachable", observed(3, "unreachable"))
	if got, _ := m.Observed(1); got != "writeable" {
		t.Errorf("dev1 = %q after another node stopped; want writeable", got)
	}
}

func TestManager_SetWantAndStats(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	m := start(t, c.st, fastOptions(t))
	running := func(name string) int {
		for _, s := range m.Stats() {
			if s.Name == name {
				return s.Running
			}
		}
		t.Fatalf("no stats for %s", name)
		return 0
	}
	if err := m.SetWant(jobs.JobReplicate, 4); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "4 replicate workers", func() bool { return running(jobs.JobReplicate) == 4 })
	if err := m.SetWant(jobs.JobDelete, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "no delete worker", func() bool { return running(jobs.JobDelete) == 0 })
	if err := m.SetWant(jobs.JobMonitor, 2); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("SetWant(monitor, 2) = %v; want ErrInvalid (at most one)", err)
	}
	// Every class takes a count, 0 included, as the original's !want.
	if err := m.SetWant(jobs.JobReaper, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "no reaper", func() bool { return running(jobs.JobReaper) == 0 })
	if err := m.SetWant(jobs.JobReaper, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "a reaper again", func() bool { return running(jobs.JobReaper) == 1 })
	if err := m.SetWant("nosuch", 1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("SetWant(nosuch) = %v; want ErrInvalid", err)
	}
	if err := m.SetWant(jobs.JobFsck, -1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("SetWant(fsck, -1) = %v; want ErrInvalid", err)
	}
	var names []string
	for _, s := range m.Stats() {
		names = append(names, s.Name)
	}
	want := []string{"delete", "fsck", "job_master", "monitor", "reaper", "replicate"}
	if len(names) != len(want) {
		t.Fatalf("stats for %v; want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("stats[%d] = %s; want %s", i, names[i], want[i])
		}
	}
}

// A host that accepts connections but never answers makes every device on
// it unreachable, without holding up the other hosts.
func TestMonitor_HungHost(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	ln, err := net.Listen("tcp", "127.0.0.9:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	h, err := c.st.CreateHost(t.Context(), store.Host{Name: "hung", Status: store.HostAlive, IP: "127.0.0.9", HTTPPort: portOf(t, ln.Addr().String())})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{5, 6} {
		if _, err := c.st.CreateDevice(t.Context(), store.Device{ID: id, HostID: h.ID, Status: store.DeviceAlive}); err != nil {
			t.Fatal(err)
		}
	}
	m := start(t, c.st, fastOptions(t))
	waitFor(t, 2*time.Second, "dev1 writeable while the other host hangs", func() bool {
		got, ok := m.Observed(1)
		return ok && got == "writeable"
	})
	for _, id := range []int{5, 6} {
		waitFor(t, 10*time.Second, "hung host's devices unreachable", func() bool {
			got, ok := m.Observed(id)
			return ok && got == "unreachable"
		})
	}
}

// MonitorRound (clear_cache, do_monitor_round) returns only after a full
// monitor pass that started after the call: what the monitor sees is fresh
// at once, with no waiting for its next tick.
func TestMonitorRound_WaitsForAFreshPass(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	n2 := c.addNode(2)
	o := fastOptions(t)
	o.MonitorInterval = time.Hour // only MonitorRound can bring a second pass
	m := start(t, c.st, o)
	waitFor(t, 10*time.Second, "first pass", func() bool { s, ok := m.Observed(2); return ok && s == "writeable" })
	n2.srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := m.MonitorRound(ctx); err != nil {
		t.Fatal(err)
	}
	if s, _ := m.Observed(2); s != "unreachable" {
		t.Errorf("dev2 = %q right after MonitorRound; want unreachable", s)
	}
	// Bounded: with no monitor running it ends with the caller's deadline.
	if err := m.SetWant(jobs.JobMonitor, 0); err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel2()
	if err := m.MonitorRound(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("MonitorRound without a monitor = %v; want the deadline", err)
	}
}

// A device that fails its usage check is logged once when it fails, then
// as a reminder every so often with the number of checks not logged, and
// once when it answers again; not on every pass (every 2.5 s per down
// device, forever, before).
func TestMonitor_DownDeviceLoggedOncePerChange(t *testing.T) {
	c := newCluster(t)
	n := c.addNode(1)
	// dev2 is registered on the node, which does not have it: its usage
	// request gets 404, the original's "not listening" line.
	if _, err := c.st.CreateDevice(t.Context(), store.Device{ID: 2, HostID: n.host.ID, Status: store.DeviceAlive, Weight: 100}); err != nil {
		t.Fatal(err)
	}
	var buf syncBuf
	o := fastOptions(t)
	o.MonitorInterval = 20 * time.Millisecond
	o.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	const every = 600 * time.Millisecond
	m := jobs.New(c.st, o)
	jobs.SetDownReminder(m, every)
	if err := m.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	down := func() (first, reminders int) {
		for _, l := range strings.Split(buf.String(), "\n") {
			if !strings.Contains(l, "not listening on "+n.host.IP) || !strings.Contains(l, "/dev2/usage") {
				continue
			}
			if strings.Contains(l, "repeated=") {
				reminders++
			} else {
				first++
			}
		}
		return first, reminders
	}
	var began time.Time
	waitFor(t, 10*time.Second, "the first not-listening line", func() bool {
		f, _ := down()
		if f > 0 {
			began = time.Now()
		}
		return f > 0
	})
	time.Sleep(2 * every)
	first, reminders := down()
	elapsed := time.Since(began)
	if first != 1 {
		t.Errorf("not-listening lines without a repeat count: %d; want 1\n%s", first, buf.String())
	}
	if max := int(elapsed/every) + 1; reminders > max {
		t.Errorf("%d reminders in %v; want at most %d (one per %v)\n%s", reminders, elapsed, max, every, buf.String())
	}
	if reminders == 0 || strings.Contains(buf.String(), "repeated=0 ") {
		t.Errorf("%d reminders in %v; want at least one, with a count of repeats\n%s", reminders, elapsed, buf.String())
	}

	// Back: said once.
	if err := os.Mkdir(filepath.Join(n.docroot, "dev2"), 0o755); err != nil {
		t.Fatal(err)
	}
	back := func() int { return strings.Count(buf.String(), "dev2 on "+n.host.IP+" answers again") }
	waitFor(t, 10*time.Second, "dev2 back", func() bool { return back() > 0 })
	before := buf.String()
	time.Sleep(every + every/2)
	if got := back(); got != 1 {
		t.Errorf("dev2 back said %d times; want 1\n%s", got, buf.String())
	}
	if after := buf.String()[len(before):]; strings.Contains(after, "not listening") {
		t.Errorf("not-listening lines after dev2 came back:\n%s", after)
	}
}
