package storemetrics

// The pass-through methods: each one times its call and counts its error.

import (
	"context"
	"time"

	"github.com/gomogile/gomogile/store"
)

func (s *Store) Ping(ctx context.Context) error {
	start := time.Now()
	return s.done("Ping", start, s.inner.Ping(ctx))
}

func (s *Store) Info(ctx context.Context) (store.Info, error) {
	start := time.Now()
	r, err := s.inner.Info(ctx)
	return r, s.done("Info", start, err)
}

func (s *Store) Capabilities() store.Capabilities { return s.inner.Capabilities() }

func (s *Store) Now(ctx context.Context) (time.Time, error) {
	start := time.Now()
	r, err := s.inner.Now(ctx)
	return r, s.done("Now", start, err)
}

func (s *Store) CreateDomain(ctx context.Context, name string) (store.Domain, error) {
	start := time.Now()
	r, err := s.inner.CreateDomain(ctx, name)
	return r, s.done("CreateDomain", start, err)
}

func (s *Store) DeleteDomain(ctx context.Context, dmid int) error {
	start := time.Now()
	return s.done("DeleteDomain", start, s.inner.DeleteDomain(ctx, dmid))
}

func (s *Store) Domains(ctx context.Context) ([]store.Domain, error) {
	start := time.Now()
	r, err := s.inner.Domains(ctx)
	return r, s.done("Domains", start, err)
}

func (s *Store) CreateClass(ctx context.Context, c store.Class) (store.Class, error) {
	start := time.Now()
	r, err := s.inner.CreateClass(ctx, c)
	return r, s.done("CreateClass", start, err)
}

func (s *Store) UpdateClass(ctx context.Context, c store.Class) error {
	start := time.Now()
	return s.done("UpdateClass", start, s.inner.UpdateClass(ctx, c))
}

func (s *Store) DeleteClass(ctx context.Context, dmid int, classid int) error {
	start := time.Now()
	return s.done("DeleteClass", start, s.inner.DeleteClass(ctx, dmid, classid))
}

func (s *Store) Classes(ctx context.Context) ([]store.Class, error) {
	start := time.Now()
	r, err := s.inner.Classes(ctx)
	return r, s.done("Classes", start, err)
}

func (s *Store) CreateHost(ctx context.Context, h store.Host) (store.Host, error) {
	start := time.Now()
	r, err := s.inner.CreateHost(ctx, h)
	return r, s.done("CreateHost", start, err)
}

func (s *Store) UpdateHost(ctx context.Context, h store.Host) error {
	start := time.Now()
	return s.done("UpdateHost", start, s.inner.UpdateHost(ctx, h))
}

func (s *Store) DeleteHost(ctx context.Context, hostid int) error {
	start := time.Now()
	return s.done("DeleteHost", start, s.inner.DeleteHost(ctx, hostid))
}

func (s *Store) Hosts(ctx context.Context) ([]store.Host, error) {
	start := time.Now()
	r, err := s.inner.Hosts(ctx)
	return r, s.done("Hosts", start, err)
}

func (s *Store) CreateDevice(ctx context.Context, d store.Device) (store.Device, error) {
	start := time.Now()
	r, err := s.inner.CreateDevice(ctx, d)
	return r, s.done("CreateDevice", start, err)
}

func (s *Store) SetDeviceState(ctx context.Context, devid int, state store.DeviceState) error {
	start := time.Now()
	return s.done("SetDeviceState", start, s.inner.SetDeviceState(ctx, devid, state))
}

func (s *Store) SetDeviceWeight(ctx context.Context, devid int, weight int) error {
	start := time.Now()
	return s.done("SetDeviceWeight", start, s.inner.SetDeviceWeight(ctx, devid, weight))
}

func (s *Store) SetDeviceUsage(ctx context.Context, devid int, mbTotal int64, mbUsed int64) error {
	start := time.Now()
	return s.done("SetDeviceUsage", start, s.inner.SetDeviceUsage(ctx, devid, mbTotal, mbUsed))
}

