package cluster

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gomogile/gomogile/store"
)

// RebalPolicy is MogileFS::Rebalance's policy: the space-separated
// key=value list of the rebal_policy server setting, lists
// comma-separated. rebalance_set_policy, rebalance_test, rebalance_start
// and the job master all parse it with ParseRebalPolicy, so a policy the
// command accepts is one the worker runs.
type RebalPolicy struct {
	FromAllDevs, ToAllDevs           bool
	FromHosts, FromDevices           []int
	FromPercentUsed, FromPercentFree float64
	FromSpaceUsed, FromSpaceFree     int64
	FidAge                           string // "old" (only)
	LimitType                        string // "device" or "global"
	LimitBy                          string // "none", "count" or "size"
	Limit                            string
	ToHosts, ToDevices               []int
	NotToHosts, NotToDevices         []int
	ToPercentUsed, ToPercentFree     float64
	ToSpaceUsed, ToSpaceFree         int64
	UseDestDevs                      string // "all" or a number of candidates per fid
	LeaveInDrainMode                 bool
}

// PolicyError is a policy ParseRebalPolicy refuses. Its text is the
// original's where the original refuses the same policy (clients show it);
// errors.Is(err, store.ErrInvalid) holds.
type PolicyError struct{ Text string }

func (e *PolicyError) Error() string { return e.Text }
func (e *PolicyError) Unwrap() error { return store.ErrInvalid }

func truthy(s string) bool { return s != "" && s != "0" }

// ParseKV splits "k=v k=v" (rebal_policy, rebal_state). A value keeps
// nothing after a second '=', as Perl's split does in the original.
func ParseKV(s string) map[string]string {
	out := map[string]string{}
	for _, tup := range strings.Fields(s) {
		k, v, _ := strings.Cut(tup, "=")
		if i := strings.IndexByte(v, '='); i >= 0 {
			v = v[:i]
		}
		out[k] = v
	}
	return out
}

// IntList parses a comma-separated list of integers, skipping junk.
func IntList(v string) []int {
	var out []int
	for _, s := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// JoinInts is IntList's inverse.
func JoinInts(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}

// ParseRebalPolicy is Rebalance::_parse_settings against the original's
// default policy. It refuses unknown keys, as the original does, and the
// policies gomogile cannot run: fid_age other than old (fids on a device
// are listed ascending only) and limit_by other than none, count or size.
func ParseRebalPolicy(s string) (RebalPolicy, error) {
	p := RebalPolicy{FromAllDevs: true, ToAllDevs: true, FidAge: "old", LimitType: "device", LimitBy: "none", UseDestDevs: "all"}
	f := func(v string) float64 { x, _ := strconv.ParseFloat(v, 64); return x }
	n := func(v string) int64 { x, _ := strconv.ParseInt(v, 10, 64); return x }
	kv := ParseKV(s)
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := kv[k]
		switch k {
		case "from_all_devs":
			p.FromAllDevs = truthy(v)
		case "to_all_devs":
			p.ToAllDevs = truthy(v)
		case "from_hosts":
			p.FromHosts = IntList(v)
		case "from_devices":
			p.FromDevices = IntList(v)
		case "from_percent_used":
			p.FromPercentUsed = f(v)
		case "from_percent_free":
			p.FromPercentFree = f(v)
		case "from_space_used":
			p.FromSpaceUsed = n(v)
		case "from_space_free":
			p.FromSpaceFree = n(v)
		case "fid_age":
			p.FidAge = v
		case "limit_type":
			p.LimitType = v
		case "limit_by":
			p.LimitBy = v
		case "limit":
			p.Limit = v
		case "to_hosts":
			p.ToHosts = IntList(v)
		case "to_devices":
			p.ToDevices = IntList(v)
		case "to_percent_used":
			p.ToPercentUsed = f(v)
		case "to_percent_free":
			p.ToPercentFree = f(v)
		case "to_space_used":
			p.ToSpaceUsed = n(v)
		case "to_space_free":
			p.ToSpaceFree = n(v)
		case "not_to_hosts":
			p.NotToHosts = IntList(v)
		case "not_to_devices":
			p.NotToDevices = IntList(v)
		case "use_dest_devs":
			p.UseDestDevs = v
		case "leave_in_drain_mode":
			p.LeaveInDrainMode = truthy(v)
		default:
			return p, &PolicyError{"Invalid setting " + k}
		}
	}
	if p.FidAge != "old" {
		return p, &PolicyError{fmt.Sprintf("fid_age=%s is not supported by gomogile: only fid_age=old (files are taken oldest first)", p.FidAge)}
	}
	switch p.LimitBy {
	case "none", "count", "size":
	default:
		return p, &PolicyError{fmt.Sprintf("limit_by=%s is not supported: use none, count or size", p.LimitBy)}
	}
	if p.LimitBy != "none" {
		if _, err := p.LimitValue(); err != nil {
			return p, err
		}
	}
	return p, nil
}

// LimitValue is the policy's limit: a count, or bytes for limit_by=size.
func (p RebalPolicy) LimitValue() (int64, error) {
	switch p.LimitBy {
	case "size":
		return HumanToBytes(p.Limit)
	case "count":
		n, err := strconv.ParseInt(strings.TrimSpace(p.Limit), 10, 64)
		if err != nil {
			return 0, &PolicyError{fmt.Sprintf("limit=%q is not a count", p.Limit)}
		}
		return n, nil
	}
	return 0, nil
}

