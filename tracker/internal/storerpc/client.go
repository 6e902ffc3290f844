package storerpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Client is the other end's Store, as seen from this end: every method is
// a call over the connection. Close closes the connection.
type Client struct {
	c    *Conn
	caps store.Capabilities
}

var _ store.Backend = (*Client)(nil)

// Store is the other end's Store. caps is what its Capabilities reports
// (the serving end says it once, in whatever greeting the two ends use).
func (c *Conn) Store(caps store.Capabilities) *Client { return &Client{c: c, caps: caps} }

// replyGrace is how long a call whose context ended still waits for the
// serving end's answer, which normally comes at once (its context has the
// same deadline and is cancelled too); after that the call returns the
// context's error and a late lock grant stays with the serving end until
// the connection ends.
const replyGrace = 5 * time.Second

// call runs method at the other end and returns its results.
func (c *Conn) call(ctx context.Context, method string, args ...any) ([]json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storerpc: %s: %w", method, err)
	}
	f := frame{T: "call", M: method, F: store.Fences(ctx)}
	for _, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("storerpc: %s: %v: %w", method, err, store.ErrInvalid)
		}
		f.A = append(f.A, b)
	}
	if dl, ok := ctx.Deadline(); ok {
		f.DL = dl.UnixNano()
	}
	ch := make(chan frame, 1)
	c.mu.Lock()
	c.nextID++
	f.ID = c.nextID
	c.pending[f.ID] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, f.ID)
		c.mu.Unlock()
	}()
	if err := c.send(f); err != nil {
		return nil, fmt.Errorf("storerpc: %s: %v: %w", method, err, store.ErrUnavailable)
	}
	var grace <-chan time.Time
	ctxDone := ctx.Done()
	for {
		select {
		case r := <-ch:
			if r.E != nil {
				return nil, decodeErr(r.E)
			}
			return r.A, nil
		case <-ctxDone:
			// A deadline ends the serving end's context by itself (it has
			// the same one), so that the error is the deadline's there too.
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				_ = c.send(frame{T: "cancel", ID: f.ID})
			}
			ctxDone = nil
			t := time.NewTimer(replyGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			return nil, fmt.Errorf("storerpc: %s: %w", method, ctx.Err())
		case <-c.done:
			// Sent, and no answer will come: it may or may not have
			// applied.
			return nil, fmt.Errorf("storerpc: %s: %v: %w", method, c.err, store.ErrUnknownOutcome)
		}
	}
}

func (rc *Client) call0(ctx context.Context, method string, args ...any) error {
	_, err := rc.c.call(ctx, method, args...)
	return err
}

func call1[T any](rc *Client, ctx context.Context, method string, args ...any) (T, error) {
	var v T
	res, err := rc.c.call(ctx, method, args...)
	if err != nil {
		return v, err
	}
	if len(res) != 1 {
		return v, fmt.Errorf("storerpc: %s: %d results, want 1", method, len(res))
	}
	if err := json.Unmarshal(res[0], &v); err != nil {
		return v, fmt.Errorf("storerpc: %s: result: %w", method, err)
	}
	return v, nil
}

// Close closes the connection; the serving end releases our locks.
func (rc *Client) Close() error { return rc.c.Close() }

// Capabilities are the serving Store's.
func (rc *Client) Capabilities() store.Capabilities { return rc.caps }

func (rc *Client) Ping(ctx context.Context) error { return rc.call0(ctx, "Ping") }
func (rc *Client) Info(ctx context.Context) (store.Info, error) {
	return call1[store.Info](rc, ctx, "Info")
}
func (rc *Client) Now(ctx context.Context) (time.Time, error) {
	return call1[time.Time](rc, ctx, "Now")
}