func (s *Store) DeleteDevice(ctx context.Context, devid int) error {
	start := time.Now()
	return s.done("DeleteDevice", start, s.inner.DeleteDevice(ctx, devid))
}

func (s *Store) Devices(ctx context.Context) ([]store.Device, error) {
	start := time.Now()
	r, err := s.inner.Devices(ctx)
	return r, s.done("Devices", start, err)
}

func (s *Store) CreateTempFile(ctx context.Context, t store.TempFile) (int64, error) {
	start := time.Now()
	r, err := s.inner.CreateTempFile(ctx, t)
	return r, s.done("CreateTempFile", start, err)
}

func (s *Store) TempFile(ctx context.Context, fid int64) (store.TempFile, error) {
	start := time.Now()
	r, err := s.inner.TempFile(ctx, fid)
	return r, s.done("TempFile", start, err)
}

func (s *Store) DeleteTempFile(ctx context.Context, fid int64) error {
	start := time.Now()
	return s.done("DeleteTempFile", start, s.inner.DeleteTempFile(ctx, fid))
}

func (s *Store) ExpiredTempFiles(ctx context.Context, age time.Duration, limit int) ([]store.TempFile, error) {
	start := time.Now()
	r, err := s.inner.ExpiredTempFiles(ctx, age, limit)
	return r, s.done("ExpiredTempFiles", start, err)
}

func (s *Store) CommitFile(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	start := time.Now()
	r, err := s.inner.CommitFile(ctx, c)
	if err == nil {
		// CommitFile queues rows of its own: the fid for replication when
		// asked, and a fid it replaced for deletion.
		if c.Replicate {
			s.m.enqueued.WithLabelValues(store.QueueReplicate.String()).Inc()
		}
		if r.ReplacedFid != 0 {
			s.m.enqueued.WithLabelValues(store.QueueDelete.String()).Inc()
		}
	}
	return r, s.done("CommitFile", start, err)
}

func (s *Store) File(ctx context.Context, fid int64) (store.File, error) {
	start := time.Now()
	r, err := s.inner.File(ctx, fid)
	return r, s.done("File", start, err)
}

func (s *Store) FileByKey(ctx context.Context, dmid int, key string) (store.File, error) {
	start := time.Now()
	r, err := s.inner.FileByKey(ctx, dmid, key)
	return r, s.done("FileByKey", start, err)
}

func (s *Store) Files(ctx context.Context, from int64, to int64, limit int) ([]store.File, error) {
	start := time.Now()
	r, err := s.inner.Files(ctx, from, to, limit)
	return r, s.done("Files", start, err)
}

func (s *Store) MaxFid(ctx context.Context) (int64, error) {
	start := time.Now()
	r, err := s.inner.MaxFid(ctx)
	return r, s.done("MaxFid", start, err)
}

func (s *Store) FileOnRows(ctx context.Context, after store.FileOnRow, limit int) ([]store.FileOnRow, error) {
	start := time.Now()
	r, err := s.inner.FileOnRows(ctx, after, limit)
	return r, s.done("FileOnRows", start, err)
}

func (s *Store) Checksums(ctx context.Context, after int64, limit int) ([]store.Checksum, error) {
	start := time.Now()
	r, err := s.inner.Checksums(ctx, after, limit)
	return r, s.done("Checksums", start, err)
}

func (s *Store) QueueItems(ctx context.Context, q store.Queue, after int64, limit int) ([]store.QueueItem, error) {
	start := time.Now()
	r, err := s.inner.QueueItems(ctx, q, after, limit)
	return r, s.done("QueueItems", start, err)
}

func (s *Store) FidCounter(ctx context.Context) (int64, error) {
	start := time.Now()
	r, err := s.inner.FidCounter(ctx)
	return r, s.done("FidCounter", start, err)
}