// HumanToBytes parses "100g", "5m", "1024" (Rebalance::_human_to_bytes).
func HumanToBytes(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	if s != "" {
		if i := strings.IndexByte("bkmgtp", s[len(s)-1]); i >= 0 {
			for ; i > 0; i-- {
				mult *= 1024
			}
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, &PolicyError{fmt.Sprintf("limit=%q is not a size", s)}
	}
	return n * mult, nil
}

// usageOK applies one side's percent and space limits.
func usageOK(d Device, pctUsed, pctFree float64, spaceUsed, spaceFree int64) bool {
	total, used, known := d.UsageMB()
	if pctUsed > 0 && (!known || float64(used)/float64(total)*100 <= pctUsed) {
		return false
	}
	if pctFree > 0 && (!known || d.PercentFree()*100 <= pctFree) {
		return false
	}
	if spaceUsed > 0 && (!known || used <= spaceUsed) {
		return false
	}
	if spaceFree > 0 && (!known || total-used <= spaceFree) {
		return false
	}
	return true
}

// SourceDevices is Rebalance::filter_source_devices over devs (by devid).
func (p RebalPolicy) SourceDevices(devs []Device) []int {
	var out []int
	for _, d := range devs {
		if !d.CanDeleteFrom() {
			continue
		}
		if len(p.FromDevices) > 0 && !slices.Contains(p.FromDevices, d.ID) {
			continue
		}
		if len(p.FromHosts) > 0 && !slices.Contains(p.FromHosts, d.HostID) {
			continue
		}
		if !usageOK(d, p.FromPercentUsed, p.FromPercentFree, p.FromSpaceUsed, p.FromSpaceFree) {
			continue
		}
		out = append(out, d.ID)
	}
	return out
}

// DestDevices is Rebalance::filter_dest_devices over devs (by devid):
// devices that should get new files under s, minus skip.
func (p RebalPolicy) DestDevices(devs []Device, s Settings, skip map[int]bool) []int {
	var out []int
	for _, d := range devs {
		if skip[d.ID] || !d.ShouldGetNewFiles(s) {
			continue
		}
		if len(p.ToDevices) > 0 && !slices.Contains(p.ToDevices, d.ID) {
			continue
		}
		if len(p.ToHosts) > 0 && !slices.Contains(p.ToHosts, d.HostID) {
			continue
		}
		if slices.Contains(p.NotToDevices, d.ID) || slices.Contains(p.NotToHosts, d.HostID) {
			continue
		}
		if !usageOK(d, p.ToPercentUsed, p.ToPercentFree, p.ToSpaceUsed, p.ToSpaceFree) {
			continue
		}
		out = append(out, d.ID)
	}
	return out
}

// RebalState is Rebalance.pm's saved progress (the rebal_state setting).
type RebalState struct {
	CompletedDevs, SourceDevs                    []int
	SdevCurrent                                  int
	SdevLastFid                                  int64
	SdevLimit, Limit                             int64
	FidsQueued, BytesQueued                      int64
	TimeStarted, TimeFinished, TimeStopped       int64
	TimeLatestRun, TimeLatestEmptyRun, EmptyRuns int64
}

// ParseRebalState reads a saved state; missing keys are zero.
func ParseRebalState(s string) RebalState {
	kv := ParseKV(s)
	n := func(k string) int64 { x, _ := strconv.ParseInt(kv[k], 10, 64); return x }
	return RebalState{
		CompletedDevs: IntList(kv["completed_devs"]), SourceDevs: IntList(kv["source_devs"]),
		SdevCurrent: int(n("sdev_current")), SdevLastFid: n("sdev_lastfid"), SdevLimit: n("sdev_limit"),
		Limit: n("limit"), FidsQueued: n("fids_queued"), BytesQueued: n("bytes_queued"),
		TimeStarted: n("time_started"), TimeFinished: n("time_finished"), TimeStopped: n("time_stopped"),
		TimeLatestRun: n("time_latest_run"), TimeLatestEmptyRun: n("time_latest_empty_run"), EmptyRuns: n("empty_runs"),
	}
}

// String is the state as Rebalance::save_state writes it, keys sorted.
func (s RebalState) String() string {
	kv := map[string]string{
		"completed_devs": JoinInts(s.CompletedDevs), "source_devs": JoinInts(s.SourceDevs),
		"sdev_current": strconv.Itoa(s.SdevCurrent), "sdev_lastfid": strconv.FormatInt(s.SdevLastFid, 10),
		"sdev_limit": strconv.FormatInt(s.SdevLimit, 10), "limit": strconv.FormatInt(s.Limit, 10),
		"fids_queued": strconv.FormatInt(s.FidsQueued, 10), "bytes_queued": strconv.FormatInt(s.BytesQueued, 10),
		"time_started": strconv.FormatInt(s.TimeStarted, 10), "time_finished": strconv.FormatInt(s.TimeFinished, 10),
		"time_stopped": strconv.FormatInt(s.TimeStopped, 10), "time_latest_run": strconv.FormatInt(s.TimeLatestRun, 10),
		"time_latest_empty_run": strconv.FormatInt(s.TimeLatestEmptyRun, 10), "empty_runs": strconv.FormatInt(s.EmptyRuns, 10),
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + kv[k]
	}
	return strings.Join(parts, " ")
}
