package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gomogile/gomogile/store"
)

// deleteWorker works the delete queue (Worker::Delete::process_deletes2).
func (m *Manager) deleteWorker(stop context.Context) {
	m.queueWorker(stop, JobDelete, []store.Queue{store.QueueDelete}, m.deleteItem)
}

// deleteItem removes every copy of a deleted fid: an HTTP DELETE on each
// device (404 counts as done), then its file_on row; once no row is left,
// the checksum row and the queue row go. Copies it cannot delete now put
// the row off, by how the device looks, as the original does.
func (m *Manager) deleteItem(ctx context.Context, it store.QueueItem) error {
	q := store.QueueDelete
	// A fid being replicated is left alone until the copy is done, so no
	// blob is written after we delete it.
	l, err := m.lockFid(ctx, it.Fid)
	if errors.Is(err, store.ErrLockTimeout) {
		return m.reschedule(ctx, q, it.Fid, time.Second, false)
	}
	if err != nil {
		return err
	}
	defer m.release(l)
	ctx = store.WithFence(ctx, l)

	on, err := m.st.FileOn(ctx, it.Fid)
	if err != nil {
		return fmt.Errorf("jobs: file_on of fid %d: %w", it.Fid, err)
	}
	w, err := m.loadWorld(ctx, on...)
	if err != nil {
		return err
	}
	fc := time.Duration(it.FailCount)
	left := 0
	var delay time.Duration
	var firstErr error
	failed := false
	putOff := func(d time.Duration, fail bool) {
		left++
		failed = failed || fail
		if delay == 0 || d < delay {
			delay = d
		}
	}
	for _, devid := range on {
		d, ok := w.devs[devid]
		if !ok || d.dead() {
			// No such device, or its files are gone for good.
			if err := m.forgetOnDevice(ctx, it.Fid, devid); err != nil {
				return err
			}
			continue
		}
		if d.unobserved() {
			// Not checked yet (new device, or we just started): no
			// failure, look again once the monitor has.
			putOff(m.settleDelay(), false)
			continue
		}
		if !d.observedWriteable() {
			putOff((10+fc)*time.Minute, true)
			continue
		}
		if !d.canDeleteFrom() {
			putOff((1+fc)*time.Hour, true)
			continue
		}
		if err := m.nodes.remove(ctx, d.fidURL(it.Fid, false)); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if firstErr == nil {
				firstErr = err
			}
			putOff((1+fc)*30*time.Minute, true)
			continue
		}
		if err := m.forgetOnDevice(ctx, it.Fid, devid); err != nil {
			return err
		}
	}
	if left > 0 {
		if err := m.reschedule(ctx, q, it.Fid, delay, failed); err != nil {
			return err
		}
		return firstErr
	}
	if err := m.st.DeleteChecksum(ctx, it.Fid); err != nil {
		return fmt.Errorf("jobs: delete checksum of fid %d: %w", it.Fid, err)
	}
	return m.finish(ctx, q, it.Fid)
}
