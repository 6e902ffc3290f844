package tracker

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// ---- domains and classes ----

func (t *Tracker) cmdGetDomains(ctx context.Context, r *request) (*Reply, error) {
	ns, err := t.namespace(ctx)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	for i, d := range ns.Domains {
		n := i + 1
		res.Set(fmt.Sprintf("domain%d", n), d.Name)
		classes := t.domainClasses(ns, d.ID)
		for j, c := range classes {
			p := fmt.Sprintf("domain%dclass%d", n, j+1)
			res.Set(p+"name", c.Name)
			res.Set(p+"mindevcount", c.MinDevCount)
			res.Set(p+"replpolicy", replPolicyString(c.ReplPolicy))
			res.Set(p+"hashtype", c.HashType.String())
		}
		res.Set(fmt.Sprintf("domain%dclasses", n), len(classes))
	}
	res.Set("domains", len(ns.Domains))
	return res, nil
}

// domainClasses lists a domain's classes with the implicit default first.
func (t *Tracker) domainClasses(ns *namespace, dmid int) []store.Class {
	var out []store.Class
	if _, ok := ns.Classes[dmid]; !ok || ns.Classes[dmid][0].ID != 0 {
		c, _ := t.classFor(ns, dmid, 0)
		out = append(out, c)
	}
	for _, c := range ns.Classes[dmid] {
		if c.ID == 0 && c.MinDevCount == 0 {
			c.MinDevCount = t.cfg.DefaultMinDevCount
		}
		out = append(out, c)
	}
	return out
}

func replPolicyString(p string) string {
	if p == "" {
		return "MultipleHosts()"
	}
	return p
}

func (t *Tracker) cmdCreateDomain(ctx context.Context, r *request) (*Reply, error) {
	name := r.Args.Get("domain")
	if !perlTrue(name) {
		return nil, perr("no_domain")
	}
	_, err := t.st.CreateDomain(ctx, name)
	t.ns.Invalidate()
	if errors.Is(err, store.ErrDuplicate) {
		return nil, perr("domain_exists")
	}
	if err != nil {
		return nil, err // logged by handleLine; store text is not for clients
	}
	res := &Reply{}
	res.Set("domain", name)
	return res, nil
}

func (t *Tracker) cmdDeleteDomain(ctx context.Context, r *request) (*Reply, error) {
	name := r.Args.Get("domain")
	if !perlTrue(name) {
		return nil, perr("no_domain")
	}
	ns, err := t.fresh(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := ns.DomainByName[name]
	if !ok {
		return nil, perr("domain_not_found")
	}
	err = t.st.DeleteDomain(ctx, d.ID)
	t.ns.Invalidate()
	switch {
	case errors.Is(err, store.ErrHasFiles):
		return nil, perr("domain_has_files")
	case errors.Is(err, store.ErrHasClasses):
		return nil, perr("domain_has_classes")
	case errors.Is(err, store.ErrNotFound):
		return nil, perr("domain_not_found")
	case err != nil:
		t.log.Error("delete domain", "domain", name, "err", err)
		return nil, perr("failure")
	}
	res := &Reply{}
	res.Set("domain", name)
	return res, nil
}

func (t *Tracker) cmdCreateClass(ctx context.Context, r *request) (*Reply, error) {
	return t.createClass(ctx, r, perlTrue(r.Args.Get("update")))
}

func (t *Tracker) cmdUpdateClass(ctx context.Context, r *request) (*Reply, error) {
	return t.createClass(ctx, r, true)
}

func (t *Tracker) createClass(ctx context.Context, r *request, update bool) (*Reply, error) {
	domain := r.Args.Get("domain")
	if domain == "" {
		return nil, perr("no_domain")
	}
	cname := r.Args.Get("class")
	if cname == "" {
		return nil, perr("no_class")
	}
	mindev := perlNum(r.Args.Get("mindevcount"))
	if mindev <= 0 {
		return nil, perr("invalid_mindevcount")
	}
	policy := r.Args.Get("replpolicy")
	if perlTrue(policy) {
		// The replicate worker parses it with the same function, so a
		// class accepted here is one it can replicate.
		if _, err := cluster.ParseReplPolicy(policy); err != nil {
			return nil, perr("invalid_replpolicy", err.Error())
		}
	} else {
		policy = ""
	}
	hashGiven := false
	var ht store.HashType
	if h := r.Args.Get("hashtype"); perlTrue(h) {
		hashGiven = true
		v, ok := store.ParseHashType(h)
		if !ok {
			return nil, perr("invalid_hashtype")
		}
		ht = v
	}
	ns, err := t.fresh(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := ns.DomainByName[domain]
	if !ok {
		return nil, perr("domain_not_found")
	}
	var existing *store.Class
	for _, c := range ns.Classes[d.ID] {
		if c.Name == cname {
			c := c
			existing = &c
		}
	}
	if existing == nil && update && cname == "default" {
		update = false
	}
	if update {
		if existing == nil {
			return nil, perr("class_not_found")
		}
		c := *existing
		c.MinDevCount = int(mindev)
		if policy != "" {
			c.ReplPolicy = policy
		}
		if hashGiven {
			c.HashType = ht
		}
		err = t.st.UpdateClass(ctx, c)
	} else {
		_, err = t.st.CreateClass(ctx, store.Class{DomainID: d.ID, Name: cname, MinDevCount: int(mindev), ReplPolicy: policy, HashType: ht})
		if errors.Is(err, store.ErrDuplicate) {
			t.ns.Invalidate()
			return nil, perr("class_exists")
		}
	}
	t.ns.Invalidate()
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, perr("class_not_found")
		}
		return nil, err // logged by handleLine; store text is not for clients
	}
	res := &Reply{}
	res.Set("class", cname)
	res.Set("mindevcount", mindev)
	res.Set("domain", domain)
	return res, nil
}

