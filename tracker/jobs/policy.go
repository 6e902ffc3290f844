package jobs

import (
	"fmt"
	"sort"

	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// replRequest is a replication policy's answer (ReplicationRequest.pm):
// happy (nothing to do), tooHappy (more copies than wanted), or candidate
// destinations, ideal ones first, desperate ones (same host again) second.
type replRequest struct {
	happy, tooHappy bool
	ideal, desp     []*device
}

// policy is a parsed class.replpolicy, with the worker's decisions.
type policy struct{ cluster.ReplPolicy }

// parsePolicy is cluster.ParseReplPolicy in the worker's terms.
func parsePolicy(s string) (policy, error) {
	p, err := cluster.ParseReplPolicy(s)
	if err != nil {
		return policy{}, fmt.Errorf("jobs: unsupported replication policy: %w", err)
	}
	return policy{p}, nil
}

// replicateTo mirrors ReplicationPolicy::*::replicate_to. on are the devices
// the fid lives on (as told to the policy), all the candidate devices,
// failed the destinations that failed this round.
//
// A Union asks its members in order and passes on the first one's request
// that is not happy; it is happy when all are, and too happy only when all
// are, so that trimming a copy never breaks one member for another's sake.
// (The original parses Union but its replicate_to dies "not implemented".)
func (p policy) replicateTo(on []*device, all map[int]*device, failed map[int]bool, classMin int, set cluster.Settings) replRequest {
	if p.Kind == "Union" {
		tooHappy := true
		for _, m := range p.Members {
			rr := policy{m}.replicateTo(on, all, failed, classMin, set)
			if !rr.happy {
				return rr
			}
			tooHappy = tooHappy && rr.tooHappy
		}
		return replRequest{happy: true, tooHappy: tooHappy}
	}
	min := classMin
	if p.Min > 0 {
		min = p.Min
	}
	alreadyOn := len(on)
	totalDisks := 0
	for _, d := range all {
		if d.ShouldHaveFiles() {
			totalDisks++
		}
	}
	onDev := map[int]bool{}
	onHost := map[int]bool{}
	for _, d := range on {
		onDev[d.ID] = true
		onHost[d.HostID] = true
	}
	dests := make([]*device, 0, len(all))
	for _, d := range all {
		if !onDev[d.ID] && !failed[d.ID] && d.ShouldGetNewFiles(set) {
			dests = append(dests, d)
		}
	}
	sort.Slice(dests, func(i, j int) bool { return dests[i].PercentFree() > dests[j].PercentFree() })

	if p.Kind == "MultipleDevices" {
		if alreadyOn == min {
			return replRequest{happy: true}
		}
		if alreadyOn > min {
			return replRequest{happy: true, tooHappy: true}
		}
		if alreadyOn >= 2 && alreadyOn == totalDisks {
			return replRequest{happy: true}
		}
		if len(dests) == 0 {
			return replRequest{}
		}
		return replRequest{ideal: weightedTop(dests)}
	}

	if min == 1 && alreadyOn == 1 {
		return replRequest{happy: true}
	}
	uniqOn := len(onHost)
	totalHosts := map[int]bool{}
	for _, d := range all {
		if d.NewFilesState() {
			totalHosts[d.HostID] = true
		}
	}
	if uniqOn > min || alreadyOn > min {
		return replRequest{happy: true, tooHappy: true}
	}
	if uniqOn == min || (uniqOn >= len(totalHosts) && alreadyOn >= min) {
		return replRequest{happy: true}
	}
	if alreadyOn >= 2 && alreadyOn == totalDisks {
		return replRequest{happy: true}
	}
	skipHost := map[int]bool{}
	if uniqOn < len(totalHosts) {
		skipHost = onHost
	}
	if len(dests) == 0 {
		return replRequest{}
	}
	var ideal, desp []*device
	for _, d := range dests {
		if skipHost[d.HostID] {
			desp = append(desp, d)
		} else {
			ideal = append(ideal, d)
		}
	}
	if alreadyOn >= min && len(ideal) == 0 {
		return replRequest{}
	}
	return replRequest{ideal: weightedTop(ideal), desp: weightedTop(desp)}
}

// weightedTop shuffles the 20 emptiest devices, each drawn with probability
// proportional to its free fraction times its weight (Util::weighted_list).
// Devices whose weight comes out 0 (usage unknown, or weight 0) are left out,
// as the original leaves out devices of unknown usage.
func weightedTop(devs []*device) []*device {
	if len(devs) > 20 {
		devs = devs[:20]
	}
	return cluster.WeightedOrder(devs, func(d *device) float64 {
		return 100 * d.PercentFree() * float64(d.Weight) / 100
	})
}
