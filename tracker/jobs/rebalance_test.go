package jobs_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	model "github.com/gomogile/gomogile/tracker/internal/cluster"
)

// A device in state drain only stops receiving new files, as since 2.40:
// the job master moves nothing off it (gomogile once copied every file
// elsewhere and deleted it from the device).
func TestDrain_OnlyStopsNewFiles(t *testing.T) {
	c := threeNodes(t)
	ctx := t.Context()
	cls := c.class("c", 2, store.HashNone)
	var fids []int64
	for i := range 5 {
		fids = append(fids, c.putPlaced(fmt.Sprintf("k%d", i), cls, []byte(fmt.Sprintf("drain %d", i)), 1, 2))
	}
	if err := c.st.SetDeviceState(ctx, 1, store.DeviceDrain); err != nil {
		t.Fatal(err)
	}
	o := fastOptions(t)
	m := start(t, c.st, o)
	waitFor(t, 10*time.Second, "the monitor", func() bool { s, ok := m.Observed(3); return ok && s == "writeable" })
	// Many job master polls (QueuePoll) for it to queue anything.
	time.Sleep(40 * o.QueuePoll)
	if n := queueLen(t, c.st, store.QueueRebalance); n != 0 {
		t.Errorf("rebalance queue has %d rows; want nothing queued for a drain device", n)
	}
	for _, fid := range fids {
		if on := fileOn(t, c.st, fid); !slices.Equal(on, []int{1, 2}) {
			t.Errorf("fid %d on %v; want left on [1 2]", fid, on)
		}
		if !c.hasBlob(1, fid) {
			t.Errorf("dev1 lost fid %d", fid)
		}
	}
}

// threeNodes is a cluster of three storage nodes with one device each,
// dev1 to dev3.
func threeNodes(t *testing.T) *cluster {
	c := newCluster(t)
	for devid := 1; devid <= 3; devid++ {
		c.addNode(devid)
	}
	return c
}

// rigOf30 is the cluster of the original's t/30-rebalance.t: three hosts
// with two devices each, and files of a two-copy class (MultipleHosts by
// default) on two hosts, so that some already have a copy where a
// rebalance sends the others.
func rigOf30(t *testing.T) (c *cluster, fids []int64, hostOf map[int]int) {
	c = newCluster(t)
	hostOf = map[int]int{}
	for _, devs := range [][]int{{1, 2}, {3, 4}, {5, 6}} {
		n := c.addNode(devs...)
		for _, d := range devs {
			hostOf[d] = n.host.ID
		}
	}
	cls := c.class("2copies", 2, store.HashNone)
	for i, on := range [][]int{{1, 3}, {1, 5}, {2, 4}, {2, 6}, {1, 4}, {3, 5}, {2, 3}} {
		fids = append(fids, c.putPlaced(fmt.Sprintf("manyhundred_%d", i), cls, []byte(strings.Repeat(fmt.Sprintf("File number %d.\n", i), 128)), on...))
	}
	return c, fids, hostOf
}

// Issue 9: rebalances as an operator sets them up, with every key the
// policy leaves out at the original's default (to_all_devs=1,
// use_dest_devs=all, limit_by=none, ...), empty their source devices and
// keep each file at its two copies, with its blobs where file_on says.
func TestRebalance_TypicalPoliciesMoveEveryFile(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		emptied      []int // source devices left without a file
		to           []int // where every moved file has a copy afterwards; nil: anywhere else
	}{
		// What mogtool drain --move sets.
		{"FromDevice", "from_devices=1 leave_in_drain_mode=1", []int{1}, nil},
		// t/30-rebalance.t's policy: a file on host 1 whose other copy is
		// already on host 3 gets its second copy on host 3 too, as the
		// original's replicate() chooses within the targets (gomogile
		// kept it on host 1 before, with a third copy on host 3).
		{"FromHostToHost", "from_hosts=1 fid_age=old limit_type=device limit_by=none to_all_devs=0 to_hosts=3 leave_in_drain_mode=0", []int{1, 2}, []int{5, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, fids, _ := rigOf30(t)
			before := map[int64][]int{}
			for _, fid := range fids {
				before[fid] = fileOn(t, c.st, fid)
			}
			st := runRebalance(t, c, fastOptions(t), tc.policy, nil)
			if !strings.Contains(st, "completed_devs="+model.JoinInts(tc.emptied)) || strings.Contains(st, "time_finished=0") {
				t.Errorf("rebal_state = %q; want devices %v completed and the run finished", st, tc.emptied)
			}
			for _, devid := range tc.emptied {
				if left, err := c.st.FidsOnDevice(t.Context(), devid, 0, 100); err != nil || len(left) != 0 {
					t.Errorf("dev%d still holds %v (%v); want it emptied", devid, left, err)
				}
			}
			for _, fid := range fids {
				on := fileOn(t, c.st, fid)
				if len(on) != 2 {
					t.Errorf("fid %d on %v (was %v); want 2 copies", fid, on, before[fid])
				}
				moved := !slices.Equal(on, before[fid])
				for _, devid := range on {
					if !c.hasBlob(devid, fid) {
						t.Errorf("fid %d: file_on has dev%d but its blob is not there", fid, devid)
					}
					if moved && tc.to != nil && !slices.Contains(before[fid], devid) && !slices.Contains(tc.to, devid) {
						t.Errorf("fid %d moved to dev%d; want only to %v", fid, devid, tc.to)
					}
				}
				for _, devid := range tc.emptied {
					if c.hasBlob(devid, fid) {
						t.Errorf("fid %d: blob still on dev%d", fid, devid)
					}
				}
			}
			wantState := store.DeviceAlive
			if strings.Contains(tc.policy, "leave_in_drain_mode=1") {
				wantState = store.DeviceDrain
			}
			for _, devid := range tc.emptied {
				if s := deviceStatus(t, c.st, devid); s != wantState {
					t.Errorf("dev%d is %s after the run; want %s", devid, s, wantState)
				}
			}
		})
	}
}

