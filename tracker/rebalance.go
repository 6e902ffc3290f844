package tracker

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Rebalance is driven through server settings read by the rebalance
// worker, as in MogileFS::Rebalance: rebal_policy (the operator's policy
// string), rebal_state (the worker's saved progress), rebal_host (set while
// running) and rebal_signal ("stop").

// rebalPolicyDefaults are MogileFS::Rebalance's %default_policy; a policy
// may only name these keys. List values are comma-separated.
var rebalPolicyDefaults = map[string]string{
	"from_all_devs": "1", "from_hosts": "", "from_devices": "", "from_percent_used": "",
	"from_percent_free": "", "from_space_used": "", "from_space_free": "", "fid_age": "old",
	"limit_type": "device", "limit_by": "none", "limit": "", "to_all_devs": "1",
	"to_hosts": "", "to_devices": "", "to_percent_used": "", "to_percent_free": "",
	"to_space_used": "", "to_space_free": "", "not_to_hosts": "", "not_to_devices": "",
	"use_dest_devs": "all", "leave_in_drain_mode": "0",
}

// parseRebalPolicy is Rebalance::_parse_settings against the defaults.
func parseRebalPolicy(s string) (map[string]string, error) {
	p := map[string]string{}
	for k, v := range rebalPolicyDefaults {
		p[k] = v
	}
	for _, tuple := range strings.Fields(s) {
		k, v, _ := strings.Cut(tuple, "=")
		if _, ok := rebalPolicyDefaults[k]; !ok {
			return nil, fmt.Errorf("Invalid setting %s", k)
		}
		if i := strings.IndexByte(v, '='); i >= 0 {
			v = v[:i]
		}
		p[k] = v
	}
	return p, nil
}

func intList(s string) map[int]bool {
	out := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			out[n] = true
		}
	}
	return out
}

func numOpt(p map[string]string, k string) (float64, bool) {
	v, err := strconv.ParseFloat(p[k], 64)
	return v, err == nil && v != 0
}

// canDeleteFrom is Device::can_delete_from: host alive, device writable.
func canDeleteFrom(ns *namespace, d store.Device) bool {
	h, ok := ns.hostByID[d.HostID]
	return ok && h.Status == store.HostAlive && (d.Status == store.DeviceAlive || d.Status == store.DeviceDrain)
}

// usageFilter applies the from_/to_ percent and space limits of a policy.
func usageFilter(p map[string]string, prefix string, d store.Device) bool {
	pctFull, pctFree := -1.0, 0.0
	if d.MBTotal > 0 {
		pctFull = 100 * float64(d.MBUsed) / float64(d.MBTotal)
		pctFree = 100 - pctFull
	}
	if v, ok := numOpt(p, prefix+"percent_used"); ok && (pctFull < 0 || pctFull <= v) {
		return false
	}
	if v, ok := numOpt(p, prefix+"percent_free"); ok && (pctFree == 0 || pctFree <= v) {
		return false
	}
	if v, ok := numOpt(p, prefix+"space_used"); ok && (d.MBUsed == 0 || float64(d.MBUsed) <= v) {
		return false
	}
	if v, ok := numOpt(p, prefix+"space_free"); ok {
		free, known := mbFree(d)
		if !known || free == 0 || float64(free) <= v {
			return false
		}
	}
	return true
}

func rebalSourceDevs(ns *namespace, p map[string]string) []int {
	devs, hosts := intList(p["from_devices"]), intList(p["from_hosts"])
	var out []int
	for _, d := range ns.devices {
		if !canDeleteFrom(ns, d) {
			continue
		}
		if len(devs) > 0 && !devs[d.ID] {
			continue
		}
		if len(hosts) > 0 && !hosts[d.HostID] {
			continue
		}
		if !usageFilter(p, "from_", d) {
			continue
		}
		out = append(out, d.ID)
	}
	return out
}

func (t *Tracker) rebalDestDevs(ns *namespace, p map[string]string, exclude []int) []int {
	skip := map[int]bool{}
	for _, id := range exclude {
		skip[id] = true
	}
	to, toHosts := intList(p["to_devices"]), intList(p["to_hosts"])
	notTo, notToHosts := intList(p["not_to_devices"]), intList(p["not_to_hosts"])
	var out []int
	for _, d := range ns.devices {
		if skip[d.ID] || !t.shouldGetNewFiles(ns, d) {
			continue
		}
		if len(to) > 0 && !to[d.ID] || len(toHosts) > 0 && !toHosts[d.HostID] {
			continue
		}
		if notTo[d.ID] || notToHosts[d.HostID] {
			continue
		}
		if !usageFilter(p, "to_", d) {
			continue
		}
		out = append(out, d.ID)
	}
	return out
}

