package jobs

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/gomogile/gomogile/store"
)

// FidPath is the path of fid's blob on device devid, laid out as the
// original does (MogileFS::DevFID uri_path):
//
//	/dev<devid>/<b>/<mmm>/<ttt>/<fid zero-padded to 10 digits>.fid
//
// b, mmm and ttt are the first 1, 3 and 3 digits of the padded fid. Every
// worker builds blob paths through this one function.
func FidPath(devid int, fid int64) string {
	nfid := fmt.Sprintf("%010d", fid)
	return "/dev" + strconv.Itoa(devid) + "/" + nfid[0:1] + "/" + nfid[1:4] + "/" + nfid[4:7] + "/" + nfid + ".fid"
}

// FidDirs are the collections FidPath needs, outermost first: the MKCOLs of
// Device::vivify_directories, which WebDAV servers need before a PUT.
func FidDirs(devid int, fid int64) []string {
	nfid := fmt.Sprintf("%010d", fid)
	d := "/dev" + strconv.Itoa(devid) + "/" + nfid[0:1]
	return []string{d, d + "/" + nfid[1:4], d + "/" + nfid[1:4] + "/" + nfid[4:7]}
}

// minFreeMB is the original's default min_free_space: a device with less
// room left gets no new copies.
const minFreeMB = 100

// device is a device row joined with its host and this tracker's
// observations of both; the predicates mirror MogileFS::Device and
// MogileFS::DeviceState so that placement decisions match the original's.
type device struct {
	store.Device
	host     store.Host
	hostOK   bool   // host observed reachable
	observed string // writeable, readable, unreachable or "" (never seen)
	// usage the monitor saw, used when the row has none yet
	obsTotalKB, obsUsedKB int64
}

func (d *device) canRead() bool { // DeviceState read
	switch d.Status {
	case store.DeviceAlive, store.DeviceReadOnly, store.DeviceDrain:
		return true
	}
	return false
}

func (d *device) canWrite() bool { // DeviceState write (deletes)
	return d.Status == store.DeviceAlive || d.Status == store.DeviceDrain
}

func (d *device) dead() bool              { return d.Status == store.DeviceDead }
func (d *device) shouldHaveFiles() bool   { return !d.dead() }
func (d *device) newFilesState() bool     { return d.Status == store.DeviceAlive }
func (d *device) hostAlive() bool         { return d.host.Status == store.HostAlive }
func (d *device) hostShouldRead() bool    { return d.hostAlive() || d.host.Status == store.HostReadOnly }
func (d *device) canReadFrom() bool       { return d.hostShouldRead() && d.canRead() }
func (d *device) canDeleteFrom() bool     { return d.hostAlive() && d.canWrite() }
func (d *device) observedWriteable() bool { return d.hostOK && d.observed == "writeable" }
func (d *device) observedReadable() bool  { return d.hostOK && d.observed == "readable" }

// unobserved: the monitor will check this device but has not yet.
func (d *device) unobserved() bool { return d.observed == "" && d.canReadFrom() }

// shouldReadFrom is the one readability test workers use (Device.pm).
func (d *device) shouldReadFrom() bool {
	return d.canReadFrom() && (d.observedReadable() || d.observedWriteable())
}

// shouldGetNewFiles: alive, observed writeable on an alive host, with room.
func (d *device) shouldGetNewFiles() bool {
	if !d.newFilesState() || !d.observedWriteable() || !d.hostAlive() {
		return false
	}
	if total, used, ok := d.usageMB(); ok && total-used < minFreeMB {
		return false
	}
	return true
}

// fsckSearchOn: devices fsck searches when a fid is found nowhere.
func (d *device) fsckSearchOn() bool { return d.canRead() || d.shouldHaveFiles() }

func (d *device) usageMB() (total, used int64, ok bool) {
	if d.MBTotal > 0 {
		return d.MBTotal, d.MBUsed, true
	}
	if d.obsTotalKB > 0 {
		return d.obsTotalKB / 1024, d.obsUsedKB / 1024, true
	}
	return 0, 0, false
}

// percentFree is 0 when usage is unknown, as in the original (so such a
// device is never picked by the weighted choice).
func (d *device) percentFree() float64 {
	total, used, ok := d.usageMB()
	if !ok || total == 0 {
		return 0
	}
	return 1 - float64(used)/float64(total)
}

