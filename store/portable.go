package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// New returns the Store over b: what [Backend] lists is done there, once,
// for every backend. The Store owns b; its Close closes b. A *Store given
// as b is returned as it is.
func New(b Backend, opts *Options) *Store {
	if p, ok := b.(*Store); ok {
		return p
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.OpTimeout == 0:
		o.OpTimeout = DefaultOpTimeout
	case o.OpTimeout < 0:
		o.OpTimeout = 0
	}
	return &Store{b: b, timeout: o.OpTimeout, obs: o.Observer,
		closing: make(chan struct{}), held: map[*portableLock]struct{}{}}
}

// Store is one tracker's handle on the metadata database, made by [Open]
// (or [New]) over a registered backend. Two Stores opened separately on
// the same database behave like two trackers: they share rows and the
// named-lock namespace.
//
// Its methods are [Backend]'s, documented on the interfaces that group
// them ([Namespace], [Files], [Placement], [Queues], [Settings],
// [Checksums], [FsckLog], [Locker]); what a Store adds to its backend's,
// for every backend alike, is in Backend's doc. A Store is safe for
// concurrent use.
type Store struct {
	b       Backend
	timeout time.Duration // 0: no default deadline
	obs     Observer

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
	closing   chan struct{} // closed by Close: ends the Lost watchers

	mu   sync.Mutex
	held map[*portableLock]struct{}
}

// bound gives ctx the default deadline (plus extra: a Lock's wait), unless
// it already ends earlier.
func (s *Store) bound(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	if s.timeout <= 0 {
		return ctx, func() {}
	}
	d := s.timeout + extra
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// OpError is the error of a Store call: the operation and what went
// wrong, "store: <Op>: <Err>". The sentinel (ErrNotFound, …) is in Err;
// match it with errors.Is, never by the text.
type OpError struct {
	Op  string // what the call was doing: `create domain "photos"`
	Err error
}

func (e *OpError) Error() string { return "store: " + e.Op + ": " + e.Err.Error() }
func (e *OpError) Unwrap() error { return e.Err }

// fail prefixes err with the operation, once: an error that is already an
// OpError (a Store over a Store: a test's decorator, a worker process's
// Store over the tracker's) is left as it is.
func fail(op func() string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*OpError); ok {
		return err
	}
	return &OpError{Op: op(), Err: err}
}

// do runs one call of the Backend: the closed check, the argument check
// (bad, already computed by the caller), the default deadline, the
// observation and the error's prefix.
func do[T any](s *Store, ctx context.Context, name string, op func() string, bad error,
	f func(context.Context) (T, error)) (T, error) {
	return call(s, ctx, name, 0, op, bad, f)
}

// call is do with extra added to the default deadline: a Lock's wait.
func call[T any](s *Store, ctx context.Context, name string, extra time.Duration, op func() string, bad error,
	f func(context.Context) (T, error)) (T, error) {
	var start time.Time
	if s.obs != nil {
		start = time.Now()
	}
	var v T
	var err error
	switch {
	case s.closed.Load():
		err = ErrClosed
	case bad != nil:
		err = bad
	default:
		c, cancel := s.bound(ctx, extra)
		v, err = f(c)
		cancel()
	}
	err = fail(op, err)
	if s.obs != nil {
		s.obs.Call(name, time.Since(start), err)
	}
	return v, err
}

// do0 is do for a call that returns only an error.
func do0(s *Store, ctx context.Context, name string, op func() string, bad error,
	f func(context.Context) error) error {
	_, err := do(s, ctx, name, op, bad, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, f(ctx)
	})
	return err
}

func (s *Store) queued(q Queue, ev QueueEvent, n int) {
	if s.obs != nil && n > 0 {
		s.obs.Queue(q, ev, n)
	}
}

func text(s string) func() string { return func() string { return s } }

// Unwrap is the Backend, for a test's fault hooks and a harness's escape
// hatches; calling it bypasses every guarantee above.
func (s *Store) Unwrap() Backend { return s.b }

// As gives the Backend's driver-specific types, when it has As(any) bool.
func (s *Store) As(target any) bool {
	if a, ok := s.b.(interface{ As(any) bool }); ok {
		return a.As(target)
	}
	return false
}

// LockStats are the Backend's, when it has them.
func (s *Store) LockStats() LockStats {
	if ls, ok := s.b.(interface{ LockStats() LockStats }); ok {
		return ls.LockStats()
	}
	return LockStats{}
}

