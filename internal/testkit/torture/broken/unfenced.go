package broken

import (
	"context"
	"time"

	"github.com/gomogile/gomogile/store"
)

// unfencedCtx hides the fences a ctx carries (store.WithFence) and keeps
// everything else: deadline, cancellation and other values.
type unfencedCtx struct{ context.Context }

func (c unfencedCtx) Value(key any) any {
	v := c.Context.Value(key)
	if _, fence := v.([]store.Fence); fence {
		return nil
	}
	return v
}

// unfenced: every write's fences stripped. Reads ignore fences, so only
// the writes are overridden — all of them, so whatever write a lock
// guards, its fence goes unchecked.
type unfenced struct {
	store.Backend
	n     *nth
	lease time.Duration
}

// Lock gives a lock that expires after the lease, its Lost on time: a
// holder that checked Lost before it closed then writes unfenced after
// the next grant, which only the fence would refuse.
func (s *unfenced) Lock(ctx context.Context, name string, timeout time.Duration) (store.Lock, error) {
	l, err := s.Backend.Lock(ctx, name, timeout)
	if err != nil || s.lease <= 0 {
		return l, err
	}
	return expiring(l, s.lease, 0), nil
}

func (s *unfenced) strip(ctx context.Context) context.Context {
	if store.Fences(ctx) == nil || !s.n.hit() {
		return ctx
	}
	return unfencedCtx{ctx}
}

func (s *unfenced) CreateDomain(ctx context.Context, name string) (store.Domain, error) {
	return s.Backend.CreateDomain(s.strip(ctx), name)
}
func (s *unfenced) DeleteDomain(ctx context.Context, dmid int) error {
	return s.Backend.DeleteDomain(s.strip(ctx), dmid)
}
func (s *unfenced) CreateClass(ctx context.Context, c store.Class) (store.Class, error) {
	return s.Backend.CreateClass(s.strip(ctx), c)
}
func (s *unfenced) UpdateClass(ctx context.Context, c store.Class) error {
	return s.Backend.UpdateClass(s.strip(ctx), c)
}
func (s *unfenced) DeleteClass(ctx context.Context, dmid, classid int) error {
	return s.Backend.DeleteClass(s.strip(ctx), dmid, classid)
}
func (s *unfenced) CreateHost(ctx context.Context, h store.Host) (store.Host, error) {
	return s.Backend.CreateHost(s.strip(ctx), h)
}
func (s *unfenced) UpdateHost(ctx context.Context, h store.Host) error {
	return s.Backend.UpdateHost(s.strip(ctx), h)
}
func (s *unfenced) DeleteHost(ctx context.Context, hostid int) error {
	return s.Backend.DeleteHost(s.strip(ctx), hostid)
}
func (s *unfenced) CreateDevice(ctx context.Context, d store.Device) (store.Device, error) {
	return s.Backend.CreateDevice(s.strip(ctx), d)
}
func (s *unfenced) SetDeviceState(ctx context.Context, devid int, state store.DeviceState) error {
	return s.Backend.SetDeviceState(s.strip(ctx), devid, state)
}
func (s *unfenced) SetDeviceWeight(ctx context.Context, devid int, weight int) error {
	return s.Backend.SetDeviceWeight(s.strip(ctx), devid, weight)
}
func (s *unfenced) SetDeviceUsage(ctx context.Context, devid int, mbTotal, mbUsed int64) error {
	return s.Backend.SetDeviceUsage(s.strip(ctx), devid, mbTotal, mbUsed)
}
func (s *unfenced) DeleteDevice(ctx context.Context, devid int) error {
	return s.Backend.DeleteDevice(s.strip(ctx), devid)
}
func (s *unfenced) CreateTempFile(ctx context.Context, t store.TempFile) (int64, error) {
	return s.Backend.CreateTempFile(s.strip(ctx), t)
}
func (s *unfenced) DeleteTempFile(ctx context.Context, fid int64) error {
	return s.Backend.DeleteTempFile(s.strip(ctx), fid)
}
func (s *unfenced) CommitFile(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	return s.Backend.CommitFile(s.strip(ctx), c)
}
func (s *unfenced) RenameFile(ctx context.Context, dmid int, from, to string) error {
	return s.Backend.RenameFile(s.strip(ctx), dmid, from, to)
}
func (s *unfenced) SetFileClass(ctx context.Context, fid int64, classid int) error {
	return s.Backend.SetFileClass(s.strip(ctx), fid, classid)
}
func (s *unfenced) DeleteFile(ctx context.Context, fid int64) error {
	return s.Backend.DeleteFile(s.strip(ctx), fid)
}
func (s *unfenced) AddFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	return s.Backend.AddFileOn(s.strip(ctx), fid, devid)
}
func (s *unfenced) RemoveFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	return s.Backend.RemoveFileOn(s.strip(ctx), fid, devid)
}
func (s *unfenced) SyncDevCount(ctx context.Context, fid int64) (int, error) {
	return s.Backend.SyncDevCount(s.strip(ctx), fid)
}
func (s *unfenced) Enqueue(ctx context.Context, q store.Queue, entries ...store.QueueEntry) error {
	return s.Backend.Enqueue(s.strip(ctx), q, entries...)
}
func (s *unfenced) Lease(ctx context.Context, q store.Queue, maxRows int, lease time.Duration) ([]store.QueueItem, error) {
	return s.Backend.Lease(s.strip(ctx), q, maxRows, lease)
}
func (s *unfenced) Reschedule(ctx context.Context, q store.Queue, fid int64, after time.Duration, failed bool) error {
	return s.Backend.Reschedule(s.strip(ctx), q, fid, after, failed)
}
func (s *unfenced) Finish(ctx context.Context, q store.Queue, fid int64) error {
	return s.Backend.Finish(s.strip(ctx), q, fid)
}
func (s *unfenced) Expedite(ctx context.Context, q store.Queue) (int64, error) {
	return s.Backend.Expedite(s.strip(ctx), q)
}
func (s *unfenced) ClearQueue(ctx context.Context, q store.Queue) error {
	return s.Backend.ClearQueue(s.strip(ctx), q)
}
func (s *unfenced) SetServerSetting(ctx context.Context, key, value string) error {
	return s.Backend.SetServerSetting(s.strip(ctx), key, value)
}
func (s *unfenced) DeleteServerSetting(ctx context.Context, key string) error {
	return s.Backend.DeleteServerSetting(s.strip(ctx), key)
}
func (s *unfenced) IncrServerSetting(ctx context.Context, key string, delta int64) (int64, error) {
	return s.Backend.IncrServerSetting(s.strip(ctx), key, delta)
}
func (s *unfenced) SetChecksum(ctx context.Context, c store.Checksum) error {
	return s.Backend.SetChecksum(s.strip(ctx), c)
}
func (s *unfenced) DeleteChecksum(ctx context.Context, fid int64) error {
	return s.Backend.DeleteChecksum(s.strip(ctx), fid)
}
func (s *unfenced) AppendFsckLog(ctx context.Context, e store.FsckEvent) error {
	return s.Backend.AppendFsckLog(s.strip(ctx), e)
}
func (s *unfenced) ClearFsckLog(ctx context.Context) error {
	return s.Backend.ClearFsckLog(s.strip(ctx))
}
