package query

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// ---- domains and classes ----

func (e *Env) cmdGetDomains(ctx context.Context, r *Request) (*Reply, error) {
	ns, err := e.namespace(ctx)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	for i, d := range ns.Domains {
		n := i + 1
		res.Set(fmt.Sprintf("domain%d", n), d.Name)
		classes := e.domainClasses(ns, d.ID)
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
func (e *Env) domainClasses(ns *namespace, dmid int) []store.Class {
	var out []store.Class
	if _, ok := ns.Classes[dmid]; !ok || ns.Classes[dmid][0].ID != 0 {
		c, _ := e.classFor(ns, dmid, 0)
		out = append(out, c)
	}
	for _, c := range ns.Classes[dmid] {
		if c.ID == 0 && c.MinDevCount == 0 {
			c.MinDevCount = e.Config.Cluster.DefaultMinDevCount
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

func (e *Env) cmdCreateDomain(ctx context.Context, r *Request) (*Reply, error) {
	name := r.Args.Get("domain")
	if !PerlTrue(name) {
		return nil, perr("no_domain")
	}
	_, err := e.Store.CreateDomain(ctx, name)
	e.NS.Invalidate()
	if errors.Is(err, store.ErrDuplicate) {
		return nil, perr("domain_exists")
	}
	if err != nil {
		return nil, err // logged by the server; store text is not for clients
	}
	res := &Reply{}
	res.Set("domain", name)
	return res, nil
}

func (e *Env) cmdDeleteDomain(ctx context.Context, r *Request) (*Reply, error) {
	name := r.Args.Get("domain")
	if !PerlTrue(name) {
		return nil, perr("no_domain")
	}
	ns, err := e.fresh(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := ns.DomainByName[name]
	if !ok {
		return nil, perr("domain_not_found")
	}
	err = e.Store.DeleteDomain(ctx, d.ID)
	e.NS.Invalidate()
	switch {
	case errors.Is(err, store.ErrHasFiles):
		return nil, perr("domain_has_files")
	case errors.Is(err, store.ErrHasClasses):
		return nil, perr("domain_has_classes")
	case errors.Is(err, store.ErrNotFound):
		return nil, perr("domain_not_found")
	case err != nil:
		e.Log.Error("delete domain", "domain", name, "err", err)
		return nil, perr("failure")
	}
	res := &Reply{}
	res.Set("domain", name)
	return res, nil
}

func (e *Env) cmdCreateClass(ctx context.Context, r *Request) (*Reply, error) {
	return e.createClass(ctx, r, PerlTrue(r.Args.Get("update")))
}

func (e *Env) cmdUpdateClass(ctx context.Context, r *Request) (*Reply, error) {
	return e.createClass(ctx, r, true)
}

func (e *Env) createClass(ctx context.Context, r *Request, update bool) (*Reply, error) {
	domain := r.Args.Get("domain")
	if domain == "" {
		return nil, perr("no_domain")
	}
	cname := r.Args.Get("class")
	if cname == "" {
		return nil, perr("no_class")
	}
	mindev := PerlNum(r.Args.Get("mindevcount"))
	if mindev <= 0 {
		return nil, perr("invalid_mindevcount")
	}
	policy := r.Args.Get("replpolicy")
	if PerlTrue(policy) {
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
	if h := r.Args.Get("hashtype"); PerlTrue(h) {
		hashGiven = true
		v, ok := store.ParseHashType(h)
		if !ok {
			return nil, perr("invalid_hashtype")
		}
		ht = v
	}
	ns, err := e.fresh(ctx)
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
		err = e.Store.UpdateClass(ctx, c)
	} else {
		_, err = e.Store.CreateClass(ctx, store.Class{DomainID: d.ID, Name: cname, MinDevCount: int(mindev), ReplPolicy: policy, HashType: ht})
		if errors.Is(err, store.ErrDuplicate) {
			e.NS.Invalidate()
			return nil, perr("class_exists")
		}
	}
	e.NS.Invalidate()
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, perr("class_not_found")
		}
		return nil, err // logged by the server; store text is not for clients
	}
	res := &Reply{}
	res.Set("class", cname)
	res.Set("mindevcount", mindev)
	res.Set("domain", domain)
	return res, nil
}

func (e *Env) cmdDeleteClass(ctx context.Context, r *Request) (*Reply, error) {
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
	ns, err := e.fresh(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := ns.DomainByName[domain]
	if !ok {
		return nil, perr("domain_not_found")
	}
	c, ok := ns.ClassByName(d.ID, cname, e.Config.Cluster)
	if !ok {
		return nil, perr("class_not_found")
	}
	err = e.Store.DeleteClass(ctx, d.ID, c.ID)
	e.NS.Invalidate()
	switch {
	case errors.Is(err, store.ErrHasFiles):
		return nil, perr("class_has_files")
	case errors.Is(err, store.ErrNotFound):
		return nil, perr("class_not_found")
	case err != nil:
		e.Log.Error("delete class", "domain", domain, "class", cname, "err", err)
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

func (e *Env) cmdCreateHost(ctx context.Context, r *Request) (*Reply, error) {
	return e.createHost(ctx, r, PerlTrue(r.Args.Get("update")))
}

func (e *Env) cmdUpdateHost(ctx context.Context, r *Request) (*Reply, error) {
	return e.createHost(ctx, r, true)
}

func (e *Env) createHost(ctx context.Context, r *Request, update bool) (*Reply, error) {
	a := r.Args
	name := a.Get("host")
	if !PerlTrue(name) {
		return nil, perr("no_host")
	}
	ns, err := e.fresh(ctx)
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
		if !PerlTrue(a.Get("ip")) {
			return nil, perr("no_ip")
		}
		if !PerlTrue(a.Get("port")) {
			return nil, perr("no_port")
		}
		if !PerlTrue(status) {
			status = "down"
		}
	}
	if PerlTrue(status) && !validHostState(status) {
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
	if PerlTrue(status) {
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
		err = e.Store.UpdateHost(ctx, h)
	} else {
		h, err = e.Store.CreateHost(ctx, h)
	}
	e.NS.Invalidate()
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	res.Set("hostid", h.ID)
	res.Set("hostname", name)
	return res, nil
}

func (e *Env) cmdDeleteHost(ctx context.Context, r *Request) (*Reply, error) {
	ns, err := e.fresh(ctx)
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
	err = e.Store.DeleteHost(ctx, h.ID)
	e.NS.Invalidate()
	switch {
	case errors.Is(err, store.ErrHasDevices):
		return nil, perr("host_not_empty")
	case errors.Is(err, store.ErrNotFound):
		return nil, perr("unknown_host")
	}
	return nil, err
}

func (e *Env) cmdGetHosts(ctx context.Context, r *Request) (*Reply, error) {
	ns, err := e.namespace(ctx)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	n := 0
	for _, h := range ns.Hosts {
		if r.Args.Has("hostid") && int64(h.ID) != PerlNum(r.Args.Get("hostid")) {
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

func (e *Env) cmdCreateDevice(ctx context.Context, r *Request) (*Reply, error) {
	a := r.Args
	state := a.Get("state")
	if !PerlTrue(state) {
		state = "alive"
	}
	if !store.DeviceState(state).Valid() {
		return nil, perr("invalid_state")
	}
	devid, err := strconv.Atoi(a.Get("devid"))
	if err != nil || devid <= 0 || !allDigits(a.Get("devid")) {
		return nil, perr("invalid_devid")
	}
	ns, err := e.fresh(ctx)
	if err != nil {
		return nil, err
	}
	var hostid int
	switch {
	case PerlTrue(a.Get("hostid")) && allDigits(a.Get("hostid")):
		id, _ := strconv.Atoi(a.Get("hostid"))
		if _, ok := ns.HostByID[id]; !ok {
			return nil, perr("unknown_hostid")
		}
		hostid = id
	case PerlTrue(a.Get("hostname")):
		h, ok := ns.HostByName[a.Get("hostname")]
		if !ok {
			return nil, perr("unknown_host")
		}
		hostid = h.ID
	default:
		return nil, perr("bad_args", "No hostid/hostname parameter")
	}
	_, err = e.Store.CreateDevice(ctx, store.Device{ID: devid, HostID: hostid, Status: store.DeviceState(state), Weight: 100})
	e.NS.Invalidate()
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

func (e *Env) cmdGetDevices(ctx context.Context, r *Request) (*Reply, error) {
	ns, err := e.namespace(ctx)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	n := 0
	for _, d := range ns.Devices {
		if r.Args.Has("devid") && int64(d.ID) != PerlNum(r.Args.Get("devid")) {
			continue
		}
		n++
		p := fmt.Sprintf("dev%d_", n)
		res.Set(p+"devid", d.ID)
		res.Set(p+"hostid", d.HostID)
		res.Set(p+"status", d.Status)
		res.Set(p+"weight", d.Weight)
		res.Set(p+"observed_state", e.Observe(d.ID).State)
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
		util, reject := e.deviceStats(d.ID)
		res.Set(p+"utilization", util)
		res.Set(p+"reject_bad_md5", reject)
	}
	res.Set("devices", n)
	return res, nil
}

// deviceStats are get_devices' utilization and reject_bad_md5 from the
// monitor, as the original's Device fields: the figure exactly as the node
// sent it, and 1 or 0; both empty while the monitor does not know them.
func (e *Env) deviceStats(devid int) (util, reject string) {
	o := e.Observe(devid)
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
func (e *Env) deviceOfHost(ctx context.Context, hostname string, devid int) (store.Device, error) {
	ns, err := e.fresh(ctx)
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

func (e *Env) cmdSetWeight(ctx context.Context, r *Request) (*Reply, error) {
	host := r.Args.Get("host")
	devid := int(PerlNum(r.Args.Get("device")))
	weight, ok := numArg(r.Args.Get("weight"))
	if !PerlTrue(host) || devid == 0 || !ok || weight < 0 || weight > maxWeightArg {
		return nil, perr("bad_params")
	}
	d, err := e.deviceOfHost(ctx, host, devid)
	if err != nil {
		return nil, err
	}
	err = e.Store.SetDeviceWeight(ctx, d.ID, int(weight))
	e.NS.Invalidate()
	return nil, err
}

func (e *Env) cmdSetState(ctx context.Context, r *Request) (*Reply, error) {
	host := r.Args.Get("host")
	devid := int(PerlNum(r.Args.Get("device")))
	state := store.DeviceState(r.Args.Get("state"))
	if !PerlTrue(host) || devid == 0 || !state.Valid() {
		return nil, perr("bad_params")
	}
	d, err := e.deviceOfHost(ctx, host, devid)
	if err != nil {
		return nil, err
	}
	if d.Status == store.DeviceDead && state == store.DeviceAlive {
		return nil, perr("state_too_high")
	}
	err = e.Store.SetDeviceState(ctx, d.ID, state)
	e.NS.Invalidate()
	return nil, err
}