func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.closing)
		s.closeErr = s.b.Close()
		// The Backend's Close ended every lock it held.
		s.mu.Lock()
		clear(s.held)
		s.mu.Unlock()
	})
	return s.closeErr
}

func (s *Store) Capabilities() Capabilities { return s.b.Capabilities() }

func (s *Store) Ping(ctx context.Context) error {
	return do0(s, ctx, "Ping", text("ping"), nil, s.b.Ping)
}

func (s *Store) Info(ctx context.Context) (Info, error) {
	return do(s, ctx, "Info", text("read server version"), nil, s.b.Info)
}

func (s *Store) Now(ctx context.Context) (time.Time, error) {
	return do(s, ctx, "Now", text("read clock"), nil, s.b.Now)
}

// Namespace.

func (s *Store) CreateDomain(ctx context.Context, name string) (Domain, error) {
	return do(s, ctx, "CreateDomain", func() string { return fmt.Sprintf("create domain %q", name) },
		checkText("domain name", name, maxDomainName, true),
		func(ctx context.Context) (Domain, error) { return s.b.CreateDomain(ctx, name) })
}

func (s *Store) DeleteDomain(ctx context.Context, dmid int) error {
	return do0(s, ctx, "DeleteDomain", func() string { return fmt.Sprintf("delete domain %d", dmid) }, nil,
		func(ctx context.Context) error { return s.b.DeleteDomain(ctx, dmid) })
}

func (s *Store) Domains(ctx context.Context) ([]Domain, error) {
	return do(s, ctx, "Domains", text("list domains"), nil, s.b.Domains)
}

func (s *Store) CreateClass(ctx context.Context, c Class) (Class, error) {
	return do(s, ctx, "CreateClass", func() string { return fmt.Sprintf("create class %q in domain %d", c.Name, c.DomainID) },
		checkClass(c), func(ctx context.Context) (Class, error) { return s.b.CreateClass(ctx, c) })
}

func (s *Store) UpdateClass(ctx context.Context, c Class) error {
	bad := checkClass(c)
	if bad == nil {
		bad = checkRange("classid", c.ID, 0, MaxClassID)
	}
	return do0(s, ctx, "UpdateClass", func() string { return fmt.Sprintf("update class %d of domain %d", c.ID, c.DomainID) },
		bad, func(ctx context.Context) error { return s.b.UpdateClass(ctx, c) })
}

func (s *Store) DeleteClass(ctx context.Context, dmid, classid int) error {
	return do0(s, ctx, "DeleteClass", func() string { return fmt.Sprintf("delete class %d of domain %d", classid, dmid) }, nil,
		func(ctx context.Context) error { return s.b.DeleteClass(ctx, dmid, classid) })
}

func (s *Store) Classes(ctx context.Context) ([]Class, error) {
	return do(s, ctx, "Classes", text("list classes"), nil, s.b.Classes)
}

func (s *Store) CreateHost(ctx context.Context, h Host) (Host, error) {
	h, bad := checkHost(h)
	return do(s, ctx, "CreateHost", func() string { return fmt.Sprintf("create host %q", h.Name) },
		bad, func(ctx context.Context) (Host, error) { return s.b.CreateHost(ctx, h) })
}

func (s *Store) UpdateHost(ctx context.Context, h Host) error {
	h, bad := checkHost(h)
	if bad == nil && h.ID == 0 {
		bad = invalid("hostid 0")
	}
	return do0(s, ctx, "UpdateHost", func() string { return fmt.Sprintf("update host %d", h.ID) },
		bad, func(ctx context.Context) error { return s.b.UpdateHost(ctx, h) })
}

func (s *Store) DeleteHost(ctx context.Context, hostid int) error {
	return do0(s, ctx, "DeleteHost", func() string { return fmt.Sprintf("delete host %d", hostid) }, nil,
		func(ctx context.Context) error { return s.b.DeleteHost(ctx, hostid) })
}

func (s *Store) Hosts(ctx context.Context) ([]Host, error) {
	return do(s, ctx, "Hosts", text("list hosts"), nil, s.b.Hosts)
}

