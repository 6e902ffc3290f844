package jobs

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/gomogile/gomogile/store"
)

// trimSurplus deletes copies of fid beyond what its class's policy wants
// (a lowered mindevcount, a "too happy" file), as the original's
// replicator does, so that fsck stops reporting the file on every pass.
// A copy goes only if the policy is still satisfied without it and every
// copy that stays is there with the right size. Copies on hosts holding
// more than one go first, then those on the fullest devices. The caller
// holds the fid's replicate lock.
func (m *Manager) trimSurplus(ctx context.Context, fid int64) error {
	f, err := m.st.File(ctx, fid)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jobs: trim: read fid %d: %w", fid, err)
	}
	on, err := m.st.FileOn(ctx, fid)
	if err != nil {
		return fmt.Errorf("jobs: trim: file_on of fid %d: %w", fid, err)
	}
	w, err := m.loadWorld(ctx, on...)
	if err != nil {
		return err
	}
	cls := w.class(f)
	pol, err := parsePolicy(cls.ReplPolicy)
	if err != nil {
		return &replError{code: "policy_error", err: err}
	}
	var keep []*device
	for _, id := range on {
		if d, ok := w.devs[id]; ok && d.ShouldHaveFiles() && d.ShouldReadFrom() {
			keep = append(keep, d)
		}
	}
	for {
		if !pol.ReplicateTo(keep, w.devs, nil, cls.MinDevCount, w.set).TooHappy {
			return nil
		}
		perHost := map[int]int{}
		for _, d := range keep {
			perHost[d.HostID]++
		}
		cands := append([]*device(nil), keep...)
		sort.SliceStable(cands, func(i, j int) bool {
			if hi, hj := perHost[cands[i].HostID], perHost[cands[j].HostID]; hi != hj {
				return hi > hj
			}
			return cands[i].PercentFree() < cands[j].PercentFree()
		})
		var victim *device
		var rest []*device
		for _, c := range cands {
			rest = rest[:0]
			for _, d := range keep {
				if d.ID != c.ID {
					rest = append(rest, d)
				}
			}
			if rr := pol.ReplicateTo(rest, w.devs, nil, cls.MinDevCount, w.set); rr.Happy {
				victim = c
				break
			}
		}
		if victim == nil {
			return nil
		}
		for _, d := range rest {
			sz, err := m.nodes.Size(ctx, d.FidURL(fid, true))
			if err != nil || sz != f.Length {
				// A copy that stays is not what it should be: deleting
				// another one could lose the file. Leave it to fsck.
				return fmt.Errorf("jobs: trim fid %d: copy on dev%d unverified (size %d, %v)", fid, d.ID, sz, err)
			}
		}
		// Forget first, so that no reader is sent to a copy being deleted;
		// a delete that fails leaves only an unlisted blob.
		if err := m.forgetOnDevice(ctx, fid, victim.ID); err != nil {
			return err
		}
		if err := m.nodes.Remove(ctx, victim.FidURL(fid, false), true); err != nil {
			m.log.Warn("trim: delete surplus copy", "job", JobReplicate, "fid", fid, "dev", victim.ID, "err", err)
		}
		m.log.Info("trimmed a surplus copy", "job", JobReplicate, "fid", fid, "dev", victim.ID)
		keep = append([]*device(nil), rest...)
	}
}