// Issue 9: the default policy (no from_* or to_* list) makes every
// device a source, so no device is left to take a file: as in the
// original, nothing moves and the run goes on (rebal_host stays) until
// it is stopped. Unlike there, no device is put in drain meanwhile.
func TestRebalance_DefaultPolicyMovesNothing(t *testing.T) {
	c, fids, _ := rigOf30(t)
	ctx := t.Context()
	before := map[int64][]int{}
	for _, fid := range fids {
		before[fid] = fileOn(t, c.st, fid)
	}
	o := fastOptions(t)
	setSettings(t, c.st, map[string]string{"rebal_policy": "from_all_devs=1 to_all_devs=1", "rebal_host": o.Hostname})
	m := start(t, c.st, o)
	waitFor(t, 10*time.Second, "the monitor", func() bool { s, ok := m.Observed(6); return ok && s == "writeable" })
	// Many job master polls (QueuePoll) for it to queue or drain anything.
	time.Sleep(40 * o.QueuePoll)
	if n := queueLen(t, c.st, store.QueueRebalance); n != 0 {
		t.Errorf("rebalance queue has %d rows; want none: no device can take a file", n)
	}
	for devid := 1; devid <= 6; devid++ {
		if s := deviceStatus(t, c.st, devid); s != store.DeviceAlive {
			t.Errorf("dev%d is %s; want alive: a run with no destination drains nothing", devid, s)
		}
	}
	for _, fid := range fids {
		if on := fileOn(t, c.st, fid); !slices.Equal(on, before[fid]) {
			t.Errorf("fid %d on %v; want left on %v", fid, on, before[fid])
		}
	}
	if h, err := c.st.ServerSetting(ctx, "rebal_host"); err != nil || h != o.Hostname {
		t.Errorf("rebal_host = %q, %v; want the run still on %s until stopped", h, err, o.Hostname)
	}
	setSettings(t, c.st, map[string]string{"rebal_signal": "stop"})
	waitFor(t, 10*time.Second, "the stop", func() bool {
		_, err := c.st.ServerSetting(ctx, "rebal_host")
		return errors.Is(err, store.ErrNotFound)
	})
}

// A move the policy finds no place for (the only target already holds the
// file: policy_no_suggestions) leaves the copy where it is; its row leaves
// the queue and the run finishes, as in the original.
func TestRebalance_NoPlaceLeavesTheCopy(t *testing.T) {
	c := threeNodes(t)
	cls := c.class("c", 2, store.HashNone)
	stuck := c.putPlaced("stuck", cls, []byte("already on the target"), 1, 2)
	moves := c.putPlaced("moves", cls, []byte("has room on dev2"), 1, 3)
	st := runRebalance(t, c, fastOptions(t), "from_devices=1 to_devices=2", nil)
	if !strings.Contains(st, "completed_devs=1") || strings.Contains(st, "time_finished=0") || !strings.Contains(st, "fids_queued=2") {
		t.Errorf("rebal_state = %q; want dev1 completed, both fids queued, the run finished", st)
	}
	if on := fileOn(t, c.st, stuck); !slices.Equal(on, []int{1, 2}) || !c.hasBlob(1, stuck) {
		t.Errorf("fid %d on %v (blob on dev1: %v); want left on [1 2]", stuck, on, c.hasBlob(1, stuck))
	}
	if on := fileOn(t, c.st, moves); !slices.Equal(on, []int{2, 3}) || c.hasBlob(1, moves) {
		t.Errorf("fid %d on %v (blob on dev1: %v); want moved to [2 3]", moves, on, c.hasBlob(1, moves))
	}
}