func (s *Store) CreateDevice(ctx context.Context, d Device) (Device, error) {
	d, bad := checkDevice(d)
	return do(s, ctx, "CreateDevice", func() string { return fmt.Sprintf("create device %d on host %d", d.ID, d.HostID) },
		bad, func(ctx context.Context) (Device, error) { return s.b.CreateDevice(ctx, d) })
}

func (s *Store) SetDeviceState(ctx context.Context, devid int, state DeviceState) error {
	var bad error
	if !state.Valid() {
		bad = invalid("unknown device state %q", state)
	}
	return do0(s, ctx, "SetDeviceState", func() string { return fmt.Sprintf("set state of device %d", devid) },
		bad, func(ctx context.Context) error { return s.b.SetDeviceState(ctx, devid, state) })
}

func (s *Store) SetDeviceWeight(ctx context.Context, devid int, weight int) error {
	return do0(s, ctx, "SetDeviceWeight", func() string { return fmt.Sprintf("set weight of device %d", devid) },
		checkRange("weight", weight, 0, maxWeight),
		func(ctx context.Context) error { return s.b.SetDeviceWeight(ctx, devid, weight) })
}

func (s *Store) SetDeviceUsage(ctx context.Context, devid int, mbTotal, mbUsed int64) error {
	var bad error
	if mbTotal < 0 || mbUsed < 0 || mbTotal > maxUsageMiB || mbUsed > maxUsageMiB {
		bad = invalid("usage %d/%d MiB out of range", mbUsed, mbTotal)
	}
	return do0(s, ctx, "SetDeviceUsage", func() string { return fmt.Sprintf("set usage of device %d", devid) },
		bad, func(ctx context.Context) error { return s.b.SetDeviceUsage(ctx, devid, mbTotal, mbUsed) })
}

func (s *Store) DeleteDevice(ctx context.Context, devid int) error {
	return do0(s, ctx, "DeleteDevice", func() string { return fmt.Sprintf("delete device %d", devid) }, nil,
		func(ctx context.Context) error { return s.b.DeleteDevice(ctx, devid) })
}

func (s *Store) Devices(ctx context.Context) ([]Device, error) {
	return do(s, ctx, "Devices", text("list devices"), nil, s.b.Devices)
}

// Files.

func (s *Store) CreateTempFile(ctx context.Context, t TempFile) (int64, error) {
	return do(s, ctx, "CreateTempFile", func() string { return fmt.Sprintf("create tempfile for key %q", t.Key) },
		checkTempFile(t), func(ctx context.Context) (int64, error) { return s.b.CreateTempFile(ctx, t) })
}

func (s *Store) TempFile(ctx context.Context, fid int64) (TempFile, error) {
	return do(s, ctx, "TempFile", func() string { return fmt.Sprintf("read tempfile %d", fid) }, nil,
		func(ctx context.Context) (TempFile, error) { return s.b.TempFile(ctx, fid) })
}

func (s *Store) DeleteTempFile(ctx context.Context, fid int64) error {
	return do0(s, ctx, "DeleteTempFile", func() string { return fmt.Sprintf("delete tempfile %d", fid) }, nil,
		func(ctx context.Context) error { return s.b.DeleteTempFile(ctx, fid) })
}

func (s *Store) ExpiredTempFiles(ctx context.Context, age time.Duration, limit int) ([]TempFile, error) {
	bad := checkLimit(limit)
	if bad == nil && age < 0 {
		bad = invalid("negative age %v", age)
	}
	return do(s, ctx, "ExpiredTempFiles", text("list expired tempfiles"), bad,
		func(ctx context.Context) ([]TempFile, error) { return s.b.ExpiredTempFiles(ctx, age, limit) })
}

func (s *Store) CommitFile(ctx context.Context, c Commit) (CommitResult, error) {
	r, err := do(s, ctx, "CommitFile", func() string { return fmt.Sprintf("commit fid %d as key %q", c.Fid, c.Key) },
		checkCommit(c), func(ctx context.Context) (CommitResult, error) { return s.b.CommitFile(ctx, c) })
	if err == nil {
		// CommitFile queues rows of its own: the fid for replication when
		// asked, and a fid it replaced for deletion.
		if c.Replicate {
			s.queued(QueueReplicate, QueueEnqueued, 1)
		}
		if r.ReplacedFid != 0 {
			s.queued(QueueDelete, QueueEnqueued, 1)
		}
	}
	return r, err
}

