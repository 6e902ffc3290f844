package client

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Domain is a namespace of keys with its classes (cmd_get_domains).
type Domain struct {
	Name    string
	Classes []Class
}

// Class is a replication class of a domain.
type Class struct {
	Name string
	// MinDevCount is the number of copies to keep; must be at least 1.
	MinDevCount int
	// ReplPolicy is e.g. "MultipleHosts()" (the tracker's default) or
	// "MultipleDevices(2)"; "" leaves it unchanged on update.
	ReplPolicy string
	// HashType is "MD5", "SHA-1" or "NONE"; "" leaves it unchanged.
	HashType string
}

// Noop checks that a tracker answers (cmd_noop).
func (c *Client) Noop(ctx context.Context) error {
	if _, err := c.do(ctx, "noop", nil); err != nil {
		return fmt.Errorf("mogilefs noop: %w", err)
	}
	return nil
}

// CreateDomain creates a domain (cmd_create_domain: domain). An existing
// name fails with ErrDomainExists.
func (c *Client) CreateDomain(ctx context.Context, domain string) error {
	if _, err := c.do(ctx, "create_domain", url.Values{"domain": {domain}}); err != nil {
		return fmt.Errorf("mogilefs create_domain %q: %w", domain, err)
	}
	return nil
}

// DeleteDomain deletes an empty domain (cmd_delete_domain: domain). It
// fails with ErrDomainNotFound, ErrDomainHasFiles or ErrDomainHasClasses.
func (c *Client) DeleteDomain(ctx context.Context, domain string) error {
	if _, err := c.do(ctx, "delete_domain", url.Values{"domain": {domain}}); err != nil {
		return fmt.Errorf("mogilefs delete_domain %q: %w", domain, err)
	}
	return nil
}

// GetDomains lists every domain with its classes (cmd_get_domains:
// domains, domainN, domainNclasses, domainNclassMname, ...mindevcount,
// ...replpolicy, ...hashtype). Domains and classes come back sorted by
// name: the tracker's order is its hash order.
func (c *Client) GetDomains(ctx context.Context) ([]Domain, error) {
	reply, err := c.do(ctx, "get_domains", nil)
	if err != nil {
		return nil, fmt.Errorf("mogilefs get_domains: %w", err)
	}
	doms, err := parseDomains(reply)
	if err != nil {
		return nil, fmt.Errorf("mogilefs get_domains: %w", err)
	}
	return doms, nil
}