// Rebalance policies moving a limited amount off one device.
func TestRebalance_PolicyLimits(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		moved        int
	}{
		{"DeviceCount", "from_devices=1 to_devices=3 limit_type=device limit_by=count limit=4", 4},
		{"GlobalSize", "from_devices=1 to_devices=3 limit_type=global limit_by=size limit=2k", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := threeNodes(t)
			ctx := t.Context()
			cls := c.class("c", 1, store.HashNone)
			for i := range 6 {
				c.putPlaced(fmt.Sprintf("k%d", i), cls, []byte(strings.Repeat(fmt.Sprint(i), 600)), 1)
			}
			st := runRebalance(t, c, fastOptions(t), tc.policy, nil)
			on1, _ := c.st.FidsOnDevice(ctx, 1, 0, 100)
			on2, _ := c.st.FidsOnDevice(ctx, 2, 0, 100)
			on3, _ := c.st.FidsOnDevice(ctx, 3, 0, 100)
			if len(on1) != 6-tc.moved || len(on3) != tc.moved || len(on2) != 0 {
				t.Errorf("dev1 %v, dev2 %v, dev3 %v; want %d left, none, %d moved", on1, on2, on3, 6-tc.moved, tc.moved)
			}
			for _, fid := range on3 {
				if c.hasBlob(1, fid) || !c.hasBlob(3, fid) {
					t.Errorf("fid %d: blob on dev1 %v, dev3 %v; want moved", fid, c.hasBlob(1, fid), c.hasBlob(3, fid))
				}
			}
			if s := deviceStatus(t, c.st, 1); s != store.DeviceAlive {
				t.Errorf("dev1 is %s after the rebalance; want alive again", s)
			}
			if !strings.Contains(st, "completed_devs=1") || !strings.Contains(st, fmt.Sprintf("fids_queued=%d", tc.moved)) {
				t.Errorf("rebal_state = %q; want dev1 completed, %d fids queued", st, tc.moved)
			}
		})
	}
}

// rebal_signal=stop ends a run: the device being emptied is alive again,
// rebal_host and the signal are cleared, the stop time recorded.
func TestRebalance_Stop(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	ctx := t.Context()
	if err := c.st.SetDeviceState(ctx, 1, store.DeviceDrain); err != nil {
		t.Fatal(err)
	}
	st := runRebalance(t, c, fastOptions(t), "from_devices=1", map[string]string{
		"rebal_state":  "completed_devs= source_devs= sdev_current=1 sdev_lastfid=0 fids_queued=0 time_stopped=0",
		"rebal_signal": "stop",
	})
	if _, err := c.st.ServerSetting(ctx, "rebal_signal"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rebal_signal still set: %v", err)
	}
	if s := deviceStatus(t, c.st, 1); s != store.DeviceAlive {
		t.Errorf("dev1 is %s; want alive after the stop", s)
	}
	if strings.Contains(st, "time_stopped=0") || !strings.Contains(st, "time_stopped=") {
		t.Errorf("rebal_state = %q; want a stop time", st)
	}
}

// rebalance_ignore_missing: a rebalanced file whose copy on the source
// device is already gone is forgotten there only with the setting; without
// it the delete fails and the source stays in file_on, as in the original.
func TestRebalance_IgnoreMissing(t *testing.T) {
	for _, ignore := range []bool{true, false} {
		t.Run(fmt.Sprint(ignore), func(t *testing.T) {
			c := threeNodes(t)
			ctx := t.Context()
			cls := c.class("c", 2, store.HashNone)
			fid := c.putPlaced("k", cls, []byte("moving"), 1, 2)
			if err := removeFile(c.blobPath(1, fid)); err != nil {
				t.Fatal(err)
			}
			if err := c.st.Enqueue(ctx, store.QueueRebalance, store.QueueEntry{Fid: fid, DevID: 1, Arg: "3"}); err != nil {
				t.Fatal(err)
			}
			o := fastOptions(t)
			o.RebalanceIgnoreMissing = ignore
			start(t, c.st, o)
			waitFor(t, 20*time.Second, "the rebalance row to be worked", func() bool {
				return queueLen(t, c.st, store.QueueRebalance) == 0 && c.hasBlob(3, fid)
			})
			on := fileOn(t, c.st, fid)
			if ignore && slices.Contains(on, 1) {
				t.Errorf("file_on = %v; want dev1 forgotten with rebalance_ignore_missing", on)
			}
			if !ignore && !slices.Contains(on, 1) {
				t.Errorf("file_on = %v; want dev1 kept without rebalance_ignore_missing", on)
			}
		})
	}
}

// Issue 9, point 10: a rebalance whose targets already hold the file never
// drops it below its mindevcount (the original deletes the source copy:
// 3 copies become 2).
func TestRebalance_TargetsHoldingTheFileKeepMinDevCount(t *testing.T) {
	c := threeNodes(t)
	cls := c.class("three", 3, store.HashNone)
	fid := c.putPlaced("k", cls, []byte("three copies"), 1, 2, 3)
	runRebalance(t, c, fastOptions(t), "from_devices=2 to_devices=1,3", nil)
	if on := fileOn(t, c.st, fid); !slices.Equal(on, []int{1, 2, 3}) {
		t.Errorf("file on %v after the rebalance; want [1 2 3] (mindevcount 3)", on)
	}
	if !c.hasBlob(2, fid) {
		t.Errorf("dev2's copy deleted")
	}
}