func (s *Store) File(ctx context.Context, fid int64) (File, error) {
	return do(s, ctx, "File", func() string { return fmt.Sprintf("read file %d", fid) }, nil,
		func(ctx context.Context) (File, error) { return s.b.File(ctx, fid) })
}

func (s *Store) FileByKey(ctx context.Context, dmid int, key string) (File, error) {
	return do(s, ctx, "FileByKey", func() string { return fmt.Sprintf("read key %q of domain %d", key, dmid) },
		checkKey(key), func(ctx context.Context) (File, error) { return s.b.FileByKey(ctx, dmid, key) })
}

// FileByKeyOn implements PathsReader whatever the Backend: its own when it
// has one, else FileByKey and FileOn.
func (s *Store) FileByKeyOn(ctx context.Context, dmid int, key string) (File, []int, error) {
	type both struct {
		f    File
		devs []int
	}
	r, err := do(s, ctx, "FileByKeyOn", func() string { return fmt.Sprintf("read key %q of domain %d and its devices", key, dmid) },
		checkKey(key), func(ctx context.Context) (both, error) {
			f, devs, err := FileByKeyOn(ctx, s.b, dmid, key)
			return both{f, devs}, err
		})
	return r.f, r.devs, err
}

func (s *Store) Files(ctx context.Context, from, to int64, limit int) ([]File, error) {
	return do(s, ctx, "Files", func() string { return fmt.Sprintf("list files %d-%d", from, to) }, checkLimit(limit),
		func(ctx context.Context) ([]File, error) { return s.b.Files(ctx, from, to, limit) })
}

func (s *Store) MaxFid(ctx context.Context) (int64, error) {
	return do(s, ctx, "MaxFid", text("read max fid"), nil, s.b.MaxFid)
}

func (s *Store) FidCounter(ctx context.Context) (int64, error) {
	return do(s, ctx, "FidCounter", text("read the fid counter"), nil, s.b.FidCounter)
}

func (s *Store) ImportRows(ctx context.Context, im Import) error {
	return do0(s, ctx, "ImportRows", func() string {
		return fmt.Sprintf("import %d files, %d copies, %d checksums, %d queue rows, %d fsck events",
			len(im.Files), len(im.FileOn), len(im.Checksums), len(im.Queue), len(im.FsckLog))
	}, checkImport(im), func(ctx context.Context) error { return s.b.ImportRows(ctx, im) })
}

func (s *Store) FileCounts(ctx context.Context) ([]FileCount, error) {
	return do(s, ctx, "FileCounts", text("count files"), nil, s.b.FileCounts)
}

func (s *Store) ListKeys(ctx context.Context, dmid int, prefix, after string, limit int) ([]string, error) {
	bad := checkLimit(limit)
	if bad == nil {
		bad = checkText("prefix", prefix, maxKey, false)
	}
	if bad == nil {
		bad = checkText("after", after, maxKey, false)
	}
	return do(s, ctx, "ListKeys", func() string { return fmt.Sprintf("list keys of domain %d with prefix %q", dmid, prefix) },
		bad, func(ctx context.Context) ([]string, error) { return s.b.ListKeys(ctx, dmid, prefix, after, limit) })
}

func (s *Store) RenameFile(ctx context.Context, dmid int, from, to string) error {
	bad := checkKey(from)
	if bad == nil {
		bad = checkKey(to)
	}
	return do0(s, ctx, "RenameFile", func() string { return fmt.Sprintf("rename key %q of domain %d to %q", from, dmid, to) },
		bad, func(ctx context.Context) error { return s.b.RenameFile(ctx, dmid, from, to) })
}

func (s *Store) SetFileClass(ctx context.Context, fid int64, classid int) error {
	return do0(s, ctx, "SetFileClass", func() string { return fmt.Sprintf("set class of file %d", fid) },
		checkRange("classid", classid, 0, MaxClassID),
		func(ctx context.Context) error { return s.b.SetFileClass(ctx, fid, classid) })
}

func (s *Store) DeleteFile(ctx context.Context, fid int64) error {
	err := do0(s, ctx, "DeleteFile", func() string { return fmt.Sprintf("delete file %d", fid) }, nil,
		func(ctx context.Context) error { return s.b.DeleteFile(ctx, fid) })
	if err == nil {
		s.queued(QueueDelete, QueueEnqueued, 1) // DeleteFile queues the fid for deletion
	}
	return err
}

// Placement.