func (t *Tracker) cmdDeleteClass(ctx context.Context, r *request) (*Reply, error) {
	domain := r.Args.Get("domain")
	if domain == "" {
		return nil, perr("no_domain")
	}
	cname := r.Args.Get("class")
	if cname == "" {
		return nil, perr("no_class")
	}
	if cname == "default" {
		return nil, perr("nodel_default_class")
	}
	ns, err := t.fresh(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := ns.DomainByName[domain]
	if !ok {
		return nil, perr("domain_not_found")
	}
	c, ok := ns.ClassByName(d.ID, cname, t.settings())
	if !ok {
		return nil, perr("class_not_found")
	}
	err = t.st.DeleteClass(ctx, d.ID, c.ID)
	t.ns.Invalidate()
	switch {
	case errors.Is(err, store.ErrHasFiles):
		return nil, perr("class_has_files")
	case errors.Is(err, store.ErrNotFound):
		return nil, perr("class_not_found")
	case err != nil:
		t.log.Error("delete class", "domain", domain, "class", cname, "err", err)
		return nil, perr("failure")
	}
	res := &Reply{}
	res.Set("domain", domain)
	res.Set("class", cname)
	return res, nil
}

// ---- hosts and devices ----

func validHostState(s string) bool {
	switch store.HostStatus(s) {
	case store.HostAlive, store.HostDead, store.HostDown, store.HostReadOnly:
		return true
	}
	return false
}

func (t *Tracker) cmdCreateHost(ctx context.Context, r *request) (*Reply, error) {
	return t.createHost(ctx, r, perlTrue(r.Args.Get("update")))
}

func (t *Tracker) cmdUpdateHost(ctx context.Context, r *request) (*Reply, error) {
	return t.createHost(ctx, r, true)
}

func (t *Tracker) createHost(ctx context.Context, r *request, update bool) (*Reply, error) {
	a := r.Args
	name := a.Get("host")
	if !perlTrue(name) {
		return nil, perr("no_host")
	}
	ns, err := t.fresh(ctx)
	if err != nil {
		return nil, err
	}
	h, exists := ns.HostByName[name]
	status := a.Get("status")
	if update {
		if !exists {
			return nil, perr("host_not_found")
		}
	} else {
		if exists {
			return nil, perr("host_exists")
		}
		if !perlTrue(a.Get("ip")) {
			return nil, perr("no_ip")
		}
		if !perlTrue(a.Get("port")) {
			return nil, perr("no_port")
		}
		if !perlTrue(status) {
			status = "down"
		}
	}
	if perlTrue(status) && !validHostState(status) {
		return nil, perr("unknown_state")
	}
	port := func(k string) (int, error) {
		v := a.Get(k)
		if v == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 65535 {
			return 0, perr("bad_params", fmt.Sprintf("%s must be a TCP port, not %q", k, v))
		}
		return n, nil
	}
	if !exists {
		h = store.Host{Name: name}
	}
	if perlTrue(status) {
		h.Status = store.HostStatus(status)
	}
	if a.Has("ip") {
		h.IP = a.Get("ip")
	}
	if a.Has("port") {
		if h.HTTPPort, err = port("port"); err != nil {
			return nil, err
		}
	}
	if a.Has("getport") {
		if h.HTTPGetPort, err = port("getport"); err != nil {
			return nil, err
		}
	}
	if a.Has("altip") {
		h.AltIP = a.Get("altip")
	}
	if a.Has("altmask") {
		h.AltMask = a.Get("altmask")
	}
	if exists {
		err = t.st.UpdateHost(ctx, h)
	} else {
		h, err = t.st.CreateHost(ctx, h)
	}
	t.ns.Invalidate()
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	res.Set("hostid", h.ID)
	res.Set("hostname", name)
	return res, nil
}

func (t *Tracker) cmdDeleteHost(ctx context.Context, r *request) (*Reply, error) {
	ns, err := t.fresh(ctx)
	if err != nil {
		return nil, err
	}
	h, ok := ns.HostByName[r.Args.Get("host")]
	if !ok {
		return nil, perr("unknown_host")
	}
	for _, d := range ns.Devices {
		if d.HostID == h.ID {
			return nil, perr("host_not_empty")
		}
	}
	err = t.st.DeleteHost(ctx, h.ID)
	t.ns.Invalidate()
	switch {
	case errors.Is(err, store.ErrHasDevices):
		return nil, perr("host_not_empty")
	case errors.Is(err, store.ErrNotFound):
		return nil, perr("unknown_host")
	}
	return nil, err
}

func (t *Tracker) cmdGetHosts(ctx context.Context, r *request) (*Reply, error) {
	ns, err := t.namespace(ctx)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	n := 0
	for _, h := range ns.Hosts {
		if r.Args.Has("hostid") && int64(h.ID) != perlNum(r.Args.Get("hostid")) {
			continue
		}
		n++
		p := fmt.Sprintf("host%d_", n)
		res.Set(p+"hostid", h.ID)
		res.Set(p+"status", h.Status)
		res.Set(p+"hostname", h.Name)
		res.Set(p+"hostip", h.IP)
		res.Set(p+"http_port", h.HTTPPort)
		res.Set(p+"http_get_port", zeroEmpty(h.HTTPGetPort))
		res.Set(p+"altip", h.AltIP)
		res.Set(p+"altmask", h.AltMask)
	}
	res.Set("hosts", n)
	return res, nil
}

func (t *Tracker) cmdCreateDevice(ctx context.Context, r *request) (*Reply, error) {
	a := r.Args
	state := a.Get("state")
	if !perlTrue(state) {
		state = "alive"
	}
	if !store.DeviceState(state).Valid() {
		return nil, perr("invalid_state")
	}
	devid, err := strconv.Atoi(a.Get("devid"))
	if err != nil || devid <= 0 || !allDigits(a.Get("devid")) {
		return nil, perr("invalid_devid")
	}
	ns, err := t.fresh(ctx)
	if err != nil {
		return nil, err
	}
	var hostid int
	switch {
	case perlTrue(a.Get("hostid")) && allDigits(a.Get("hostid")):
		id, _ := strconv.Atoi(a.Get("hostid"))
		if _, ok := ns.HostByID[id]; !ok {
			return nil, perr("unknown_hostid")
		}
		hostid = id
	case perlTrue(a.Get("hostname")):
		h, ok := ns.HostByName[a.Get("hostname")]
		if !ok {
			return nil, perr("unknown_host")
		}
		hostid = h.ID
	default:
		return nil, perr("bad_args", "No hostid/hostname parameter")
	}
	_, err = t.st.CreateDevice(ctx, store.Device{ID: devid, HostID: hostid, Status: store.DeviceState(state), Weight: 100})
	t.ns.Invalidate()
	switch {
	case errors.Is(err, store.ErrDuplicate):
		return nil, perr("existing_devid")
	case errors.Is(err, store.ErrNotFound):
		return nil, perr("unknown_hostid")
	}
	return nil, err
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (t *Tracker) cmdGetDevices(ctx context.Context, r *request) (*Reply, error) {
	ns, err := t.namespace(ctx)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	n := 0
	for _, d := range ns.Devices {
		if r.Args.Has("devid") && int64(d.ID) != perlNum(r.Args.Get("devid")) {
			continue
		}
		n++
		p := fmt.Sprintf("dev%d_", n)
		res.Set(p+"devid", d.ID)
		res.Set(p+"hostid", d.HostID)
		res.Set(p+"status", d.Status)
		res.Set(p+"weight", d.Weight)
		res.Set(p+"observed_state", t.observe(d.ID).State)
		if d.MBTotal > 0 {
			res.Set(p+"mb_total", d.MBTotal)
			res.Set(p+"mb_used", d.MBUsed)
			res.Set(p+"mb_free", d.MBTotal-d.MBUsed)
		} else {
			res.Set(p+"mb_total", "")
			res.Set(p+"mb_used", "")
			res.Set(p+"mb_free", "")
		}
		if d.MBAsOf.IsZero() {
			res.Set(p+"mb_asof", "")
		} else {
			res.Set(p+"mb_asof", d.MBAsOf.Unix())
		}
		util, reject := t.deviceStats(d.ID)
		res.Set(p+"utilization", util)
		res.Set(p+"reject_bad_md5", reject)
	}
	res.Set("devices", n)
	return res, nil
}

// deviceStats are get_devices' utilization and reject_bad_md5 from the
// monitor, as the original's Device fields: the figure exactly as the node
// sent it, and 1 or 0; both empty while the monitor does not know them.
func (t *Tracker) deviceStats(devid int) (util, reject string) {
	o := t.observe(devid)
	if o.UtilizationOK {
		util = o.Utilization
	}
	if o.RejectBadMD5OK {
		reject = "0"
		if o.RejectBadMD5 {
			reject = "1"
		}
	}
	return util, reject
}

// deviceOfHost resolves set_state/set_weight's host+device pair.
func (t *Tracker) deviceOfHost(ctx context.Context, hostname string, devid int) (store.Device, error) {
	ns, err := t.fresh(ctx)
	if err != nil {
		return store.Device{}, err
	}
	d, ok := ns.DevByID[devid]
	if !ok {
		return d, perr("no_device")
	}
	if h, ok := ns.HostByID[d.HostID]; !ok || h.Name != hostname {
		return d, perr("host_mismatch")
	}
	return d, nil
}

func (t *Tracker) cmdSetWeight(ctx context.Context, r *request) (*Reply, error) {
	host := r.Args.Get("host")
	devid := int(perlNum(r.Args.Get("device")))
	weight, ok := numArg(r.Args.Get("weight"))
	if !perlTrue(host) || devid == 0 || !ok || weight < 0 || weight > maxWeightArg {
		return nil, perr("bad_params")
	}
	d, err := t.deviceOfHost(ctx, host, devid)
	if err != nil {
		return nil, err
	}
	err = t.st.SetDeviceWeight(ctx, d.ID, int(weight))
	t.ns.Invalidate()
	return nil, err
}

func (t *Tracker) cmdSetState(ctx context.Context, r *request) (*Reply, error) {
	host := r.Args.Get("host")
	devid := int(perlNum(r.Args.Get("device")))
	state := store.DeviceState(r.Args.Get("state"))
	if !perlTrue(host) || devid == 0 || !state.Valid() {
		return nil, perr("bad_params")
	}
	d, err := t.deviceOfHost(ctx, host, devid)
	if err != nil {
		return nil, err
	}
	if d.Status == store.DeviceDead && state == store.DeviceAlive {
		return nil, perr("state_too_high")
	}
	err = t.st.SetDeviceState(ctx, d.ID, state)
	t.ns.Invalidate()
	return nil, err
}

func (t *Tracker) cmdReplicateNow(ctx context.Context, r *request) (*Reply, error) {
	n, err := t.st.Expedite(ctx, store.QueueReplicate)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	res.Set("count", n)
	return res, nil
}

// ---- fsck ----
//
// fsck is driven through server settings, as the original's fsck worker
// reads them: fsck_host (running when set), fsck_highest_fid_checked,
// fsck_fid_at_end, fsck_start_time, fsck_stop_time, fsck_fids_checked,
// fsck_start_fid, fsck_opt_policy_only, fsck_start_maxlogid,
// fsck_logid_processed and the fsck_sum_evcount_<code> counters.
