package cluster

import "sort"

// Placement: where an upload's first copies go (UploadDests) and where a
// file's further copies go (ReplPolicy.ReplicateTo, which the replicate
// worker, fsck, the trimmer and rebalance all ask), with the device
// predicates of device.go. The query commands and the workers decide
// nothing about placement themselves.

// ReplRequest is a replication policy's answer (ReplicationRequest.pm):
// Happy (nothing to do), TooHappy (more copies than wanted), or candidate
// destinations, Ideal ones first, Desperate ones (a host that already has
// a copy) second.
type ReplRequest struct {
	Happy, TooHappy  bool
	Ideal, Desperate []*Device
}

// ReplicateTo mirrors ReplicationPolicy::*::replicate_to: where replicas of
// a file go, for the replicate worker, fsck and the trimmer alike. on are the devices
// the fid lives on (as told to the policy), all the candidate devices,
// failed the destinations that failed this round.
//
// A Union asks its members in order and passes on the first one's request
// that is not happy; it is happy when all are, and too happy only when all
// are, so that trimming a copy never breaks one member for another's sake.
// (The original parses Union but its replicate_to dies "not implemented".)
func (p ReplPolicy) ReplicateTo(on []*Device, all map[int]*Device, failed map[int]bool, classMin int, set Settings) ReplRequest {
	if p.Kind == "Union" {
		tooHappy := true
		for _, m := range p.Members {
			rr := m.ReplicateTo(on, all, failed, classMin, set)
			if !rr.Happy {
				return rr
			}
			tooHappy = tooHappy && rr.TooHappy
		}
		return ReplRequest{Happy: true, TooHappy: tooHappy}
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
	dests := make([]*Device, 0, len(all))
	for _, d := range all {
		if !onDev[d.ID] && !failed[d.ID] && d.ShouldGetNewFiles(set) {
			dests = append(dests, d)
		}
	}
	sort.Slice(dests, func(i, j int) bool { return dests[i].PercentFree() > dests[j].PercentFree() })

	if p.Kind == "MultipleDevices" {
		if alreadyOn == min {
			return ReplRequest{Happy: true}
		}
		if alreadyOn > min {
			return ReplRequest{Happy: true, TooHappy: true}
		}
		if alreadyOn >= 2 && alreadyOn == totalDisks {
			return ReplRequest{Happy: true}
		}
		if len(dests) == 0 {
			return ReplRequest{}
		}
		return ReplRequest{Ideal: weightedTop(dests)}
	}

	if min == 1 && alreadyOn == 1 {
		return ReplRequest{Happy: true}
	}
	uniqOn := len(onHost)
	totalHosts := map[int]bool{}
	for _, d := range all {
		if d.NewFilesState() {
			totalHosts[d.HostID] = true
		}
	}
	if uniqOn > min || alreadyOn > min {
		return ReplRequest{Happy: true, TooHappy: true}
	}
	if uniqOn == min || (uniqOn >= len(totalHosts) && alreadyOn >= min) {
		return ReplRequest{Happy: true}
	}
	if alreadyOn >= 2 && alreadyOn == totalDisks {
		return ReplRequest{Happy: true}
	}
	skipHost := map[int]bool{}
	if uniqOn < len(totalHosts) {
		skipHost = onHost
	}
	if len(dests) == 0 {
		return ReplRequest{}
	}
	var ideal, desp []*Device
	for _, d := range dests {
		if skipHost[d.HostID] {
			desp = append(desp, d)
		} else {
			ideal = append(ideal, d)
		}
	}
	if alreadyOn >= min && len(ideal) == 0 {
		return ReplRequest{}
	}
	return ReplRequest{Ideal: weightedTop(ideal), Desperate: weightedTop(desp)}
}

// weightedTop shuffles the 20 emptiest devices, each drawn with probability
// proportional to its free fraction times its weight (Util::weighted_list).
// Devices whose weight comes out 0 (usage unknown, or weight 0) are left out,
// as the original leaves out devices of unknown usage.
func weightedTop(devs []*Device) []*Device {
	if len(devs) > 20 {
		devs = devs[:20]
	}
	return WeightedOrder(devs, func(d *Device) float64 {
		return 100 * d.PercentFree() * float64(d.Weight) / 100
	})
}

// UploadDests are the devices create_open offers for a new file of size
// bytes (0: unknown), want of them at most (multi_dest asks for 3), best
// first: only devices that should get new files (ShouldGetNewFiles: alive,
// host alive, observed writeable, min_free_space left); of those, the ones
// known to have room for size, else those of unknown usage; sorted by free
// space (usage unknown counts as half free), at most the 20 emptiest; then
// one device per host before a second device of any host, as the
// original's create_open did.
func UploadDests(devs []Device, size int64, want int, set Settings) []Device {
	if size > 0 {
		var known, unknown []Device
		for _, d := range devs {
			if free, ok := d.FreeMB(); ok {
				if free*1024*1024 > size {
					known = append(known, d)
				}
			} else {
				unknown = append(unknown, d)
			}
		}
		devs = known
		if len(devs) == 0 {
			devs = unknown
		}
	}
	type cand struct {
		d Device
		w float64
	}
	var cands []cand
	for _, d := range devs {
		if !d.ShouldGetNewFiles(set) {
			continue
		}
		w := 50.0
		if _, _, ok := d.UsageMB(); ok {
			w = 100 * d.PercentFree()
		}
		cands = append(cands, cand{d, w})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].w > cands[j].w })
	if len(cands) > 20 {
		cands = cands[:20]
	}
	ordered := WeightedOrder(cands, func(c cand) float64 { return c.w })
	var dests, rest []Device
	usedHost := map[int]bool{}
	for _, c := range ordered {
		if len(dests) == want {
			break
		}
		if usedHost[c.d.HostID] {
			rest = append(rest, c.d)
			continue
		}
		usedHost[c.d.HostID] = true
		dests = append(dests, c.d)
	}
	for _, d := range rest {
		if len(dests) == want {
			break
		}
		dests = append(dests, d)
	}
	return dests
}