func (s *Store) AddFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	return do(s, ctx, "AddFileOn", func() string { return fmt.Sprintf("add fid %d on device %d", fid, devid) }, checkCopy(fid, devid),
		func(ctx context.Context) (bool, error) { return s.b.AddFileOn(ctx, fid, devid) })
}

func (s *Store) RemoveFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	return do(s, ctx, "RemoveFileOn", func() string { return fmt.Sprintf("remove fid %d from device %d", fid, devid) }, checkCopy(fid, devid),
		func(ctx context.Context) (bool, error) { return s.b.RemoveFileOn(ctx, fid, devid) })
}

func (s *Store) FileOn(ctx context.Context, fid int64) ([]int, error) {
	return do(s, ctx, "FileOn", func() string { return fmt.Sprintf("list devices of fid %d", fid) }, nil,
		func(ctx context.Context) ([]int, error) { return s.b.FileOn(ctx, fid) })
}

func (s *Store) FidsOnDevice(ctx context.Context, devid int, after int64, limit int) ([]int64, error) {
	return do(s, ctx, "FidsOnDevice", func() string { return fmt.Sprintf("list fids on device %d", devid) }, checkLimit(limit),
		func(ctx context.Context) ([]int64, error) { return s.b.FidsOnDevice(ctx, devid, after, limit) })
}

func (s *Store) FileOnRows(ctx context.Context, after FileOnRow, limit int) ([]FileOnRow, error) {
	return do(s, ctx, "FileOnRows", func() string {
		return fmt.Sprintf("list file_on after fid %d device %d", after.Fid, after.DevID)
	}, checkLimit(limit), func(ctx context.Context) ([]FileOnRow, error) { return s.b.FileOnRows(ctx, after, limit) })
}

func (s *Store) SyncDevCount(ctx context.Context, fid int64) (int, error) {
	return do(s, ctx, "SyncDevCount", func() string { return fmt.Sprintf("sync devcount of fid %d", fid) }, nil,
		func(ctx context.Context) (int, error) { return s.b.SyncDevCount(ctx, fid) })
}

// Queues.

func (s *Store) Enqueue(ctx context.Context, q Queue, entries ...QueueEntry) error {
	bad := checkQueue(q)
	for _, e := range entries {
		if bad != nil {
			break
		}
		bad = checkEntry(q, e)
	}
	err := do0(s, ctx, "Enqueue", func() string { return fmt.Sprintf("enqueue %d fids for %s", len(entries), q) },
		bad, func(ctx context.Context) error { return s.b.Enqueue(ctx, q, entries...) })
	if err == nil {
		s.queued(q, QueueEnqueued, len(entries))
	}
	return err
}

func (s *Store) Lease(ctx context.Context, q Queue, max int, lease time.Duration) ([]QueueItem, error) {
	bad := checkQueue(q)
	if bad == nil {
		bad = checkLimit(max)
	}
	if bad == nil && lease <= 0 {
		bad = invalid("lease %v must be positive", lease)
	}
	r, err := do(s, ctx, "Lease", func() string { return fmt.Sprintf("lease %s queue", q) }, bad,
		func(ctx context.Context) ([]QueueItem, error) { return s.b.Lease(ctx, q, max, lease) })
	s.queued(q, QueueLeased, len(r))
	return r, err
}

func (s *Store) Reschedule(ctx context.Context, q Queue, fid int64, after time.Duration, failed bool) error {
	bad := checkQueue(q)
	if bad == nil && after < 0 && after != Never {
		bad = invalid("negative delay %v", after)
	}
	err := do0(s, ctx, "Reschedule", func() string { return fmt.Sprintf("reschedule fid %d in %s queue", fid, q) },
		bad, func(ctx context.Context) error { return s.b.Reschedule(ctx, q, fid, after, failed) })
	if err == nil && failed {
		s.queued(q, QueueRetried, 1)
	}
	return err
}

func (s *Store) Finish(ctx context.Context, q Queue, fid int64) error {
	err := do0(s, ctx, "Finish", func() string { return fmt.Sprintf("finish fid %d in %s queue", fid, q) },
		checkQueue(q), func(ctx context.Context) error { return s.b.Finish(ctx, q, fid) })
	if err == nil {
		s.queued(q, QueueFinished, 1)
	}
	return err
}