// Lock takes name at the serving end, which holds it for us until Release
// or until the connection ends.
func (rc *Client) Lock(ctx context.Context, name string, timeout time.Duration) (store.Lock, error) {
	g, err := call1[lockGrant](rc, ctx, "Lock", name, timeout)
	if err != nil {
		return nil, err
	}
	l := &remoteLock{c: rc.c, h: g.H, name: g.Name, token: g.Token, lost: make(chan struct{})}
	rc.c.mu.Lock()
	rc.c.locks[g.H] = l
	rc.c.mu.Unlock()
	select {
	case <-rc.c.done:
		l.markLost()
	default:
	}
	return l, nil
}

// remoteLock is a lock the serving end holds for us.
type remoteLock struct {
	c        *Conn
	h        uint64
	name     string
	token    int64
	lost     chan struct{}
	lostOnce sync.Once
	mu       sync.Mutex
	released bool
}

func (l *remoteLock) Name() string          { return l.name }
func (l *remoteLock) Token() int64          { return l.token }
func (l *remoteLock) Lost() <-chan struct{} { return l.lost }
func (l *remoteLock) markLost()             { l.lostOnce.Do(func() { close(l.lost) }) }

func (l *remoteLock) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	if _, err := l.c.call(ctx, "Lock.Release", l.h); err != nil && !errors.Is(err, store.ErrLockLost) {
		return err
	} else if err != nil {
		l.forget()
		return err
	}
	l.released = true
	l.forget()
	return nil
}

// forget drops the lock from the connection's table: released, or lost
// and so nothing to release.
func (l *remoteLock) forget() {
	l.c.mu.Lock()
	delete(l.c.locks, l.h)
	l.c.mu.Unlock()
}

