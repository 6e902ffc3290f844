package boltstore

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/gomogile/gomogile/store"
)

// file_on: a copy is a key (fid, devid) in file_on and (devid, fid) in
// file_on_by_dev, so that both FileOn and FidsOnDevice are range scans. A
// copy may exist without a file row (replication of a fid still being
// uploaded, a deleted file's copies waiting for the delete worker).

// addCopy records a copy of fid on devid, reporting whether it is new.
func addCopy(tx *bolt.Tx, fid int64, devid int) (bool, error) {
	on := tx.Bucket(bFileOn)
	k := cat(id64(fid), id64(devid))
	if on.Get(k) != nil {
		return false, nil
	}
	if err := on.Put(k, nil); err != nil {
		return false, err
	}
	return true, tx.Bucket(bFileOnDev).Put(cat(id64(devid), id64(fid)), nil)
}

// removeCopy is addCopy's inverse.
func removeCopy(tx *bolt.Tx, fid int64, devid int) (bool, error) {
	on := tx.Bucket(bFileOn)
	k := cat(id64(fid), id64(devid))
	if on.Get(k) == nil {
		return false, nil
	}
	if err := on.Delete(k); err != nil {
		return false, err
	}
	return true, tx.Bucket(bFileOnDev).Delete(cat(id64(devid), id64(fid)))
}

// copiesOf lists the devices holding fid, ascending (the key order).
func copiesOf(tx *bolt.Tx, fid int64) []int {
	var devs []int
	c := tx.Bucket(bFileOn).Cursor()
	p := id64(fid)
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
		devs = append(devs, int(getU64(k[8:])))
	}
	return devs
}

func countCopies(tx *bolt.Tx, fid int64) int { return len(copiesOf(tx, fid)) }

// syncDevCount sets the devcount of fid's file row, if there is one, to its
// number of copies: in the transaction that changed them, so it never
// drifts.
func syncDevCount(tx *bolt.Tx, fid int64) (n int, ok bool, err error) {
	f, ok, err := getFile(tx, fid)
	if err != nil || !ok {
		return 0, ok, err
	}
	f.DevCount = countCopies(tx, fid)
	return f.DevCount, true, tx.Bucket(bFile).Put(id64(fid), encodeFile(f))
}

func (b *backend) AddFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	var added bool
	err := b.write(ctx, func(tx *bolt.Tx) error {
		var err error
		if added, err = addCopy(tx, fid, devid); err != nil || !added {
			return err
		}
		_, _, err = syncDevCount(tx, fid)
		return err
	})
	return added, err
}

func (b *backend) RemoveFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	var removed bool
	err := b.write(ctx, func(tx *bolt.Tx) error {
		var err error
		if removed, err = removeCopy(tx, fid, devid); err != nil || !removed {
			return err
		}
		_, _, err = syncDevCount(tx, fid)
		return err
	})
	return removed, err
}

func (b *backend) FileOn(ctx context.Context, fid int64) ([]int, error) {
	var devs []int
	err := b.read(ctx, func(tx *bolt.Tx) error {
		devs = copiesOf(tx, fid)
		return nil
	})
	return devs, err
}

func (b *backend) FidsOnDevice(ctx context.Context, devid int, after int64, limit int) ([]int64, error) {
	var out []int64
	err := b.read(ctx, func(tx *bolt.Tx) error {
		p := id64(devid)
		c := tx.Bucket(bFileOnDev).Cursor()
		for k, _ := c.Seek(cat(p, id64(max(after, 0)))); k != nil && len(out) < limit && bytes.HasPrefix(k, p); k, _ = c.Next() {
			if fid := int64(getU64(k[8:])); fid > after {
				out = append(out, fid)
			}
		}
		return nil
	})
	return out, err
}

func (b *backend) FileOnRows(ctx context.Context, after store.FileOnRow, limit int) ([]store.FileOnRow, error) {
	var out []store.FileOnRow
	err := b.read(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bFileOn).Cursor()
		from := store.FileOnRow{Fid: max(after.Fid, 0), DevID: max(after.DevID, 0)}
		if after.Fid < 0 {
			from.DevID = 0
		}
		for k, _ := c.Seek(cat(id64(from.Fid), id64(from.DevID))); k != nil && len(out) < limit; k, _ = c.Next() {
			r := store.FileOnRow{Fid: int64(getU64(k)), DevID: int(getU64(k[8:]))}
			if r.Fid > after.Fid || (r.Fid == after.Fid && r.DevID > after.DevID) {
				out = append(out, r)
			}
		}
		return nil
	})
	return out, err
}

func (b *backend) SyncDevCount(ctx context.Context, fid int64) (int, error) {
	var n int
	err := b.write(ctx, func(tx *bolt.Tx) error {
		var ok bool
		var err error
		n, ok, err = syncDevCount(tx, fid)
		if err == nil && !ok {
			err = fmt.Errorf("%w: file %d", store.ErrNotFound, fid)
		}
		return err
	})
	return n, err
}