func (s *Store) QueueItem(ctx context.Context, q Queue, fid int64) (QueueItem, error) {
	return do(s, ctx, "QueueItem", func() string { return fmt.Sprintf("read fid %d of %s queue", fid, q) },
		checkQueue(q), func(ctx context.Context) (QueueItem, error) { return s.b.QueueItem(ctx, q, fid) })
}

func (s *Store) QueueItems(ctx context.Context, q Queue, after int64, limit int) ([]QueueItem, error) {
	bad := checkQueue(q)
	if bad == nil {
		bad = checkLimit(limit)
	}
	return do(s, ctx, "QueueItems", func() string { return fmt.Sprintf("list %s queue after fid %d", q, after) },
		bad, func(ctx context.Context) ([]QueueItem, error) { return s.b.QueueItems(ctx, q, after, limit) })
}

func (s *Store) QueueLength(ctx context.Context, q Queue) (int64, error) {
	return do(s, ctx, "QueueLength", func() string { return fmt.Sprintf("count %s queue", q) },
		checkQueue(q), func(ctx context.Context) (int64, error) { return s.b.QueueLength(ctx, q) })
}

func (s *Store) Expedite(ctx context.Context, q Queue) (int64, error) {
	return do(s, ctx, "Expedite", func() string { return fmt.Sprintf("expedite %s queue", q) },
		checkQueue(q), func(ctx context.Context) (int64, error) { return s.b.Expedite(ctx, q) })
}

func (s *Store) ClearQueue(ctx context.Context, q Queue) error {
	return do0(s, ctx, "ClearQueue", func() string { return fmt.Sprintf("clear %s queue", q) },
		checkQueue(q), func(ctx context.Context) error { return s.b.ClearQueue(ctx, q) })
}

// Settings.

func (s *Store) ServerSetting(ctx context.Context, key string) (string, error) {
	return do(s, ctx, "ServerSetting", func() string { return fmt.Sprintf("read setting %q", key) },
		checkSettingKey(key), func(ctx context.Context) (string, error) { return s.b.ServerSetting(ctx, key) })
}

func (s *Store) ServerSettings(ctx context.Context) (map[string]string, error) {
	return do(s, ctx, "ServerSettings", text("read settings"), nil, s.b.ServerSettings)
}

func (s *Store) SetServerSetting(ctx context.Context, key, value string) error {
	return do0(s, ctx, "SetServerSetting", func() string { return fmt.Sprintf("set setting %q", key) },
		checkSetting(key, value), func(ctx context.Context) error { return s.b.SetServerSetting(ctx, key, value) })
}

func (s *Store) DeleteServerSetting(ctx context.Context, key string) error {
	return do0(s, ctx, "DeleteServerSetting", func() string { return fmt.Sprintf("delete setting %q", key) },
		checkSettingKey(key), func(ctx context.Context) error { return s.b.DeleteServerSetting(ctx, key) })
}

func (s *Store) IncrServerSetting(ctx context.Context, key string, delta int64) (int64, error) {
	return do(s, ctx, "IncrServerSetting", func() string { return fmt.Sprintf("increment setting %q", key) },
		checkSettingKey(key), func(ctx context.Context) (int64, error) { return s.b.IncrServerSetting(ctx, key, delta) })
}

// Checksums.

func (s *Store) SetChecksum(ctx context.Context, c Checksum) error {
	bad := checkChecksum(c)
	if bad == nil && c.Fid <= 0 {
		bad = invalid("fid %d", c.Fid)
	}
	return do0(s, ctx, "SetChecksum", func() string { return fmt.Sprintf("set checksum of fid %d", c.Fid) },
		bad, func(ctx context.Context) error { return s.b.SetChecksum(ctx, c) })
}

func (s *Store) Checksum(ctx context.Context, fid int64) (Checksum, error) {
	return do(s, ctx, "Checksum", func() string { return fmt.Sprintf("read checksum of fid %d", fid) }, nil,
		func(ctx context.Context) (Checksum, error) { return s.b.Checksum(ctx, fid) })
}

func (s *Store) Checksums(ctx context.Context, after int64, limit int) ([]Checksum, error) {
	return do(s, ctx, "Checksums", func() string { return fmt.Sprintf("list checksums after fid %d", after) },
		checkLimit(limit), func(ctx context.Context) ([]Checksum, error) { return s.b.Checksums(ctx, after, limit) })
}