// baseURL is the storage node of the device; get selects the GET port.
func (d *device) baseURL(get bool) string {
	port := d.host.HTTPPort
	if get && d.host.HTTPGetPort != 0 {
		port = d.host.HTTPGetPort
	}
	if port == 0 {
		port = 7500
	}
	return "http://" + net.JoinHostPort(d.host.IP, strconv.Itoa(port))
}

func (d *device) fidURL(fid int64, get bool) string { return d.baseURL(get) + FidPath(d.ID, fid) }

// world is one consistent read of hosts, devices and classes.
type world struct {
	devs    map[int]*device
	classes map[[2]int]store.Class
}

// rowsTTL is how long the namespace rows are reused between loads: every
// item needs them, and a second-old view of hosts and devices is what the
// original's device cache gives its workers too.
const rowsTTL = time.Second

// nsRows is one read of the namespace tables.
type nsRows struct {
	at      time.Time
	hosts   []store.Host
	devs    []store.Device
	classes []store.Class
}

// rows returns namespace rows at most rowsTTL old, or fresh ones.
func (m *Manager) rows(ctx context.Context, fresh bool) (*nsRows, error) {
	m.rowsMu.Lock()
	defer m.rowsMu.Unlock()
	if r := m.rowsCache; !fresh && r != nil && time.Since(r.at) < rowsTTL {
		return r, nil
	}
	hosts, err := m.st.Hosts(ctx)
	if err != nil {
		return nil, fmt.Errorf("jobs: read hosts: %w", err)
	}
	devs, err := m.st.Devices(ctx)
	if err != nil {
		return nil, fmt.Errorf("jobs: read devices: %w", err)
	}
	classes, err := m.st.Classes(ctx)
	if err != nil {
		return nil, fmt.Errorf("jobs: read classes: %w", err)
	}
	m.rowsCache = &nsRows{at: time.Now(), hosts: hosts, devs: devs, classes: classes}
	return m.rowsCache, nil
}

// loadWorld joins the namespace with this tracker's current observations.
// Rows may be up to a second old; observations are always current. Devices
// in need (those a fid is on) must be in the result if they exist: a
// device missing from a cached read is re-read, because workers take a
// missing device for a deleted one.
func (m *Manager) loadWorld(ctx context.Context, need ...int) (*world, error) {
	r, err := m.rows(ctx, false)
	if err != nil {
		return nil, err
	}
	if missingAny(r.devs, need) {
		if r, err = m.rows(ctx, true); err != nil {
			return nil, err
		}
	}
	return m.join(r), nil
}

// freshWorld reads the rows anew.
func (m *Manager) freshWorld(ctx context.Context) (*world, error) {
	r, err := m.rows(ctx, true)
	if err != nil {
		return nil, err
	}
	return m.join(r), nil
}

func missingAny(devs []store.Device, need []int) bool {
	have := make(map[int]bool, len(devs))
	for _, d := range devs {
		have[d.ID] = true
	}
	for _, id := range need {
		if !have[id] {
			return true
		}
	}
	return false
}

func (m *Manager) join(r *nsRows) *world {
	hm := make(map[int]store.Host, len(r.hosts))
	for _, h := range r.hosts {
		hm[h.ID] = h
	}
	w := &world{devs: make(map[int]*device, len(r.devs)), classes: make(map[[2]int]store.Class, len(r.classes))}
	for _, d := range r.devs {
		h, ok := hm[d.HostID]
		if !ok {
			continue // a device without a host cannot be reached
		}
		dv := &device{Device: d, host: h}
		m.obs.annotate(dv)
		w.devs[d.ID] = dv
	}
	for _, c := range r.classes {
		w.classes[[2]int{c.DomainID, c.ID}] = c
	}
	return w
}

// class returns the file's class; a missing row behaves like the original's
// implicit default class (mindevcount 2).
func (w *world) class(f store.File) store.Class {
	if c, ok := w.classes[[2]int{f.DomainID, f.ClassID}]; ok {
		return c
	}
	return store.Class{DomainID: f.DomainID, ID: f.ClassID, Name: "default", MinDevCount: 2}
}
