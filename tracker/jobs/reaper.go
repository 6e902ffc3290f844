package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gomogile/gomogile/store"
)

const (
	tempfilesLock    = "mgfs:tempfiles"
	reaperLock       = "mgfs:reaper"
	reaperLockWait   = 10 * time.Second
	tempfileBatch    = 50   // rows per read of expired tempfiles (old_tempfiles' LIMIT)
	reaperInjectRate = 1000 // queue_rate_for_reaper's default
)

// How fast the reaper must reap abandoned uploads.
//
// A tracker lets at most max_open_uploads (10,000 by default) uploads be
// open at once, and an abandoned upload's slot comes back only once its
// tempfile row is gone, which the reaper does no sooner than TempFileTTL
// (tempfile_ttl, 3,600 s) after create_open. So one tracker leaves at most
// 10,000 / 3,600 s = 2.8 abandoned tempfiles a second, N trackers 2.8·N.
//
// The original reaped one read of 50 rows per pass, every 5 s: at most
// 10 a second, fewer than 4 trackers at these limits leave, so a steady
// flood would have outgrown it. A pass now reads batch after batch of
// tempfileBatch until no expired row is left or it has used half of
// PassTimeout (30 s), and a pass cut short by that budget is followed by
// the next at once, not after ReaperInterval. The reaper's capacity is
// then the database's speed for one row: File, DeleteTempFile, the devcount
// lock with AddFileOn per offered device (1 to 3), and Enqueue, under ten
// statements, a few milliseconds, so hundreds of rows a second: the limits
// of a hundred trackers at the defaults, or one tracker's with tempfile_ttl
// down to tens of seconds (10,000 / 30 s = 333/s).
//
// Should the database be slower than what the limits allow, rows still do
// not pile up: slots come back only once rows are gone, so create_open is
// refused meanwhile. The limits bound the rows; the reaper's speed decides
// how soon an abandoned upload's slot returns.

// reaperLoop cleans up abandoned uploads and the file_on rows of dead
// devices every ReaperInterval, at once again while expired uploads remain.
func (m *Manager) reaperLoop(ctx context.Context) {
	jc := m.classes[JobReaper]
	log := m.log.With("job", JobReaper)
	t := time.NewTicker(m.opts.ReaperInterval)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, m.opts.PassTimeout)
		more, err := m.reapTempFiles(pctx, m.tempfileBudget)
		if err == nil {
			err = m.reapDeadDevices(pctx, log)
		}
		cancel()
		if err != nil {
			if isCtxErr(ctx, err) {
				return
			}
			jc.errors.Add(1)
			log.Error("pass", "err", err)
		}
		jc.processed.Add(1)
		if more && err == nil {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wakeOf(ctx):
		}
	}
}

// reapTempFiles handles tempfiles older than TempFileTTL, whose client
// never called create_close (Worker::Delete::process_tempfiles): their
// blobs may exist on the offered devices, so those devices are recorded in
// file_on and the fid is queued for deletion; the delete worker then
// removes whatever was uploaded (404 counting as done). One tracker at a
// time does it (mgfs:tempfiles). It reads batches until none is left or
// budget has passed; more reports expired rows left over.
func (m *Manager) reapTempFiles(ctx context.Context, budget time.Duration) (more bool, err error) {
	l, err := m.st.Lock(ctx, tempfilesLock, 0)
	if errors.Is(err, store.ErrLockTimeout) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("jobs: lock %s: %w", tempfilesLock, err)
	}
	defer m.release(l)
	ctx = store.WithFence(ctx, l)
	start := time.Now()
	for {
		tfs, err := m.st.ExpiredTempFiles(ctx, m.opts.TempFileTTL, tempfileBatch)
		if err != nil {
			return false, fmt.Errorf("jobs: expired tempfiles: %w", err)
		}
		for _, tf := range tfs {
			if err := m.reapTempFile(ctx, tf); err != nil {
				return false, err
			}
		}
		if len(tfs) < tempfileBatch {
			return false, nil
		}
		if time.Since(start) >= budget {
			return true, nil
		}
	}
}

