package tracker_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	model "github.com/gomogile/gomogile/tracker/internal/cluster"
)

// Issue 9: an operator empties a device as with mogadm — rebalance policy
// --options=from_devices=1 (every other key at the original's default),
// rebalance test, start, status until done — and every file leaves it for
// the other hosts, keeping its two copies, on every backend.
func TestRebalance_OperatorEmptiesADevice(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		e := startE2E(t, dsn, 1, 3, nil)
		tt := e.trackers[0]
		ctx := t.Context()
		c := tt.dial()
		var fids []int64
		onDev1 := 0
		for i := range 8 {
			fid := e.store(t, fmt.Sprintf("rebal/%d", i), []byte(fmt.Sprintf("file %d to move", i)))
			waitFor(t, 20*time.Second, "two copies", func() bool { return len(e.blobs(fid)) == 2 })
			if slices.Contains(e.blobs(fid), 1) {
				onDev1++
			}
			fids = append(fids, fid)
		}
		if onDev1 == 0 {
			t.Fatal("no file has a copy on dev1; nothing to move")
		}

		c.want("rebalance_set_policy policy=from_devices%3D1", "OK ")
		c.want("rebalance_test", "OK sdevs=1&ddevs=2,3")
		parseOK(t, c.do("rebalance_start"))
		c.want("rebalance_start", "ERR rebal_running rebalance+is+already+running")
		var status map[string]string
		var nonempty string
		waitFor(t, 30*time.Second, "the rebalance to finish", func() bool {
			// rebal_host first, as mogtool reads it: once it is gone the
			// queue holds every move the run will make.
			_, err := tt.st.ServerSetting(ctx, "rebal_host")
			r := parseOK(t, c.do("rebalance_status"))
			status, nonempty = model.ParseKV(r.Get("state")), r.Get("nonempty_devs")
			return errors.Is(err, store.ErrNotFound) && r.Get("queue_length") == "0" && status["time_finished"] != "0"
		})
		if status["completed_devs"] != "1" || status["fids_queued"] != fmt.Sprint(onDev1) || nonempty != "" {
			t.Errorf("rebalance_status: state %v, nonempty_devs %q; want dev1 completed, %d fids queued, none left", status, nonempty, onDev1)
		}
		for _, fid := range fids {
			on, err := tt.st.FileOn(ctx, fid)
			if err != nil {
				t.Fatal(err)
			}
			if blobs := e.blobs(fid); len(on) != 2 || slices.Contains(on, 1) || !slices.Equal(on, blobs) {
				t.Errorf("fid %d: file_on %v, blobs on %v; want two copies, none on dev1", fid, on, blobs)
			}
		}
		if got := parseOK(t, c.do("get_devices")).Get("dev1_status"); got != "alive" {
			t.Errorf("dev1_status = %q; want alive again after the run", got)
		}
		c.want("rebalance_stop", "ERR rebal_not_started Rebalance+not+running")
	})
}