// The Store's other methods, each one call.
func (rc *Client) CreateDomain(ctx context.Context, name string) (store.Domain, error) {
	return call1[store.Domain](rc, ctx, "CreateDomain", name)
}
func (rc *Client) DeleteDomain(ctx context.Context, dmid int) error {
	return rc.call0(ctx, "DeleteDomain", dmid)
}
func (rc *Client) Domains(ctx context.Context) ([]store.Domain, error) {
	return call1[[]store.Domain](rc, ctx, "Domains")
}
func (rc *Client) CreateClass(ctx context.Context, c store.Class) (store.Class, error) {
	return call1[store.Class](rc, ctx, "CreateClass", c)
}
func (rc *Client) UpdateClass(ctx context.Context, c store.Class) error {
	return rc.call0(ctx, "UpdateClass", c)
}
func (rc *Client) DeleteClass(ctx context.Context, dmid int, classid int) error {
	return rc.call0(ctx, "DeleteClass", dmid, classid)
}
func (rc *Client) Classes(ctx context.Context) ([]store.Class, error) {
	return call1[[]store.Class](rc, ctx, "Classes")
}
func (rc *Client) CreateHost(ctx context.Context, h store.Host) (store.Host, error) {
	return call1[store.Host](rc, ctx, "CreateHost", h)
}
func (rc *Client) UpdateHost(ctx context.Context, h store.Host) error {
	return rc.call0(ctx, "UpdateHost", h)
}
func (rc *Client) DeleteHost(ctx context.Context, hostid int) error {
	return rc.call0(ctx, "DeleteHost", hostid)
}
func (rc *Client) Hosts(ctx context.Context) ([]store.Host, error) {
	return call1[[]store.Host](rc, ctx, "Hosts")
}
func (rc *Client) CreateDevice(ctx context.Context, d store.Device) (store.Device, error) {
	return call1[store.Device](rc, ctx, "CreateDevice", d)
}
func (rc *Client) SetDeviceState(ctx context.Context, devid int, state store.DeviceState) error {
	return rc.call0(ctx, "SetDeviceState", devid, state)
}
func (rc *Client) SetDeviceWeight(ctx context.Context, devid int, weight int) error {
	return rc.call0(ctx, "SetDeviceWeight", devid, weight)
}
func (rc *Client) SetDeviceUsage(ctx context.Context, devid int, mbTotal int64, mbUsed int64) error {
	return rc.call0(ctx, "SetDeviceUsage", devid, mbTotal, mbUsed)
}
func (rc *Client) DeleteDevice(ctx context.Context, devid int) error {
	return rc.call0(ctx, "DeleteDevice", devid)
}
func (rc *Client) Devices(ctx context.Context) ([]store.Device, error) {
	return call1[[]store.Device](rc, ctx, "Devices")
}
func (rc *Client) CreateTempFile(ctx context.Context, t store.TempFile) (int64, error) {
	return call1[int64](rc, ctx, "CreateTempFile", t)
}
func (rc *Client) TempFile(ctx context.Context, fid int64) (store.TempFile, error) {
	return call1[store.TempFile](rc, ctx, "TempFile", fid)
}
func (rc *Client) DeleteTempFile(ctx context.Context, fid int64) error {
	return rc.call0(ctx, "DeleteTempFile", fid)
}
func (rc *Client) ExpiredTempFiles(ctx context.Context, age time.Duration, limit int) ([]store.TempFile, error) {
	return call1[[]store.TempFile](rc, ctx, "ExpiredTempFiles", age, limit)
}
func (rc *Client) CommitFile(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	return call1[store.CommitResult](rc, ctx, "CommitFile", c)
}
func (rc *Client) File(ctx context.Context, fid int64) (store.File, error) {
	return call1[store.File](rc, ctx, "File", fid)
}
func (rc *Client) FileByKey(ctx context.Context, dmid int, key string) (store.File, error) {
	return call1[store.File](rc, ctx, "FileByKey", dmid, key)
}
func (rc *Client) Files(ctx context.Context, from int64, to int64, limit int) ([]store.File, error) {
	return call1[[]store.File](rc, ctx, "Files", from, to, limit)
}
func (rc *Client) MaxFid(ctx context.Context) (int64, error) { return call1[int64](rc, ctx, "MaxFid") }
func (rc *Client) FidCounter(ctx context.Context) (int64, error) {
	return call1[int64](rc, ctx, "FidCounter")
}
func (rc *Client) ImportRows(ctx context.Context, im store.Import) error {
	return rc.call0(ctx, "ImportRows", im)
}
func (rc *Client) FileCounts(ctx context.Context) ([]store.FileCount, error) {
	return call1[[]store.FileCount](rc, ctx, "FileCounts")
}
func (rc *Client) ListKeys(ctx context.Context, dmid int, prefix string, after string, limit int) ([]string, error) {
	return call1[[]string](rc, ctx, "ListKeys", dmid, prefix, after, limit)
}
func (rc *Client) RenameFile(ctx context.Context, dmid int, from string, to string) error {
	return rc.call0(ctx, "RenameFile", dmid, from, to)
}
func (rc *Client) SetFileClass(ctx context.Context, fid int64, classid int) error {
	return rc.call0(ctx, "SetFileClass", fid, classid)
}
func (rc *Client) DeleteFile(ctx context.Context, fid int64) error {
	return rc.call0(ctx, "DeleteFile", fid)
}
func (rc *Client) AddFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	return call1[bool](rc, ctx, "AddFileOn", fid, devid)
}
func (rc *Client) RemoveFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	return call1[bool](rc, ctx, "RemoveFileOn", fid, devid)
}
func (rc *Client) FileOn(ctx context.Context, fid int64) ([]int, error) {
	return call1[[]int](rc, ctx, "FileOn", fid)
}
func (rc *Client) FidsOnDevice(ctx context.Context, devid int, after int64, limit int) ([]int64, error) {
	return call1[[]int64](rc, ctx, "FidsOnDevice", devid, after, limit)
}
func (rc *Client) FileOnRows(ctx context.Context, after store.FileOnRow, limit int) ([]store.FileOnRow, error) {
	return call1[[]store.FileOnRow](rc, ctx, "FileOnRows", after, limit)
}
func (rc *Client) SyncDevCount(ctx context.Context, fid int64) (int, error) {
	return call1[int](rc, ctx, "SyncDevCount", fid)
}
func (rc *Client) Enqueue(ctx context.Context, q store.Queue, entries ...store.QueueEntry) error {
	return rc.call0(ctx, "Enqueue", q, entries)
}
func (rc *Client) Lease(ctx context.Context, q store.Queue, max int, lease time.Duration) ([]store.QueueItem, error) {
	return call1[[]store.QueueItem](rc, ctx, "Lease", q, max, lease)
}
func (rc *Client) Reschedule(ctx context.Context, q store.Queue, fid int64, after time.Duration, failed bool) error {
	return rc.call0(ctx, "Reschedule", q, fid, after, failed)
}
func (rc *Client) Finish(ctx context.Context, q store.Queue, fid int64) error {
	return rc.call0(ctx, "Finish", q, fid)
}
func (rc *Client) QueueItem(ctx context.Context, q store.Queue, fid int64) (store.QueueItem, error) {
	return call1[store.QueueItem](rc, ctx, "QueueItem", q, fid)
}
func (rc *Client) QueueItems(ctx context.Context, q store.Queue, after int64, limit int) ([]store.QueueItem, error) {
	return call1[[]store.QueueItem](rc, ctx, "QueueItems", q, after, limit)
}
func (rc *Client) QueueLength(ctx context.Context, q store.Queue) (int64, error) {
	return call1[int64](rc, ctx, "QueueLength", q)
}
func (rc *Client) Expedite(ctx context.Context, q store.Queue) (int64, error) {
	return call1[int64](rc, ctx, "Expedite", q)
}
func (rc *Client) ClearQueue(ctx context.Context, q store.Queue) error {
	return rc.call0(ctx, "ClearQueue", q)
}
func (rc *Client) ServerSetting(ctx context.Context, key string) (string, error) {
	return call1[string](rc, ctx, "ServerSetting", key)
}
func (rc *Client) ServerSettings(ctx context.Context) (map[string]string, error) {
	return call1[map[string]string](rc, ctx, "ServerSettings")
}
func (rc *Client) SetServerSetting(ctx context.Context, key string, value string) error {
	return rc.call0(ctx, "SetServerSetting", key, value)
}
func (rc *Client) DeleteServerSetting(ctx context.Context, key string) error {
	return rc.call0(ctx, "DeleteServerSetting", key)
}
func (rc *Client) IncrServerSetting(ctx context.Context, key string, delta int64) (int64, error) {
	return call1[int64](rc, ctx, "IncrServerSetting", key, delta)
}
func (rc *Client) SetChecksum(ctx context.Context, c store.Checksum) error {
	return rc.call0(ctx, "SetChecksum", c)
}
func (rc *Client) Checksum(ctx context.Context, fid int64) (store.Checksum, error) {
	return call1[store.Checksum](rc, ctx, "Checksum", fid)
}
func (rc *Client) Checksums(ctx context.Context, after int64, limit int) ([]store.Checksum, error) {
	return call1[[]store.Checksum](rc, ctx, "Checksums", after, limit)
}
func (rc *Client) DeleteChecksum(ctx context.Context, fid int64) error {
	return rc.call0(ctx, "DeleteChecksum", fid)
}
func (rc *Client) AppendFsckLog(ctx context.Context, e store.FsckEvent) error {
	return rc.call0(ctx, "AppendFsckLog", e)
}
func (rc *Client) FsckEvents(ctx context.Context, after int64, limit int) ([]store.FsckEvent, error) {
	return call1[[]store.FsckEvent](rc, ctx, "FsckEvents", after, limit)
}
func (rc *Client) FsckEventCounts(ctx context.Context) (map[string]int64, error) {
	return call1[map[string]int64](rc, ctx, "FsckEventCounts")
}
func (rc *Client) ClearFsckLog(ctx context.Context) error { return rc.call0(ctx, "ClearFsckLog") }