func (s *Store) ImportRows(ctx context.Context, im store.Import) error {
	start := time.Now()
	return s.done("ImportRows", start, s.inner.ImportRows(ctx, im))
}

func (s *Store) FileCounts(ctx context.Context) ([]store.FileCount, error) {
	start := time.Now()
	r, err := s.inner.FileCounts(ctx)
	return r, s.done("FileCounts", start, err)
}

func (s *Store) ListKeys(ctx context.Context, dmid int, prefix string, after string, limit int) ([]string, error) {
	start := time.Now()
	r, err := s.inner.ListKeys(ctx, dmid, prefix, after, limit)
	return r, s.done("ListKeys", start, err)
}

func (s *Store) RenameFile(ctx context.Context, dmid int, from string, to string) error {
	start := time.Now()
	return s.done("RenameFile", start, s.inner.RenameFile(ctx, dmid, from, to))
}

func (s *Store) SetFileClass(ctx context.Context, fid int64, classid int) error {
	start := time.Now()
	return s.done("SetFileClass", start, s.inner.SetFileClass(ctx, fid, classid))
}

func (s *Store) DeleteFile(ctx context.Context, fid int64) error {
	start := time.Now()
	err := s.inner.DeleteFile(ctx, fid)
	if err == nil {
		s.m.enqueued.WithLabelValues(store.QueueDelete.String()).Inc() // DeleteFile queues the fid for deletion
	}
	return s.done("DeleteFile", start, err)
}

func (s *Store) AddFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	start := time.Now()
	r, err := s.inner.AddFileOn(ctx, fid, devid)
	return r, s.done("AddFileOn", start, err)
}

func (s *Store) RemoveFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	start := time.Now()
	r, err := s.inner.RemoveFileOn(ctx, fid, devid)
	return r, s.done("RemoveFileOn", start, err)
}

func (s *Store) FileOn(ctx context.Context, fid int64) ([]int, error) {
	start := time.Now()
	r, err := s.inner.FileOn(ctx, fid)
	return r, s.done("FileOn", start, err)
}

// FileByKeyOn implements store.PathsReader whatever the inner Store: its
// own PathsReader when it has one, else FileByKey and FileOn.
func (s *Store) FileByKeyOn(ctx context.Context, dmid int, key string) (store.File, []int, error) {
	start := time.Now()
	f, devs, err := store.FileByKeyOn(ctx, s.inner, dmid, key)
	return f, devs, s.done("FileByKeyOn", start, err)
}

func (s *Store) FidsOnDevice(ctx context.Context, devid int, after int64, limit int) ([]int64, error) {
	start := time.Now()
	r, err := s.inner.FidsOnDevice(ctx, devid, after, limit)
	return r, s.done("FidsOnDevice", start, err)
}

func (s *Store) SyncDevCount(ctx context.Context, fid int64) (int, error) {
	start := time.Now()
	r, err := s.inner.SyncDevCount(ctx, fid)
	return r, s.done("SyncDevCount", start, err)
}

func (s *Store) Enqueue(ctx context.Context, q store.Queue, entries ...store.QueueEntry) error {
	start := time.Now()
	err := s.inner.Enqueue(ctx, q, entries...)
	if err == nil {
		s.m.enqueued.WithLabelValues(q.String()).Add(float64(len(entries)))
	}
	return s.done("Enqueue", start, err)
}

func (s *Store) Lease(ctx context.Context, q store.Queue, max int, lease time.Duration) ([]store.QueueItem, error) {
	start := time.Now()
	r, err := s.inner.Lease(ctx, q, max, lease)
	s.m.leased.WithLabelValues(q.String()).Add(float64(len(r)))
	return r, s.done("Lease", start, err)
}

func (s *Store) Reschedule(ctx context.Context, q store.Queue, fid int64, after time.Duration, failed bool) error {
	start := time.Now()
	err := s.inner.Reschedule(ctx, q, fid, after, failed)
	if err == nil && failed {
		s.m.retried.WithLabelValues(q.String()).Inc()
	}
	return s.done("Reschedule", start, err)
}

