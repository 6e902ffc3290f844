package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gomogile/gomogile/store"
)

// Server settings, checksums and the fsck log.

func (b *backend) ServerSetting(ctx context.Context, key string) (string, error) {
	var v string
	err := b.read(ctx, func(tx *bolt.Tx) error {
		raw := tx.Bucket(bSetting).Get([]byte(key))
		if raw == nil {
			return fmt.Errorf("%w: setting %q", store.ErrNotFound, key)
		}
		v = string(raw)
		return nil
	})
	return v, err
}

func (b *backend) ServerSettings(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := b.read(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bSetting).ForEach(func(k, v []byte) error {
			out[string(k)] = string(v)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (b *backend) SetServerSetting(ctx context.Context, key, value string) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bSetting).Put([]byte(key), []byte(value))
	})
}

func (b *backend) DeleteServerSetting(ctx context.Context, key string) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bSetting).Delete([]byte(key))
	})
}

// IncrServerSetting reads and writes in one write transaction, and write
// transactions run one at a time: no increment is lost.
func (b *backend) IncrServerSetting(ctx context.Context, key string, delta int64) (int64, error) {
	var n int64
	err := b.write(ctx, func(tx *bolt.Tx) error {
		settings := tx.Bucket(bSetting)
		var old int64
		if v := settings.Get([]byte(key)); v != nil {
			var err error
			if old, err = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err != nil {
				return fmt.Errorf("%w: setting %q is %q, not an integer", store.ErrInvalid, key, v)
			}
		}
		n = old + delta
		if (delta > 0 && n < old) || (delta < 0 && n > old) {
			return fmt.Errorf("%w: setting %q: %d%+d overflows", store.ErrInvalid, key, old, delta)
		}
		return settings.Put([]byte(key), []byte(strconv.FormatInt(n, 10)))
	})
	return n, err
}

func putChecksum(tx *bolt.Tx, c store.Checksum) error {
	return tx.Bucket(bChecksum).Put(id64(c.Fid), cat([]byte{byte(c.HashType)}, c.Sum))
}

func decodeChecksum(fid int64, v []byte) (store.Checksum, error) {
	if len(v) < 1 {
		return store.Checksum{}, fmt.Errorf("%w: checksum of fid %d", errCorrupt, fid)
	}
	return store.Checksum{Fid: fid, HashType: store.HashType(v[0]), Sum: bytes.Clone(v[1:])}, nil
}

func (b *backend) SetChecksum(ctx context.Context, c store.Checksum) error {
	return b.write(ctx, func(tx *bolt.Tx) error { return putChecksum(tx, c) })
}

func (b *backend) Checksum(ctx context.Context, fid int64) (store.Checksum, error) {
	var c store.Checksum
	err := b.read(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bChecksum).Get(id64(fid))
		if v == nil {
			return fmt.Errorf("%w: checksum of fid %d", store.ErrNotFound, fid)
		}
		var err error
		c, err = decodeChecksum(fid, v)
		return err
	})
	return c, err
}

func (b *backend) Checksums(ctx context.Context, after int64, limit int) ([]store.Checksum, error) {
	var out []store.Checksum
	err := b.read(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bChecksum).Cursor()
		for k, v := c.Seek(id64(max(after, 0))); k != nil && len(out) < limit; k, v = c.Next() {
			fid := int64(getU64(k))
			if fid <= after {
				continue
			}
			sum, err := decodeChecksum(fid, v)
			if err != nil {
				return err
			}
			out = append(out, sum)
		}
		return nil
	})
	return out, err
}

func (b *backend) DeleteChecksum(ctx context.Context, fid int64) error {
	return b.write(ctx, func(tx *bolt.Tx) error { return tx.Bucket(bChecksum).Delete(id64(fid)) })
}

// appendFsck logs e under the next log id; the counter lives in the meta
// bucket, so ids keep rising after ClearFsckLog, as an auto-increment does.
func appendFsck(tx *bolt.Tx, e store.FsckEvent) error {
	id, err := bumpCounter(tx, kFsckLogID)
	if err != nil {
		return err
	}
	v := &enc{}
	v.int(nanos(e.Time)).int(e.Fid).str(e.Code).int(int64(e.DevID))
	return tx.Bucket(bFsck).Put(id64(id), v.b)
}

func decodeFsck(id int64, v []byte) (store.FsckEvent, error) {
	d := &dec{b: v}
	e := store.FsckEvent{LogID: id, Time: fromNanos(d.int()), Fid: d.int(), Code: d.str(), DevID: int(d.int())}
	return e, d.done("fsck event", v)
}

func (b *backend) AppendFsckLog(ctx context.Context, e store.FsckEvent) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		e.Time = time.Now().Round(0)
		return appendFsck(tx, e)
	})
}

func (b *backend) FsckEvents(ctx context.Context, after int64, limit int) ([]store.FsckEvent, error) {
	var out []store.FsckEvent
	err := b.read(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bFsck).Cursor()
		for k, v := c.Seek(id64(max(after, 0))); k != nil && len(out) < limit; k, v = c.Next() {
			id := int64(getU64(k))
			if id <= after {
				continue
			}
			e, err := decodeFsck(id, v)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

func (b *backend) FsckEventCounts(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := b.read(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bFsck).ForEach(func(k, v []byte) error {
			e, err := decodeFsck(int64(getU64(k)), v)
			out[e.Code]++
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (b *backend) ClearFsckLog(ctx context.Context) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bFsck); err != nil {
			return err
		}
		_, err := tx.CreateBucket(bFsck)
		return err
	})
}
