package cluster

import (
	"net"
	"strconv"

	"github.com/gomogile/gomogile/store"
)

// Settings are the configuration values placement decisions depend on. The
// tracker builds one from its Config and hands the same value to its
// workers, so create_open, replication and rebalance agree.
type Settings struct {
	// MinFreeMB is min_free_space: a device with less room left (when its
	// usage is known) gets no new files, from clients or from workers.
	MinFreeMB int64
	// DefaultMinDevCount is default_mindevcount: the replica count of a
	// class without its own (the implicit class 0, "default").
	DefaultMinDevCount int
}

// DefaultSettings are the original's defaults (min_free_space 100,
// default_mindevcount 2).
func DefaultSettings() Settings { return Settings{MinFreeMB: 100, DefaultMinDevCount: 2} }

// Monitor states of a device, as the original's monitor reports them.
const (
	StateWriteable   = "writeable"
	StateReadable    = "readable"
	StateUnreachable = "unreachable"
)

// Observation is what this tracker's monitor last saw of a device. The
// original keeps it in process memory and never in the database, so it is
// passed in beside the rows.
type Observation struct {
	// Monitored is false when no monitor runs in this process; the
	// database state alone decides then.
	Monitored bool
	// State is StateWriteable, StateReadable or StateUnreachable (also
	// when the device's host was unreachable), "" before the monitor has
	// looked at the device.
	State string
	// TotalKB and UsedKB are the usage the monitor read, used while the
	// device row has none yet; 0 when unknown.
	TotalKB, UsedKB int64
	// Utilization is the I/O utilisation the node streams, verbatim;
	// UtilizationOK is false while none is known.
	Utilization   string
	UtilizationOK bool
	// RejectBadMD5 is whether the node refuses a body that does not match
	// its Content-MD5; RejectBadMD5OK is false until a probe was answered.
	RejectBadMD5, RejectBadMD5OK bool
}

// Device is a device row joined with its host row and the monitor's
// observation of it; the predicates mirror MogileFS::Device and
// MogileFS::DeviceState so that decisions match the original's.
type Device struct {
	store.Device
	Host store.Host
	Obs  Observation
}

// CanRead is DeviceState's read flag: alive, readonly or drain.
func (d Device) CanRead() bool {
	switch d.Status {
	case store.DeviceAlive, store.DeviceReadOnly, store.DeviceDrain:
		return true
	}
	return false
}

// CanWrite is DeviceState's write flag (deletes may happen): alive or drain.
func (d Device) CanWrite() bool {
	return d.Status == store.DeviceAlive || d.Status == store.DeviceDrain
}

// Dead is state dead: its files are gone for good.
func (d Device) Dead() bool { return d.Status == store.DeviceDead }

// ShouldHaveFiles: every device that is not dead counts for replication.
func (d Device) ShouldHaveFiles() bool { return !d.Dead() }

// NewFilesState is DeviceState's new_files flag: alive only.
func (d Device) NewFilesState() bool { return d.Status == store.DeviceAlive }

// HostAlive is Host::alive.
func (d Device) HostAlive() bool { return d.Host.Status == store.HostAlive }

// HostShouldRead is Host::should_read_from: alive or readonly.
func (d Device) HostShouldRead() bool { return d.HostAlive() || d.Host.Status == store.HostReadOnly }

// CanReadFrom is Device::can_read_from: the states allow reading.
func (d Device) CanReadFrom() bool { return d.HostShouldRead() && d.CanRead() }

// CanDeleteFrom is Device::can_delete_from: host alive, device writable.
func (d Device) CanDeleteFrom() bool { return d.HostAlive() && d.CanWrite() }

// ObservedWriteable: the monitor last saw the device writeable (or no
// monitor runs).
func (d Device) ObservedWriteable() bool { return !d.Obs.Monitored || d.Obs.State == StateWriteable }

// ObservedReadable: the monitor last saw the device readable only (or no
// monitor runs).
func (d Device) ObservedReadable() bool { return !d.Obs.Monitored || d.Obs.State == StateReadable }

// Unobserved: the monitor will look at this device but has not yet; as in
// the original such a device is neither read from nor written to meanwhile.
func (d Device) Unobserved() bool { return d.Obs.Monitored && d.Obs.State == "" && d.CanReadFrom() }

// ShouldReadFrom is Device::should_read_from: the states allow reading and
// the monitor can reach it.
func (d Device) ShouldReadFrom() bool {
	return d.CanReadFrom() && (d.ObservedReadable() || d.ObservedWriteable())
}

// ShouldGetNewFiles is Device::should_get_new_files: device and host
// alive, observed writeable, and at least s.MinFreeMB free when its usage
// is known.
func (d Device) ShouldGetNewFiles(s Settings) bool {
	if !d.NewFilesState() || !d.HostAlive() || !d.ObservedWriteable() {
		return false
	}
	if free, ok := d.FreeMB(); ok && free < s.MinFreeMB {
		return false
	}
	return true
}

// FsckSearchOn: the devices fsck searches when a fid is found nowhere.
func (d Device) FsckSearchOn() bool { return d.CanRead() || d.ShouldHaveFiles() }

// UsageMB is the device's size and use in MB: the row's figures, else the
// monitor's; ok is false when neither knows.
func (d Device) UsageMB() (total, used int64, ok bool) {
	if d.MBTotal > 0 {
		return d.MBTotal, d.MBUsed, true
	}
	if d.Obs.TotalKB > 0 {
		return d.Obs.TotalKB / 1024, d.Obs.UsedKB / 1024, true
	}
	return 0, 0, false
}

// FreeMB is total minus used when the usage is known.
func (d Device) FreeMB() (int64, bool) {
	total, used, ok := d.UsageMB()
	return total - used, ok
}

// PercentFree is the free fraction (0..1); 0 when usage is unknown, as in
// the original (so such a device is never picked by a weighted choice).
func (d Device) PercentFree() float64 {
	total, used, ok := d.UsageMB()
	if !ok || total == 0 {
		return 0
	}
	return 1 - float64(used)/float64(total)
}

// DefaultHTTPPort is a storage node's port when its host row names none.
const DefaultHTTPPort = 7500

// HostURL is the base URL of host h reached at ip: its http_port, or with
// get its http_get_port when it has one (Host::http_get_port falls back to
// http_port).
func HostURL(h store.Host, ip string, get bool) string {
	port := h.HTTPPort
	if get && h.HTTPGetPort != 0 {
		port = h.HTTPGetPort
	}
	if port == 0 {
		port = DefaultHTTPPort
	}
	return "http://" + net.JoinHostPort(ip, strconv.Itoa(port))
}

// BaseURL is the device's storage node at its host's IP.
func (d Device) BaseURL(get bool) string { return HostURL(d.Host, d.Host.IP, get) }

// FidURL is the URL of fid's blob on the device.
func (d Device) FidURL(fid int64, get bool) string { return d.BaseURL(get) + FidPath(d.ID, fid) }