// reapTempFile turns one expired tempfile into a deletion.
func (m *Manager) reapTempFile(ctx context.Context, tf store.TempFile) error {
	_, ferr := m.st.File(ctx, tf.Fid)
	if ferr != nil && !errors.Is(ferr, store.ErrNotFound) {
		return fmt.Errorf("jobs: read fid %d: %w", tf.Fid, ferr)
	}
	// Delete the row first: from then on create_close cannot commit
	// this fid, so we never queue a live file's blobs for deletion.
	if err := m.st.DeleteTempFile(ctx, tf.Fid); errors.Is(err, store.ErrNotFound) {
		return nil // committed or reaped meanwhile
	} else if err != nil {
		return fmt.Errorf("jobs: delete tempfile %d: %w", tf.Fid, err)
	}
	if ferr == nil {
		// A file row exists (a leftover of a race): keep its blobs.
		return nil
	}
	for _, devid := range tf.DevIDs {
		if err := m.noteOnDevice(ctx, tf.Fid, devid); err != nil {
			return err
		}
	}
	if err := m.st.Enqueue(ctx, store.QueueDelete, store.QueueEntry{Fid: tf.Fid}); err != nil {
		return fmt.Errorf("jobs: queue tempfile %d for deletion: %w", tf.Fid, err)
	}
	return nil
}

// reaperInjectLimit is Reaper::reaper_inject_limit: queue_rate_for_reaper
// fids (1000) per device and pass, and with queue_size_for_reaper set no
// more than what keeps the replicate queue at that length.
func (m *Manager) reaperInjectLimit(ctx context.Context) (int64, error) {
	limit := m.intSetting(ctx, "queue_rate_for_reaper", reaperInjectRate)
	if limit <= 0 {
		limit = reaperInjectRate
	}
	if size := m.intSetting(ctx, "queue_size_for_reaper", 0); size > 0 {
		n, err := m.st.QueueLength(ctx, store.QueueReplicate)
		if err != nil {
			return 0, fmt.Errorf("jobs: replicate queue length: %w", err)
		}
		limit = max(0, min(limit, size-n))
	}
	return limit, nil
}

// reapDeadDevices forgets the copies on devices marked dead, queueing each
// fid for replication first so that a crash in between never strands a
// file (Worker::Reaper::reap_fid).
func (m *Manager) reapDeadDevices(ctx context.Context, log *slog.Logger) error {
	devs, err := m.st.Devices(ctx)
	if err != nil {
		return fmt.Errorf("jobs: read devices: %w", err)
	}
	var dead []int
	for _, d := range devs {
		if d.Status == store.DeviceDead {
			dead = append(dead, d.ID)
		}
	}
	if len(dead) == 0 {
		return nil
	}
	l, err := m.st.Lock(ctx, reaperLock, reaperLockWait)
	if errors.Is(err, store.ErrLockTimeout) {
		return nil // another tracker is reaping
	}
	if err != nil {
		return fmt.Errorf("jobs: lock %s: %w", reaperLock, err)
	}
	defer m.release(l)
	for _, devid := range dead {
		limit, err := m.reaperInjectLimit(ctx)
		if err != nil {
			return err
		}
		if limit == 0 {
			return nil // the replicate queue is full enough; next pass
		}
		fids, err := m.st.FidsOnDevice(ctx, devid, 0, int(limit))
		if err != nil {
			return fmt.Errorf("jobs: fids on dev%d: %w", devid, err)
		}
		if len(fids) > 0 {
			log.Info("reaping dead device", "dev", devid, "fids", len(fids))
		}
		for _, fid := range fids {
			if err := m.st.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: fid, After: time.Second}); err != nil {
				return fmt.Errorf("jobs: queue fid %d for replication: %w", fid, err)
			}
			if err := m.forgetOnDevice(ctx, fid, devid); err != nil {
				return err
			}
		}
	}
	return nil
}
