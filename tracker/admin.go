package tracker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/store"
)

// ---- domains and classes ----

func cmdGetDomains(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	ns, err := t.namespace(ctx)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	for i, d := range ns.domains {
		n := i + 1
		res.Set(fmt.Sprintf("domain%d", n), d.Name)
		classes := t.domainClasses(ns, d.ID)
		for j, c := range classes {
			p := fmt.Sprintf("domain%dclass%d", n, j+1)
			res.Set(p+"name", c.Name)
			res.Set(p+"mindevcount", c.MinDevCount)
			res.Set(p+"replpolicy", replPolicyString(c.ReplPolicy))
			res.Set(p+"hashtype", hashTypeString(c.HashType))
		}
		res.Set(fmt.Sprintf("domain%dclasses", n), len(classes))
	}
	res.Set("domains", len(ns.domains))
	return res, nil
}

// domainClasses lists a domain's classes with the implicit default first.
func (t *Tracker) domainClasses(ns *namespace, dmid int) []store.Class {
	var out []store.Class
	if _, ok := ns.classes[dmid]; !ok || ns.classes[dmid][0].ID != 0 {
		c, _ := t.classFor(ns, dmid, 0)
		out = append(out, c)
	}
	for _, c := range ns.classes[dmid] {
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

func hashTypeString(h store.HashType) string {
	if h == store.HashNone {
		return "NONE"
	}
	if n := hashName(h); n != "" {
		return n
	}
	return strconv.Itoa(int(h))
}

func cmdCreateDomain(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	name := r.Args.Get("domain")
	if !perlTrue(name) {
		return nil, perr("no_domain")
	}
	_, err := t.st.CreateDomain(ctx, name)
	t.ns.invalidate()
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

func cmdDeleteDomain(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	name := r.Args.Get("domain")
	if !perlTrue(name) {
		return nil, perr("no_domain")
	}
	ns, err := t.fresh(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := ns.domainByName[name]
	if !ok {
		return nil, perr("domain_not_found")
	}
	err = t.st.DeleteDomain(ctx, d.ID)
	t.ns.invalidate()
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

// replPolicyRE is the shape of a policy string (ReplicationPolicy's
// new_from_policy_string): Name(args).
var replPolicyRE = regexp.MustCompile(`^(\w+)\(([^()]*)\)$`)

var knownPolicies = map[string]bool{
	"MultipleHosts": true, "MultipleDevices": true, "MultipleNetworks": true, "HostsPerNetwork": true, "Union": true,
}

func validReplPolicy(p string) error {
	m := replPolicyRE.FindStringSubmatch(p)
	if m == nil {
		return fmt.Errorf("Failed to parse replication policy %q", p)
	}
	if !knownPolicies[m[1]] {
		return fmt.Errorf("Failed to load replication policy %s", m[1])
	}
	return nil
}

func cmdCreateClass(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	return t.createClass(ctx, r, perlTrue(r.Args.Get("update")))
}

func cmdUpdateClass(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
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
		if err := validReplPolicy(policy); err != nil {
			return nil, perr("invalid_replpolicy", err.Error())
		}
	} else {
		policy = ""
	}
	hashGiven := false
	var ht store.HashType
	if h := r.Args.Get("hashtype"); perlTrue(h) {
		hashGiven = true
		if h != "NONE" {
			v, ok := hashNames[h]
			if !ok {
				return nil, perr("invalid_hashtype")
			}
			ht = v
		}
	}
	ns, err := t.fresh(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := ns.domainByName[domain]
	if !ok {
		return nil, perr("domain_not_found")
	}
	var existing *store.Class
	for _, c := range ns.classes[d.ID] {
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
			t.ns.invalidate()
			return nil, perr("class_exists")
		}
	}
	t.ns.invalidate()
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

func cmdDeleteClass(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
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
	d, ok := ns.domainByName[domain]
	if !ok {
		return nil, perr("domain_not_found")
	}
	c, ok := ns.classByName(d.ID, cname)
	if !ok {
		return nil, perr("class_not_found")
	}
	err = t.st.DeleteClass(ctx, d.ID, c.ID)
	t.ns.invalidate()
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

func cmdCreateHost(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	return t.createHost(ctx, r, perlTrue(r.Args.Get("update")))
}

func cmdUpdateHost(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
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
	h, exists := ns.hostByName[name]
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
	t.ns.invalidate()
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	res.Set("hostid", h.ID)
	res.Set("hostname", name)
	return res, nil
}

func cmdDeleteHost(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	ns, err := t.fresh(ctx)
	if err != nil {
		return nil, err
	}
	h, ok := ns.hostByName[r.Args.Get("host")]
	if !ok {
		return nil, perr("unknown_host")
	}
	for _, d := range ns.devices {
		if d.HostID == h.ID {
			return nil, perr("host_not_empty")
		}
	}
	err = t.st.DeleteHost(ctx, h.ID)
	t.ns.invalidate()
	switch {
	case errors.Is(err, store.ErrHasDevices):
		return nil, perr("host_not_empty")
	case errors.Is(err, store.ErrNotFound):
		return nil, perr("unknown_host")
	}
	return nil, err
}

func cmdGetHosts(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	ns, err := t.namespace(ctx)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	n := 0
	for _, h := range ns.hosts {
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

func cmdCreateDevice(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
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
		if _, ok := ns.hostByID[id]; !ok {
			return nil, perr("unknown_hostid")
		}
		hostid = id
	case perlTrue(a.Get("hostname")):
		h, ok := ns.hostByName[a.Get("hostname")]
		if !ok {
			return nil, perr("unknown_host")
		}
		hostid = h.ID
	default:
		return nil, perr("bad_args", "No hostid/hostname parameter")
	}
	_, err = t.st.CreateDevice(ctx, store.Device{ID: devid, HostID: hostid, Status: store.DeviceState(state), Weight: 100})
	t.ns.invalidate()
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

func cmdGetDevices(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	ns, err := t.namespace(ctx)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	n := 0
	for _, d := range ns.devices {
		if r.Args.Has("devid") && int64(d.ID) != perlNum(r.Args.Get("devid")) {
			continue
		}
		n++
		p := fmt.Sprintf("dev%d_", n)
		res.Set(p+"devid", d.ID)
		res.Set(p+"hostid", d.HostID)
		res.Set(p+"status", d.Status)
		res.Set(p+"weight", d.Weight)
		obs, _ := t.observed(d.ID)
		res.Set(p+"observed_state", obs)
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
	ds, ok := t.jobs.(DeviceStatter)
	if !ok || !t.jobsOpen {
		return "", ""
	}
	if u, ok := ds.Utilization(devid); ok {
		util = u
	}
	if r, ok := ds.RejectBadMD5(devid); ok {
		reject = "0"
		if r {
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
	d, ok := ns.devByID[devid]
	if !ok {
		return d, perr("no_device")
	}
	if h, ok := ns.hostByID[d.HostID]; !ok || h.Name != hostname {
		return d, perr("host_mismatch")
	}
	return d, nil
}

func cmdSetWeight(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
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
	t.ns.invalidate()
	return nil, err
}

func cmdSetState(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
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
	t.ns.invalidate()
	return nil, err
}

func cmdReplicateNow(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	n, err := t.st.Expedite(ctx, store.QueueReplicate)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	res.Set("count", n)
	return res, nil
}

// ---- server settings ----

// settingCleaner is Config::server_setting_is_writable: it returns the
// canonical value (nil = delete the setting) or an error for a bad format;
// ok is false for keys clients may not write.
func settingCleaner(key string) (clean func(string) (*string, error), ok bool) {
	any := func(v string) (*string, error) { return &v, nil }
	delIfBlank := func(v string) (*string, error) {
		if !perlTrue(v) {
			return nil, nil
		}
		return &v, nil
	}
	boolean := func(v string) (*string, error) {
		if !perlTrue(v) {
			return sp("0"), nil
		}
		switch strings.ToLower(v[:1]) {
		case "0", "f", "n":
			return sp("0"), nil
		case "1", "t", "y":
			return sp("1"), nil
		}
		lv := strings.ToLower(v)
		if strings.HasPrefix(lv, "off") {
			return sp("0"), nil
		}
		if strings.HasPrefix(lv, "on") {
			return sp("1"), nil
		}
		return nil, errors.New("Unknown format")
	}
	num := func(v string) (*string, error) {
		if !perlTrue(v) {
			return sp("0"), nil
		}
		if allDigits(v) {
			return &v, nil
		}
		return nil, errors.New("Must be numeric")
	}
	netmasks := func(v string) (*string, error) {
		for _, n := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			if _, _, err := net.ParseCIDR(n); err != nil && net.ParseIP(n) == nil {
				return nil, errors.New("Doesn't match an acceptable netmask")
			}
		}
		return &v, nil
	}
	switch {
	case strings.HasPrefix(key, "slave_"):
		return delIfBlank, true
	case key == "skip_devcount", key == "skip_mkcol", key == "case_sensitive_list_keys":
		return boolean, true
	case key == "memcache_servers", key == "network_zones":
		return any, true
	case key == "memcache_ttl", key == "internal_queue_limit":
		return num, true
	case strings.HasPrefix(key, "zone_"):
		return netmasks, true
	case strings.HasPrefix(key, "queue_"):
		return any, true
	case key == "fsck_checksum":
		return func(v string) (*string, error) {
			switch {
			case v == "off":
				return sp("off"), nil
			case v == "class":
				return nil, nil
			case hashNames[v] != 0:
				return &v, nil
			}
			return nil, errors.New("Not a valid checksum algorithm")
		}, true
	}
	return nil, false
}

func settingReadable(key string) bool {
	return key == "fsck_checksum" || !strings.HasPrefix(key, "fsck_")
}

func cmdSetServerSetting(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	key := r.Args.Get("key")
	if !perlTrue(key) {
		return nil, perr("bad_params")
	}
	clean, ok := settingCleaner(key)
	if !ok {
		return nil, perr("not_writable")
	}
	v, err := clean(r.Args.Get("value"))
	if err != nil {
		return nil, perr("invalid_format", err.Error())
	}
	if err := t.setOrDelete(ctx, key, v); err != nil {
		return nil, err
	}
	if strings.HasPrefix(key, "slave_") {
		if _, err := t.st.IncrServerSetting(ctx, "slave_version", 1); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func cmdServerSetting(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	key := r.Args.Get("key")
	if !perlTrue(key) {
		return nil, perr("bad_params")
	}
	v, err := t.setting(ctx, key)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	res.Set("key", key)
	res.Set("value", v)
	return res, nil
}

func cmdServerSettings(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	all, err := t.st.ServerSettings(ctx)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		if settingReadable(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	res := &Reply{}
	for i, k := range keys {
		res.Set("key_count", i+1)
		res.Set(fmt.Sprintf("key_%d", i+1), k)
		res.Set(fmt.Sprintf("value_%d", i+1), all[k])
	}
	return res, nil
}

// ---- fsck ----
//
// fsck is driven through server settings, as the original's fsck worker
// reads them: fsck_host (running when set), fsck_highest_fid_checked,
// fsck_fid_at_end, fsck_start_time, fsck_stop_time, fsck_fids_checked,
// fsck_start_fid, fsck_opt_policy_only, fsck_start_maxlogid,
// fsck_logid_processed and the fsck_sum_evcount_<code> counters.

func (t *Tracker) intSetting(ctx context.Context, key string) (int64, error) {
	v, err := t.setting(ctx, key)
	return perlNum(v), err
}

func (t *Tracker) dbUnixTime(ctx context.Context) (string, error) {
	now, err := t.st.Now(ctx)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(now.Unix(), 10), nil
}

func cmdFsckStart(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	fsckHost, err := t.setting(ctx, "fsck_host")
	if err != nil {
		return nil, err
	}
	rebalHost, err := t.setting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	if perlTrue(fsckHost) {
		return nil, perr("fsck_running", "fsck is already running")
	}
	if perlTrue(rebalHost) {
		return nil, perr("rebal_running", "rebalance running; cannot run fsck at same time")
	}
	checked, err := t.intSetting(ctx, "fsck_highest_fid_checked")
	if err != nil {
		return nil, err
	}
	final, err := t.intSetting(ctx, "fsck_fid_at_end")
	if err != nil {
		return nil, err
	}
	if (checked != 0 && final != 0 && checked >= final) || (final == 0 && checked == 0) {
		if err := t.fsckReset(ctx); err != nil {
			t.log.Error("fsck reset", "err", err)
			return nil, perr("db")
		}
	}
	now, err := t.dbUnixTime(ctx)
	if err != nil {
		return nil, err
	}
	start, err := t.intSetting(ctx, "fsck_highest_fid_checked")
	if err != nil {
		return nil, err
	}
	for _, kv := range []struct {
		k string
		v *string
	}{
		{"fsck_start_time", &now},
		{"fsck_stop_time", nil},
		{"fsck_fids_checked", sp("0")},
		{"fsck_start_fid", sp(strconv.FormatInt(start, 10))},
		{"fsck_host", sp(t.host)},
	} {
		if err := t.setOrDelete(ctx, kv.k, kv.v); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func cmdFsckStop(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	if err := t.st.DeleteServerSetting(ctx, "fsck_host"); err != nil {
		return nil, err
	}
	now, err := t.dbUnixTime(ctx)
	if err != nil {
		return nil, err
	}
	return nil, t.st.SetServerSetting(ctx, "fsck_stop_time", now)
}

func cmdFsckReset(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	var policy *string
	if perlTrue(r.Args.Get("policy_only")) {
		policy = sp("1")
	}
	if err := t.setOrDelete(ctx, "fsck_opt_policy_only", policy); err != nil {
		return nil, err
	}
	start := "0"
	if perlTrue(r.Args.Get("startpos")) {
		start = r.Args.Get("startpos")
	}
	if err := t.st.SetServerSetting(ctx, "fsck_highest_fid_checked", start); err != nil {
		return nil, err
	}
	if err := t.fsckReset(ctx); err != nil {
		t.log.Error("fsck reset", "err", err)
		return nil, perr("db")
	}
	return nil, nil
}

// fsckReset is Query::_do_fsck_reset.
func (t *Tracker) fsckReset(ctx context.Context) error {
	maxFid, err := t.st.MaxFid(ctx)
	if err != nil {
		return err
	}
	for _, kv := range []struct {
		k string
		v *string
	}{
		{"fsck_start_time", nil},
		{"fsck_stop_time", nil},
		{"fsck_fids_checked", sp("0")},
		{"fsck_fid_at_end", sp(strconv.FormatInt(maxFid, 10))},
	} {
		if err := t.setOrDelete(ctx, kv.k, kv.v); err != nil {
			return err
		}
	}
	all, err := t.st.ServerSettings(ctx)
	if err != nil {
		return err
	}
	for k := range all {
		if strings.HasPrefix(k, "fsck_sum_evcount_") {
			if err := t.st.DeleteServerSetting(ctx, k); err != nil {
				return err
			}
		}
	}
	logid, err := t.maxFsckLogID(ctx, 0)
	if err != nil {
		return err
	}
	s := strconv.FormatInt(logid, 10)
	if err := t.st.SetServerSetting(ctx, "fsck_start_maxlogid", s); err != nil {
		return err
	}
	return t.st.SetServerSetting(ctx, "fsck_logid_processed", s)
}

// maxFsckLogID pages through fsck_log past `after` (the contract has no
// MAX(logid)); callers start from fsck_logid_processed to keep it short.
func (t *Tracker) maxFsckLogID(ctx context.Context, after int64) (int64, error) {
	for {
		evs, err := t.st.FsckEvents(ctx, after, 1000)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			return after, nil
		}
		after = evs[len(evs)-1].LogID
	}
}

// fsckSummarize is Store::fsck_log_summarize: fold log rows past
// fsck_logid_processed into fsck_sum_evcount_<code>, under the same named
// lock so two trackers never count a row twice. It returns the largest
// logid seen.
func (t *Tracker) fsckSummarize(ctx context.Context) (int64, error) {
	lock, err := t.st.Lock(ctx, "mgfs:fscksum", 10*time.Second)
	if err != nil {
		if errors.Is(err, store.ErrLockTimeout) {
			// Another tracker is summarizing; report what is there.
			return t.maxFsckLogID(ctx, 0)
		}
		return 0, err
	}
	defer lock.Release(context.WithoutCancel(ctx))
	processed, err := t.intSetting(ctx, "fsck_logid_processed")
	if err != nil {
		return 0, err
	}
	after := processed
	counts := map[string]int64{}
	for {
		evs, err := t.st.FsckEvents(ctx, after, 1000)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			counts[e.Code]++
		}
		after = evs[len(evs)-1].LogID
	}
	for code, n := range counts {
		if _, err := t.st.IncrServerSetting(ctx, "fsck_sum_evcount_"+code, n); err != nil {
			return 0, err
		}
	}
	if after != processed {
		if err := t.st.SetServerSetting(ctx, "fsck_logid_processed", strconv.FormatInt(after, 10)); err != nil {
			return 0, err
		}
	}
	return after, nil
}

func cmdFsckClearLog(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	return nil, t.st.ClearFsckLog(ctx)
}

func cmdFsckGetLog(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	evs, err := t.st.FsckEvents(ctx, perlNum(r.Args.Get("after_logid")), 100)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	for i, e := range evs {
		p := fmt.Sprintf("row_%d_", i+1)
		res.Set(p+"logid", e.LogID)
		res.Set(p+"utime", e.Time.Unix())
		res.Set(p+"fid", e.Fid)
		res.Set(p+"evcode", e.Code)
		if e.DevID != 0 {
			res.Set(p+"devid", e.DevID)
		}
	}
	res.Set("row_count", len(evs))
	return res, nil
}

func cmdFsckStatus(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	maxLog, err := t.fsckSummarize(ctx)
	if err != nil {
		return nil, err
	}
	all, err := t.st.ServerSettings(ctx)
	if err != nil {
		return nil, err
	}
	num := func(k string) int64 { return perlNum(all[k]) }
	now, err := t.dbUnixTime(ctx)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	running := 0
	if perlTrue(all["fsck_host"]) {
		running = 1
	}
	res.Set("running", running)
	res.Set("host", all["fsck_host"])
	res.Set("max_fid_checked", num("fsck_highest_fid_checked"))
	res.Set("policy_only", num("fsck_opt_policy_only"))
	res.Set("end_fid", num("fsck_fid_at_end"))
	res.Set("start_time", num("fsck_start_time"))
	res.Set("stop_time", num("fsck_stop_time"))
	res.Set("current_time", now)
	res.Set("max_logid", maxLog)
	var codes []string
	for k := range all {
		if strings.HasPrefix(k, "fsck_sum_evcount_") {
			codes = append(codes, k)
		}
	}
	sort.Strings(codes)
	for _, k := range codes {
		res.Set("num_"+strings.TrimPrefix(k, "fsck_sum_evcount_"), num(k))
	}
	return res, nil
}