func (s *Store) DeleteChecksum(ctx context.Context, fid int64) error {
	return do0(s, ctx, "DeleteChecksum", func() string { return fmt.Sprintf("delete checksum of fid %d", fid) }, nil,
		func(ctx context.Context) error { return s.b.DeleteChecksum(ctx, fid) })
}

// FsckLog.

func (s *Store) AppendFsckLog(ctx context.Context, e FsckEvent) error {
	return do0(s, ctx, "AppendFsckLog", func() string { return fmt.Sprintf("log fsck event %q", e.Code) },
		checkFsckEvent(e), func(ctx context.Context) error { return s.b.AppendFsckLog(ctx, e) })
}

func (s *Store) FsckEvents(ctx context.Context, after int64, limit int) ([]FsckEvent, error) {
	return do(s, ctx, "FsckEvents", text("list fsck events"), checkLimit(limit),
		func(ctx context.Context) ([]FsckEvent, error) { return s.b.FsckEvents(ctx, after, limit) })
}

func (s *Store) FsckEventCounts(ctx context.Context) (map[string]int64, error) {
	return do(s, ctx, "FsckEventCounts", text("count fsck events"), nil, s.b.FsckEventCounts)
}

func (s *Store) ClearFsckLog(ctx context.Context) error {
	return do0(s, ctx, "ClearFsckLog", text("clear fsck log"), nil, s.b.ClearFsckLog)
}

// Locks.

// Lock bounds the wait by the lock's timeout plus the default deadline,
// and keeps the lock in the held table until its release.
func (s *Store) Lock(ctx context.Context, name string, timeout time.Duration) (Lock, error) {
	start := time.Now()
	l, err := call(s, ctx, "Lock", timeout, func() string { return fmt.Sprintf("lock %q", name) },
		CheckLock(name, timeout), func(ctx context.Context) (Lock, error) { return s.b.Lock(ctx, name, timeout) })
	if err != nil {
		if s.obs != nil && errors.Is(err, ErrLockTimeout) {
			s.obs.Lock(LockEvent{Kind: LockTimedOut, Name: name})
		}
		return nil, err
	}
	pl := &portableLock{Lock: l, s: s, granted: time.Now()}
	s.mu.Lock()
	s.held[pl] = struct{}{}
	s.mu.Unlock()
	if s.obs != nil {
		s.obs.Lock(LockEvent{Kind: LockGranted, Name: name, Wait: pl.granted.Sub(start)})
		pl.released = make(chan struct{})
		go pl.watch()
	}
	return pl, nil
}

func (s *Store) heldLocks() []HeldLock {
	s.mu.Lock()
	out := make([]HeldLock, 0, len(s.held))
	for l := range s.held {
		h := HeldLock{Name: l.Name(), Token: l.Token(), Since: l.granted}
		select {
		case <-l.Lost():
			h.Lost = true
		default:
		}
		out = append(out, h)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b HeldLock) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// portableLock is a Lock a Store handed out.
type portableLock struct {
	Lock
	s        *Store
	granted  time.Time
	once     sync.Once
	released chan struct{} // with an Observer: closed at the release
}

// Unwrap is the Backend's lock, for its fault hooks.
func (l *portableLock) Unwrap() Lock { return l.Lock }

// watch tells the Observer of a Lost firing while the lock is held.
func (l *portableLock) watch() {
	select {
	case <-l.Lost():
		select {
		case <-l.released:
		default:
			l.s.obs.Lock(LockEvent{Kind: LockLost, Name: l.Name()})
		}
	case <-l.released:
	case <-l.s.closing:
	}
}

func (l *portableLock) Release(ctx context.Context) error {
	var start time.Time
	if l.s.obs != nil {
		start = time.Now()
	}
	c, cancel := l.s.bound(ctx, 0)
	err := fail(func() string { return fmt.Sprintf("release lock %q", l.Name()) }, l.Lock.Release(c))
	cancel()
	if err == nil || errors.Is(err, ErrLockLost) {
		l.once.Do(func() {
			l.s.mu.Lock()
			delete(l.s.held, l)
			l.s.mu.Unlock()
			if l.s.obs != nil {
				close(l.released)
				l.s.obs.Lock(LockEvent{Kind: LockReleased, Name: l.Name(), Held: time.Since(l.granted)})
			}
		})
	}
	if l.s.obs != nil {
		l.s.obs.Call("Release", time.Since(start), err)
	}
	return err
}