func (s *Store) Finish(ctx context.Context, q store.Queue, fid int64) error {
	start := time.Now()
	err := s.inner.Finish(ctx, q, fid)
	if err == nil {
		s.m.finished.WithLabelValues(q.String()).Inc()
	}
	return s.done("Finish", start, err)
}

func (s *Store) QueueItem(ctx context.Context, q store.Queue, fid int64) (store.QueueItem, error) {
	start := time.Now()
	r, err := s.inner.QueueItem(ctx, q, fid)
	return r, s.done("QueueItem", start, err)
}

func (s *Store) QueueLength(ctx context.Context, q store.Queue) (int64, error) {
	start := time.Now()
	r, err := s.inner.QueueLength(ctx, q)
	return r, s.done("QueueLength", start, err)
}

func (s *Store) Expedite(ctx context.Context, q store.Queue) (int64, error) {
	start := time.Now()
	r, err := s.inner.Expedite(ctx, q)
	return r, s.done("Expedite", start, err)
}

func (s *Store) ClearQueue(ctx context.Context, q store.Queue) error {
	start := time.Now()
	return s.done("ClearQueue", start, s.inner.ClearQueue(ctx, q))
}

func (s *Store) ServerSetting(ctx context.Context, key string) (string, error) {
	start := time.Now()
	r, err := s.inner.ServerSetting(ctx, key)
	return r, s.done("ServerSetting", start, err)
}

func (s *Store) ServerSettings(ctx context.Context) (map[string]string, error) {
	start := time.Now()
	r, err := s.inner.ServerSettings(ctx)
	return r, s.done("ServerSettings", start, err)
}

func (s *Store) SetServerSetting(ctx context.Context, key string, value string) error {
	start := time.Now()
	return s.done("SetServerSetting", start, s.inner.SetServerSetting(ctx, key, value))
}

func (s *Store) DeleteServerSetting(ctx context.Context, key string) error {
	start := time.Now()
	return s.done("DeleteServerSetting", start, s.inner.DeleteServerSetting(ctx, key))
}

func (s *Store) IncrServerSetting(ctx context.Context, key string, delta int64) (int64, error) {
	start := time.Now()
	r, err := s.inner.IncrServerSetting(ctx, key, delta)
	return r, s.done("IncrServerSetting", start, err)
}

func (s *Store) SetChecksum(ctx context.Context, c store.Checksum) error {
	start := time.Now()
	return s.done("SetChecksum", start, s.inner.SetChecksum(ctx, c))
}

func (s *Store) Checksum(ctx context.Context, fid int64) (store.Checksum, error) {
	start := time.Now()
	r, err := s.inner.Checksum(ctx, fid)
	return r, s.done("Checksum", start, err)
}

func (s *Store) DeleteChecksum(ctx context.Context, fid int64) error {
	start := time.Now()
	return s.done("DeleteChecksum", start, s.inner.DeleteChecksum(ctx, fid))
}

func (s *Store) AppendFsckLog(ctx context.Context, e store.FsckEvent) error {
	start := time.Now()
	return s.done("AppendFsckLog", start, s.inner.AppendFsckLog(ctx, e))
}

func (s *Store) FsckEvents(ctx context.Context, after int64, limit int) ([]store.FsckEvent, error) {
	start := time.Now()
	r, err := s.inner.FsckEvents(ctx, after, limit)
	return r, s.done("FsckEvents", start, err)
}

func (s *Store) FsckEventCounts(ctx context.Context) (map[string]int64, error) {
	start := time.Now()
	r, err := s.inner.FsckEventCounts(ctx)
	return r, s.done("FsckEventCounts", start, err)
}

func (s *Store) ClearFsckLog(ctx context.Context) error {
	start := time.Now()
	return s.done("ClearFsckLog", start, s.inner.ClearFsckLog(ctx))
}