// rebalInitialState is Rebalance::init followed by save_state: the
// %default_state keys with the discovered source devices and start time.
func rebalInitialState(sources []int, now time.Time) string {
	st := map[string]string{
		"completed_devs": "", "source_devs": joinInts(sources), "sdev_current": "0",
		"sdev_lastfid": "0", "sdev_limit": "0", "limit": "0", "fids_queued": "0",
		"bytes_queued": "0", "time_started": strconv.FormatInt(now.Unix(), 10), "time_finished": "0",
		"time_stopped": "0", "time_latest_run": "0", "time_latest_empty_run": "0", "empty_runs": "0",
	}
	keys := make([]string, 0, len(st))
	for k := range st {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + st[k]
	}
	return strings.Join(parts, " ")
}

func cmdRebalanceStatus(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	state, err := t.setting(ctx, "rebal_state")
	if err != nil {
		return nil, err
	}
	if !perlTrue(state) {
		return nil, perr("no_rebal_state")
	}
	res := &Reply{}
	res.Set("state", state)
	return res, nil
}

func cmdRebalanceStart(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	rebalHost, err := t.setting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	fsckHost, err := t.setting(ctx, "fsck_host")
	if err != nil {
		return nil, err
	}
	if perlTrue(rebalHost) {
		return nil, perr("rebal_running", "rebalance is already running")
	}
	if perlTrue(fsckHost) {
		return nil, perr("fsck_running", "fsck running; cannot run rebalance at same time")
	}
	state, err := t.setting(ctx, "rebal_state")
	if err != nil {
		return nil, err
	}
	if !perlTrue(state) {
		p, err := t.rebalPolicy(ctx)
		if err != nil {
			return nil, err
		}
		ns, err := t.fresh(ctx)
		if err != nil {
			return nil, err
		}
		now, err := t.st.Now(ctx)
		if err != nil {
			return nil, err
		}
		state = rebalInitialState(rebalSourceDevs(ns, p), now)
		if err := t.st.SetServerSetting(ctx, "rebal_state", state); err != nil {
			return nil, err
		}
	}
	if err := t.st.SetServerSetting(ctx, "rebal_host", t.host); err != nil {
		return nil, err
	}
	res := &Reply{}
	res.Set("state", state)
	return res, nil
}

// rebalPolicy reads and parses the stored rebal_policy, refusing with the
// original's error codes when it is missing or malformed.
func (t *Tracker) rebalPolicy(ctx context.Context) (map[string]string, error) {
	pol, err := t.setting(ctx, "rebal_policy")
	if err != nil {
		return nil, err
	}
	if !perlTrue(pol) {
		return nil, perr("no_rebal_policy")
	}
	p, err := parseRebalPolicy(pol)
	if err != nil {
		return nil, perr("bad_rebal_pol", err.Error())
	}
	return p, nil
}

func cmdRebalanceTest(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	p, err := t.rebalPolicy(ctx)
	if err != nil {
		return nil, err
	}
	ns, err := t.fresh(ctx)
	if err != nil {
		return nil, err
	}
	sdevs := rebalSourceDevs(ns, p)
	res := &Reply{}
	res.Set("sdevs", joinInts(sdevs))
	res.Set("ddevs", joinInts(t.rebalDestDevs(ns, p, sdevs)))
	return res, nil
}

func cmdRebalanceReset(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	host, err := t.setting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	if perlTrue(host) {
		return nil, perr("rebal_running", "rebalance is running")
	}
	return nil, t.st.DeleteServerSetting(ctx, "rebal_state")
}

func cmdRebalanceStop(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	host, err := t.setting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	if !perlTrue(host) {
		return nil, perr("rebal_not_started")
	}
	return nil, t.st.SetServerSetting(ctx, "rebal_signal", "stop")
}

func cmdRebalanceSetPolicy(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	host, err := t.setting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	if perlTrue(host) {
		return nil, perr("no_set_rebal", "cannot change rebalance policy while rebalance is running")
	}
	pol := r.Args.Get("policy")
	if _, err := parseRebalPolicy(pol); err != nil {
		return nil, perr("bad_rebal_pol", err.Error())
	}
	if err := t.st.SetServerSetting(ctx, "rebal_policy", pol); err != nil {
		return nil, err
	}
	return nil, t.st.DeleteServerSetting(ctx, "rebal_state")
}