func parseDomains(reply url.Values) ([]Domain, error) {
	n, err := count(reply, "domains")
	if err != nil {
		return nil, err
	}
	var p numParser
	out := make([]Domain, 0, n)
	for i := 1; i <= n; i++ {
		pre := "domain" + strconv.Itoa(i)
		d := Domain{Name: reply.Get(pre)}
		m, err := count(reply, pre+"classes")
		if err != nil {
			return nil, err
		}
		for j := 1; j <= m; j++ {
			cp := pre + "class" + strconv.Itoa(j)
			d.Classes = append(d.Classes, Class{
				Name:        reply.Get(cp + "name"),
				MinDevCount: p.int(reply, cp+"mindevcount"),
				ReplPolicy:  reply.Get(cp + "replpolicy"),
				HashType:    reply.Get(cp + "hashtype"),
			})
		}
		sort.Slice(d.Classes, func(a, b int) bool { return d.Classes[a].Name < d.Classes[b].Name })
		out = append(out, d)
	}
	if p.err != nil {
		return nil, p.err
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

func classArgs(domain string, cl Class) url.Values {
	args := url.Values{"domain": {domain}, "class": {cl.Name}, "mindevcount": {strconv.Itoa(cl.MinDevCount)}}
	if cl.ReplPolicy != "" {
		args.Set("replpolicy", cl.ReplPolicy)
	}
	if cl.HashType != "" {
		args.Set("hashtype", cl.HashType)
	}
	return args
}

// CreateClass creates a class in domain (cmd_create_class: domain, class,
// mindevcount, replpolicy, hashtype). A MinDevCount of 0 is sent as 1,
// the smallest the tracker accepts. Fails with ErrClassExists or
// ErrDomainNotFound.
func (c *Client) CreateClass(ctx context.Context, domain string, cl Class) error {
	if cl.MinDevCount <= 0 {
		cl.MinDevCount = 1
	}
	if _, err := c.do(ctx, "create_class", classArgs(domain, cl)); err != nil {
		return fmt.Errorf("mogilefs create_class %q/%q: %w", domain, cl.Name, err)
	}
	return nil
}

// UpdateClass changes a class (cmd_update_class, same arguments as
// create_class). The tracker requires mindevcount on every update, so a
// MinDevCount of 0 keeps the current value, read with get_domains first,
// as mogadm does. Fails with ErrClassNotFound.
func (c *Client) UpdateClass(ctx context.Context, domain string, cl Class) error {
	if cl.MinDevCount <= 0 {
		doms, err := c.GetDomains(ctx)
		if err != nil {
			return fmt.Errorf("mogilefs update_class %q/%q: %w", domain, cl.Name, err)
		}
		cur, ok := findClass(doms, domain, cl.Name)
		if !ok {
			cur.MinDevCount = 1
			if cl.Name != "default" {
				return fmt.Errorf("mogilefs update_class %q/%q: %w", domain, cl.Name, ErrClassNotFound)
			}
		}
		cl.MinDevCount = cur.MinDevCount
	}
	if _, err := c.do(ctx, "update_class", classArgs(domain, cl)); err != nil {
		return fmt.Errorf("mogilefs update_class %q/%q: %w", domain, cl.Name, err)
	}
	return nil
}

func findClass(doms []Domain, domain, class string) (Class, bool) {
	for _, d := range doms {
		if d.Name != domain {
			continue
		}
		for _, cl := range d.Classes {
			if cl.Name == class {
				return cl, true
			}
		}
	}
	return Class{}, false
}

// DeleteClass deletes a class without files (cmd_delete_class: domain,
// class). Fails with ErrClassNotFound, ErrClassHasFiles or
// ErrNodelDefault.
func (c *Client) DeleteClass(ctx context.Context, domain, class string) error {
	if _, err := c.do(ctx, "delete_class", url.Values{"domain": {domain}, "class": {class}}); err != nil {
		return fmt.Errorf("mogilefs delete_class %q/%q: %w", domain, class, err)
	}
	return nil
}

// Host is a storage node (cmd_get_hosts fields hostid, hostname, hostip,
// http_port, http_get_port, altip, altmask, status).
type Host struct {
	ID      int
	Name    string
	IP      string
	Port    int // HTTP port for PUT (and GET unless GetPort is set)
	GetPort int // optional separate HTTP port for GET
	AltIP   string
	AltMask string
	// Status is alive, dead, down or readonly.
	Status string
}

func hostArgs(h Host) url.Values {
	args := url.Values{"host": {h.Name}}
	set := func(k, v string) {
		if v != "" {
			args.Set(k, v)
		}
	}
	set("ip", h.IP)
	if h.Port > 0 {
		args.Set("port", strconv.Itoa(h.Port))
	}
	if h.GetPort > 0 {
		args.Set("getport", strconv.Itoa(h.GetPort))
	}
	set("altip", h.AltIP)
	set("altmask", h.AltMask)
	set("status", h.Status)
	return args
}

// CreateHost registers a storage node (cmd_create_host: host, ip, port,
// getport, altip, altmask, status; the tracker requires ip and port and
// defaults status to down). Returns the new host id. Fails with
// ErrHostExists.
func (c *Client) CreateHost(ctx context.Context, h Host) (int, error) {
	reply, err := c.do(ctx, "create_host", hostArgs(h))
	if err != nil {
		return 0, fmt.Errorf("mogilefs create_host %q: %w", h.Name, err)
	}
	var p numParser
	id := p.int(reply, "hostid")
	if p.err != nil {
		return 0, fmt.Errorf("mogilefs create_host %q: %w", h.Name, p.err)
	}
	return id, nil
}

// UpdateHost changes the non-zero fields of h for the host named h.Name
// (cmd_update_host). Fails with ErrHostNotFound.
func (c *Client) UpdateHost(ctx context.Context, h Host) error {
	if _, err := c.do(ctx, "update_host", hostArgs(h)); err != nil {
		return fmt.Errorf("mogilefs update_host %q: %w", h.Name, err)
	}
	return nil
}

// DeleteHost removes a host without devices (cmd_delete_host: host). Fails
// with ErrUnknownHost or ErrHostNotEmpty.
func (c *Client) DeleteHost(ctx context.Context, name string) error {
	if _, err := c.do(ctx, "delete_host", url.Values{"host": {name}}); err != nil {
		return fmt.Errorf("mogilefs delete_host %q: %w", name, err)
	}
	return nil
}

// GetHosts lists the hosts, ordered by id (cmd_get_hosts: hosts,
// hostN_<field>).
func (c *Client) GetHosts(ctx context.Context) ([]Host, error) {
	reply, err := c.do(ctx, "get_hosts", nil)
	if err != nil {
		return nil, fmt.Errorf("mogilefs get_hosts: %w", err)
	}
	n, err := count(reply, "hosts")
	if err != nil {
		return nil, fmt.Errorf("mogilefs get_hosts: %w", err)
	}
	var p numParser
	out := make([]Host, 0, n)
	for i := 1; i <= n; i++ {
		pre := "host" + strconv.Itoa(i) + "_"
		out = append(out, Host{
			ID:      p.int(reply, pre+"hostid"),
			Name:    reply.Get(pre + "hostname"),
			IP:      reply.Get(pre + "hostip"),
			Port:    p.int(reply, pre+"http_port"),
			GetPort: p.int(reply, pre+"http_get_port"),
			AltIP:   reply.Get(pre + "altip"),
			AltMask: reply.Get(pre + "altmask"),
			Status:  reply.Get(pre + "status"),
		})
	}
	if p.err != nil {
		return nil, fmt.Errorf("mogilefs get_hosts: %w", p.err)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

// Device is a storage device (cmd_get_devices: devN_devid, devN_hostid,
// devN_status, devN_weight, devN_observed_state, devN_mb_total,
// devN_mb_used, devN_mb_free, devN_mb_asof, devN_utilization,
// devN_reject_bad_md5). Sizes the monitor has not measured yet are 0.
type Device struct {
	ID            int
	HostID        int
	Status        string // alive, dead, down, readonly, drain
	Weight        int
	ObservedState string // writeable, readable, unreachable or ""
	MBTotal       int64
	MBUsed        int64
	MBFree        int64
	MBAsOf        int64 // unix time of the last size report
	Utilization   float64
	RejectBadMD5  bool
}

// GetDevices lists the devices, ordered by id.
func (c *Client) GetDevices(ctx context.Context) ([]Device, error) {
	reply, err := c.do(ctx, "get_devices", nil)
	if err != nil {
		return nil, fmt.Errorf("mogilefs get_devices: %w", err)
	}
	n, err := count(reply, "devices")
	if err != nil {
		return nil, fmt.Errorf("mogilefs get_devices: %w", err)
	}
	var p numParser
	out := make([]Device, 0, n)
	for i := 1; i <= n; i++ {
		pre := "dev" + strconv.Itoa(i) + "_"
		out = append(out, Device{
			ID:            p.int(reply, pre+"devid"),
			HostID:        p.int(reply, pre+"hostid"),
			Status:        reply.Get(pre + "status"),
			Weight:        p.int(reply, pre+"weight"),
			ObservedState: reply.Get(pre + "observed_state"),
			MBTotal:       p.int64(reply, pre+"mb_total"),
			MBUsed:        p.int64(reply, pre+"mb_used"),
			MBFree:        p.int64(reply, pre+"mb_free"),
			MBAsOf:        p.int64(reply, pre+"mb_asof"),
			Utilization:   p.float(reply, pre+"utilization"),
			RejectBadMD5:  p.int(reply, pre+"reject_bad_md5") != 0,
		})
	}
	if p.err != nil {
		return nil, fmt.Errorf("mogilefs get_devices: %w", p.err)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

// NewDevice names a device to create. Give the host by HostID or, if that
// is 0, by HostName.
type NewDevice struct {
	HostName string
	HostID   int
	DevID    int
	// State defaults to alive on the tracker.
	State string
}

// CreateDevice registers a device (cmd_create_device: devid, hostid or
// hostname, state). Fails with ErrExistingDevid, ErrUnknownHost or
// ErrInvalidState.
func (c *Client) CreateDevice(ctx context.Context, d NewDevice) error {
	args := url.Values{"devid": {strconv.Itoa(d.DevID)}}
	if d.HostID > 0 {
		args.Set("hostid", strconv.Itoa(d.HostID))
	} else {
		args.Set("hostname", d.HostName)
	}
	if d.State != "" {
		args.Set("state", d.State)
	}
	if _, err := c.do(ctx, "create_device", args); err != nil {
		return fmt.Errorf("mogilefs create_device %d: %w", d.DevID, err)
	}
	return nil
}

// SetState changes a device's state (cmd_set_state: host, device, state).
// host must be the device's host name: the tracker checks it.
func (c *Client) SetState(ctx context.Context, host string, devid int, state string) error {
	args := url.Values{"host": {host}, "device": {strconv.Itoa(devid)}, "state": {state}}
	if _, err := c.do(ctx, "set_state", args); err != nil {
		return fmt.Errorf("mogilefs set_state dev%d %s: %w", devid, state, err)
	}
	return nil
}

// SetWeight changes a device's weight (cmd_set_weight: host, device,
// weight).
func (c *Client) SetWeight(ctx context.Context, host string, devid, weight int) error {
	args := url.Values{"host": {host}, "device": {strconv.Itoa(devid)}, "weight": {strconv.Itoa(weight)}}
	if _, err := c.do(ctx, "set_weight", args); err != nil {
		return fmt.Errorf("mogilefs set_weight dev%d %d: %w", devid, weight, err)
	}
	return nil
}

// ServerSetting returns one server setting (cmd_server_setting: key;
// replies key, value). An unset setting reads as "".
func (c *Client) ServerSetting(ctx context.Context, key string) (string, error) {
	reply, err := c.do(ctx, "server_setting", url.Values{"key": {key}})
	if err != nil {
		return "", fmt.Errorf("mogilefs server_setting %q: %w", key, err)
	}
	return reply.Get("value"), nil
}

// ServerSettings returns the readable server settings
// (cmd_server_settings: key_count, key_N, value_N).
func (c *Client) ServerSettings(ctx context.Context) (map[string]string, error) {
	reply, err := c.do(ctx, "server_settings", nil)
	if err != nil {
		return nil, fmt.Errorf("mogilefs server_settings: %w", err)
	}
	out := map[string]string{}
	if _, ok := reply["key_count"]; !ok {
		// No readable settings: the tracker sends a bare OK.
		return out, nil
	}
	n, err := count(reply, "key_count")
	if err != nil {
		return nil, fmt.Errorf("mogilefs server_settings: %w", err)
	}
	for i := 1; i <= n; i++ {
		k, ok := reply["key_"+strconv.Itoa(i)]
		if !ok {
			return nil, fmt.Errorf("mogilefs server_settings: %w: key_%d missing", ErrProtocol, i)
		}
		out[k[0]] = reply.Get("value_" + strconv.Itoa(i))
	}
	return out, nil
}

// SetServerSetting sets a writable server setting (cmd_set_server_setting:
// key, value). Fails with ErrNotWritable or an "invalid_format" *Error.
func (c *Client) SetServerSetting(ctx context.Context, key, value string) error {
	if _, err := c.do(ctx, "set_server_setting", url.Values{"key": {key}, "value": {value}}); err != nil {
		return fmt.Errorf("mogilefs set_server_setting %q: %w", key, err)
	}
	return nil
}

// ReplicateNow makes every delayed replication due at once
// (cmd_replicate_now; replies count).
func (c *Client) ReplicateNow(ctx context.Context) (int, error) {
	reply, err := c.do(ctx, "replicate_now", nil)
	if err != nil {
		return 0, fmt.Errorf("mogilefs replicate_now: %w", err)
	}
	var p numParser
	n := p.int(reply, "count")
	if p.err != nil {
		return 0, fmt.Errorf("mogilefs replicate_now: %w", p.err)
	}
	return n, nil
}

// FsckStart starts (or resumes) fsck (cmd_fsck_start). Fails with
// ErrFsckRunning.
func (c *Client) FsckStart(ctx context.Context) error {
	if _, err := c.do(ctx, "fsck_start", nil); err != nil {
		return fmt.Errorf("mogilefs fsck_start: %w", err)
	}
	return nil
}

// FsckStop stops fsck (cmd_fsck_stop).
func (c *Client) FsckStop(ctx context.Context) error {
	if _, err := c.do(ctx, "fsck_stop", nil); err != nil {
		return fmt.Errorf("mogilefs fsck_stop: %w", err)
	}
	return nil
}

// FsckReset resets fsck's position (cmd_fsck_reset: policy_only,
// startpos): the next start checks fids above startPos, only their
// replication policy if policyOnly.
func (c *Client) FsckReset(ctx context.Context, policyOnly bool, startPos int64) error {
	args := url.Values{}
	if policyOnly {
		args.Set("policy_only", "1")
	}
	if startPos > 0 {
		args.Set("startpos", strconv.FormatInt(startPos, 10))
	}
	if _, err := c.do(ctx, "fsck_reset", args); err != nil {
		return fmt.Errorf("mogilefs fsck_reset: %w", err)
	}
	return nil
}

// FsckStatus is cmd_fsck_status's reply.
type FsckStatus struct {
	Running       bool
	Host          string
	MaxFidChecked int64
	PolicyOnly    bool
	EndFid        int64
	StartTime     int64 // unix seconds, 0 if never started
	StopTime      int64
	CurrentTime   int64 // the database's clock
	MaxLogID      int64
	// QueueLength is how many fids wait in the fsck queue (gomogile's own
	// field; 0 from the original): fsck stops running once every fid is
	// queued, and is done when this reaches 0 too.
	QueueLength int64
	// Counts holds the num_<EVCODE> event counters (e.g. "NOPA").
	Counts map[string]int64
}

// FsckStatus reports fsck's progress (cmd_fsck_status: running, host,
// max_fid_checked, policy_only, end_fid, start_time, stop_time,
// current_time, max_logid, queue_length, num_*).
func (c *Client) FsckStatus(ctx context.Context) (*FsckStatus, error) {
	reply, err := c.do(ctx, "fsck_status", nil)
	if err != nil {
		return nil, fmt.Errorf("mogilefs fsck_status: %w", err)
	}
	var p numParser
	st := &FsckStatus{
		Running:       p.int(reply, "running") != 0,
		Host:          reply.Get("host"),
		MaxFidChecked: p.int64(reply, "max_fid_checked"),
		PolicyOnly:    p.int(reply, "policy_only") != 0,
		EndFid:        p.int64(reply, "end_fid"),
		StartTime:     p.int64(reply, "start_time"),
		StopTime:      p.int64(reply, "stop_time"),
		CurrentTime:   p.int64(reply, "current_time"),
		MaxLogID:      p.int64(reply, "max_logid"),
		QueueLength:   p.int64(reply, "queue_length"),
		Counts:        map[string]int64{},
	}
	for k := range reply {
		if ev, ok := strings.CutPrefix(k, "num_"); ok {
			st.Counts[ev] = p.int64(reply, k)
		}
	}
	if p.err != nil {
		return nil, fmt.Errorf("mogilefs fsck_status: %w", p.err)
	}
	return st, nil
}
