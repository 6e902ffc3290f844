package jobs

import (
	"context"
	"fmt"
	"net"
	"strconv"

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

// fidDirs are the collections FidPath needs, outermost first: the MKCOLs of
// Device::vivify_directories, which WebDAV servers need before a PUT.
func fidDirs(devid int, fid int64) []string {
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

// loadWorld reads the namespace and joins this tracker's observations.
func (m *Manager) loadWorld(ctx context.Context) (*world, error) {
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
	hm := make(map[int]store.Host, len(hosts))
	for _, h := range hosts {
		hm[h.ID] = h
	}
	w := &world{devs: make(map[int]*device, len(devs)), classes: make(map[[2]int]store.Class, len(classes))}
	for _, d := range devs {
		h, ok := hm[d.HostID]
		if !ok {
			continue // a device without a host cannot be reached
		}
		dv := &device{Device: d, host: h}
		m.obs.annotate(dv)
		w.devs[d.ID] = dv
	}
	for _, c := range classes {
		w.classes[[2]int{c.DomainID, c.ID}] = c
	}
	return w, nil
}

// class returns the file's class; a missing row behaves like the original's
// implicit default class (mindevcount 2).
func (w *world) class(f store.File) store.Class {
	if c, ok := w.classes[[2]int{f.DomainID, f.ClassID}]; ok {
		return c
	}
	return store.Class{DomainID: f.DomainID, ID: f.ClassID, Name: "default", MinDevCount: 2}
}
