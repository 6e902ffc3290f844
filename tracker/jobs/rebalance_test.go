package jobs_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// A device in state drain only stops receiving new files, as since 2.40:
// the job master moves nothing off it (gomogile once copied every file
// elsewhere and deleted it from the device).
func TestDrain_OnlyStopsNewFiles(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	c.addNode(3)
	ctx := t.Context()
	cls := c.class("c", 2, store.HashNone)
	var fids []int64
	for i := range 5 {
		fid := c.putFile(fmt.Sprintf("k%d", i), cls, []byte(fmt.Sprintf("drain %d", i)), 1, 2)
		if err := c.st.Finish(ctx, store.QueueReplicate, fid); err != nil {
			t.Fatal(err)
		}
		fids = append(fids, fid)
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
			c := newCluster(t)
			c.addNode(1)
			c.addNode(2)
			c.addNode(3)
			ctx := t.Context()
			cls := c.class("c", 1, store.HashNone)
			for i := range 6 {
				fid := c.putFile(fmt.Sprintf("k%d", i), cls, []byte(strings.Repeat(fmt.Sprint(i), 600)), 1)
				if err := c.st.Finish(ctx, store.QueueReplicate, fid); err != nil {
					t.Fatal(err)
				}
			}
			o := fastOptions(t)
			for k, v := range map[string]string{"rebal_policy": tc.policy, "rebal_host": o.Hostname} {
				if err := c.st.SetServerSetting(ctx, k, v); err != nil {
					t.Fatal(err)
				}
			}
			start(t, c.st, o)
			waitFor(t, 20*time.Second, "the rebalance to finish", func() bool {
				_, err := c.st.ServerSetting(ctx, "rebal_host")
				return errors.Is(err, store.ErrNotFound) && queueLen(t, c.st, store.QueueRebalance) == 0
			})
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
			devs, _ := c.st.Devices(ctx)
			for _, d := range devs {
				if d.ID == 1 && d.Status != store.DeviceAlive {
					t.Errorf("dev1 is %s after the rebalance; want alive again", d.Status)
				}
			}
			st, err := c.st.ServerSetting(ctx, "rebal_state")
			if err != nil || !strings.Contains(st, "completed_devs=1") || !strings.Contains(st, fmt.Sprintf("fids_queued=%d", tc.moved)) {
				t.Errorf("rebal_state = %q, %v; want dev1 completed, %d fids queued", st, err, tc.moved)
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
	o := fastOptions(t)
	for k, v := range map[string]string{
		"rebal_policy": "from_devices=1",
		"rebal_state":  "completed_devs= source_devs= sdev_current=1 sdev_lastfid=0 fids_queued=0 time_stopped=0",
		"rebal_host":   o.Hostname,
		"rebal_signal": "stop",
	} {
		if err := c.st.SetServerSetting(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	start(t, c.st, o)
	waitFor(t, 10*time.Second, "the stop", func() bool {
		_, err := c.st.ServerSetting(ctx, "rebal_host")
		return errors.Is(err, store.ErrNotFound)
	})
	if _, err := c.st.ServerSetting(ctx, "rebal_signal"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rebal_signal still set: %v", err)
	}
	devs, _ := c.st.Devices(ctx)
	for _, d := range devs {
		if d.ID == 1 && d.Status != store.DeviceAlive {
			t.Errorf("dev1 is %s; want alive after the stop", d.Status)
		}
	}
	st, _ := c.st.ServerSetting(ctx, "rebal_state")
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
			c := newCluster(t)
			c.addNode(1)
			c.addNode(2)
			c.addNode(3)
			ctx := t.Context()
			cls := c.class("c", 2, store.HashNone)
			fid := c.putFile("k", cls, []byte("moving"), 1, 2)
			if err := c.st.Finish(ctx, store.QueueReplicate, fid); err != nil {
				t.Fatal(err)
			}
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
	c := newCluster(t)
	c.addNode(1)
	c.addNode(2)
	c.addNode(3)
	ctx := t.Context()
	cls := c.class("three", 3, store.HashNone)
	fid := c.putFile("k", cls, []byte("three copies"), 1, 2, 3)
	if err := c.st.Finish(ctx, store.QueueReplicate, fid); err != nil {
		t.Fatal(err)
	}
	o := fastOptions(t)
	for k, v := range map[string]string{"rebal_policy": "from_devices=2 to_devices=1,3", "rebal_host": o.Hostname} {
		if err := c.st.SetServerSetting(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	start(t, c.st, o)
	waitFor(t, 20*time.Second, "the rebalance to finish", func() bool {
		_, err := c.st.ServerSetting(ctx, "rebal_host")
		return errors.Is(err, store.ErrNotFound) && queueLen(t, c.st, store.QueueRebalance) == 0
	})
	if on := fileOn(t, c.st, fid); !slices.Equal(on, []int{1, 2, 3}) {
		t.Errorf("file on %v after the rebalance; want [1 2 3] (mindevcount 3)", on)
	}
	if !c.hasBlob(2, fid) {
		t.Errorf("dev2's copy deleted")
	}
}
