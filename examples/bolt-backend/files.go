package boltstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gomogile/gomogile/store"
)

// Tempfiles and files. The fid counter in the meta bucket is the largest
// fid handed out or named; a new fid is one past it, so a fid is never
// handed out twice even once every row of it is gone.

var (
	kFidCounter = []byte("fid_counter")
	kFsckLogID  = []byte("fsck_logid")
)

// raiseCounter sets a meta counter to at least v.
func raiseCounter(tx *bolt.Tx, key []byte, v int64) error {
	meta := tx.Bucket(bMeta)
	if int64(getU64(meta.Get(key))) >= v {
		return nil
	}
	return meta.Put(key, id64(v))
}

// bumpCounter adds one to a meta counter and returns the new value.
func bumpCounter(tx *bolt.Tx, key []byte) (int64, error) {
	meta := tx.Bucket(bMeta)
	v := int64(getU64(meta.Get(key))) + 1
	return v, meta.Put(key, id64(v))
}

func encodeTemp(t store.TempFile) []byte {
	e := &enc{}
	e.int(int64(t.DomainID)).str(t.Key).int(int64(t.ClassID)).int(nanos(t.CreateTime)).int(int64(len(t.DevIDs)))
	for _, d := range t.DevIDs {
		e.int(int64(d))
	}
	return e.b
}

func decodeTemp(fid int64, v []byte) (store.TempFile, error) {
	d := &dec{b: v}
	t := store.TempFile{Fid: fid, DomainID: int(d.int()), Key: d.str(), ClassID: int(d.int()), CreateTime: fromNanos(d.int())}
	n := d.int()
	if n < 0 || n > int64(len(d.b)) {
		d.err = errCorrupt
	}
	for range n {
		t.DevIDs = append(t.DevIDs, int(d.int()))
	}
	return t, d.done("tempfile", v)
}

// deleteTemp removes tempfile fid, reporting whether there was one.
func deleteTemp(tx *bolt.Tx, fid int64) (bool, error) {
	temps := tx.Bucket(bTemp)
	v := temps.Get(id64(fid))
	if v == nil {
		return false, nil
	}
	t, err := decodeTemp(fid, v)
	if err != nil {
		return false, err
	}
	if err := tx.Bucket(bTempTime).Delete(cat(timeKey(nanos(t.CreateTime)), id64(fid))); err != nil {
		return false, err
	}
	return true, temps.Delete(id64(fid))
}

func (b *backend) CreateTempFile(ctx context.Context, t store.TempFile) (int64, error) {
	err := b.write(ctx, func(tx *bolt.Tx) error {
		if t.Fid != 0 {
			if tx.Bucket(bTemp).Get(id64(t.Fid)) != nil || tx.Bucket(bFile).Get(id64(t.Fid)) != nil {
				return fmt.Errorf("%w: fid %d", store.ErrDuplicate, t.Fid)
			}
			if err := raiseCounter(tx, kFidCounter, t.Fid); err != nil {
				return err
			}
		} else {
			fid, err := bumpCounter(tx, kFidCounter)
			if err != nil {
				return err
			}
			t.Fid = fid
		}
		t.CreateTime = time.Now().Round(0)
		if err := tx.Bucket(bTemp).Put(id64(t.Fid), encodeTemp(t)); err != nil {
			return err
		}
		return tx.Bucket(bTempTime).Put(cat(timeKey(nanos(t.CreateTime)), id64(t.Fid)), nil)
	})
	if err != nil {
		return 0, err
	}
	return t.Fid, nil
}

func (b *backend) TempFile(ctx context.Context, fid int64) (store.TempFile, error) {
	var t store.TempFile
	err := b.read(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bTemp).Get(id64(fid))
		if v == nil {
			return fmt.Errorf("%w: tempfile %d", store.ErrNotFound, fid)
		}
		var err error
		t, err = decodeTemp(fid, v)
		return err
	})
	return t, err
}

func (b *backend) DeleteTempFile(ctx context.Context, fid int64) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		ok, err := deleteTemp(tx, fid)
		if err == nil && !ok {
			err = fmt.Errorf("%w: tempfile %d", store.ErrNotFound, fid)
		}
		return err
	})
}

func (b *backend) ExpiredTempFiles(ctx context.Context, age time.Duration, limit int) ([]store.TempFile, error) {
	var out []store.TempFile
	err := b.read(ctx, func(tx *bolt.Tx) error {
		// Durations are nanoseconds: now - age cannot overflow for age >= 0.
		cutoff := timeKey(time.Now().UnixNano() - int64(age))
		temps := tx.Bucket(bTemp)
		c := tx.Bucket(bTempTime).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit && bytes.Compare(k[:8], cutoff) < 0; k, _ = c.Next() {
			fid := int64(getU64(k[8:]))
			t, err := decodeTemp(fid, temps.Get(id64(fid)))
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// fileRow is a file row: the contract's File and the fid its commit
// replaced, which a retry of that commit must report again.
type fileRow struct {
	store.File
	replaced int64
}

func encodeFile(f fileRow) []byte {
	e := &enc{}
	e.int(int64(f.DomainID)).str(f.Key).int(f.Length).int(int64(f.ClassID)).int(int64(f.DevCount)).int(f.replaced)
	return e.b
}

func decodeFile(fid int64, v []byte) (fileRow, error) {
	d := &dec{b: v}
	f := fileRow{File: store.File{Fid: fid, DomainID: int(d.int()), Key: d.str(), Length: d.int(), ClassID: int(d.int()), DevCount: int(d.int())},
		replaced: d.int()}
	return f, d.done("file", v)
}

func fileKeyKey(dmid int, key string) []byte { return cat(id64(dmid), []byte(key)) }
func fileClassKey(f store.File) []byte       { return cat(id64(f.DomainID), id64(f.ClassID), id64(f.Fid)) }

// getFile reads file fid; ok is false when there is none.
func getFile(tx *bolt.Tx, fid int64) (f fileRow, ok bool, err error) {
	v := tx.Bucket(bFile).Get(id64(fid))
	if v == nil {
		return f, false, nil
	}
	f, err = decodeFile(fid, v)
	return f, err == nil, err
}

// putFile writes a file row and its indexes. old, when not nil, is the row
// it replaces, whose indexes go.
func putFile(tx *bolt.Tx, f fileRow, old *fileRow) error {
	if old != nil {
		if err := unindexFile(tx, old.File); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bFile).Put(id64(f.Fid), encodeFile(f)); err != nil {
		return err
	}
	if err := tx.Bucket(bFileKey).Put(fileKeyKey(f.DomainID, f.Key), id64(f.Fid)); err != nil {
		return err
	}
	return tx.Bucket(bFileClass).Put(fileClassKey(f.File), nil)
}

func unindexFile(tx *bolt.Tx, f store.File) error {
	if err := tx.Bucket(bFileKey).Delete(fileKeyKey(f.DomainID, f.Key)); err != nil {
		return err
	}
	return tx.Bucket(bFileClass).Delete(fileClassKey(f))
}

// deleteFileRow removes file row f and its indexes (its copies and checksum
// stay for the delete worker) and queues the fid for deletion.
func deleteFileRow(tx *bolt.Tx, f store.File, now time.Time) error {
	if err := unindexFile(tx, f); err != nil {
		return err
	}
	if err := tx.Bucket(bFile).Delete(id64(f.Fid)); err != nil {
		return err
	}
	return enqueue(tx, store.QueueDelete, store.QueueEntry{Fid: f.Fid}, now)
}

func (b *backend) CommitFile(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	var res store.CommitResult
	err := b.write(ctx, func(tx *bolt.Tx) error {
		now := time.Now().Round(0)
		f, exists, err := getFile(tx, c.Fid)
		if err != nil {
			return err
		}
		won, err := deleteTemp(tx, c.Fid)
		if err != nil {
			return err
		}
		if !won {
			// Another commit of the tempfile won, or this is a retry of an
			// applied commit: the same fid, domain and key.
			if exists && f.DomainID == c.DomainID && f.Key == c.Key {
				res = store.CommitResult{File: f.File, ReplacedFid: f.replaced}
				return nil
			}
			return fmt.Errorf("%w: no tempfile %d", store.ErrNotFound, c.Fid)
		}
		row := fileRow{File: store.File{Fid: c.Fid, DomainID: c.DomainID, Key: c.Key, Length: c.Length, ClassID: c.ClassID}}
		var old *fileRow
		if exists {
			old = &f // a row of this fid already (an import beside a tempfile): its indexes go
		}
		if v := tx.Bucket(bFileKey).Get(fileKeyKey(c.DomainID, c.Key)); v != nil && int64(getU64(v)) != c.Fid {
			owner, ok, err := getFile(tx, int64(getU64(v)))
			if err != nil {
				return err
			}
			if ok {
				if err := deleteFileRow(tx, owner.File, now); err != nil {
					return err
				}
				row.replaced = owner.Fid
			}
		}
		for _, dev := range c.DevIDs {
			if _, err := addCopy(tx, c.Fid, dev); err != nil {
				return err
			}
		}
		// devcount counts every copy, those recorded before the commit too.
		row.DevCount = countCopies(tx, c.Fid)
		if err := putFile(tx, row, old); err != nil {
			return err
		}
		if c.Checksum != nil {
			sum := *c.Checksum
			sum.Fid = c.Fid
			if err := putChecksum(tx, sum); err != nil {
				return err
			}
		}
		if c.Replicate {
			if err := enqueue(tx, store.QueueReplicate, store.QueueEntry{Fid: c.Fid}, now); err != nil {
				return err
			}
		}
		res = store.CommitResult{File: row.File, ReplacedFid: row.replaced}
		return nil
	})
	if err != nil {
		return store.CommitResult{}, err
	}
	return res, nil
}

func (b *backend) File(ctx context.Context, fid int64) (store.File, error) {
	var f fileRow
	err := b.read(ctx, func(tx *bolt.Tx) error {
		var ok bool
		var err error
		f, ok, err = getFile(tx, fid)
		if err == nil && !ok {
			err = fmt.Errorf("%w: file %d", store.ErrNotFound, fid)
		}
		return err
	})
	return f.File, err
}

// fileByKey reads the file owning (dmid, key).
func fileByKey(tx *bolt.Tx, dmid int, key string) (store.File, error) {
	v := tx.Bucket(bFileKey).Get(fileKeyKey(dmid, key))
	if v == nil {
		return store.File{}, fmt.Errorf("%w: key %q of domain %d", store.ErrNotFound, key, dmid)
	}
	f, ok, err := getFile(tx, int64(getU64(v)))
	if err == nil && !ok {
		err = fmt.Errorf("%w: index entry of key %q names no file %d", errCorrupt, key, getU64(v))
	}
	return f.File, err
}

func (b *backend) FileByKey(ctx context.Context, dmid int, key string) (store.File, error) {
	var f store.File
	err := b.read(ctx, func(tx *bolt.Tx) error {
		var err error
		f, err = fileByKey(tx, dmid, key)
		return err
	})
	return f, err
}

// FileByKeyOn implements store.PathsReader: the file and its copies from
// one snapshot.
func (b *backend) FileByKeyOn(ctx context.Context, dmid int, key string) (store.File, []int, error) {
	var f store.File
	var devs []int
	err := b.read(ctx, func(tx *bolt.Tx) error {
		var err error
		if f, err = fileByKey(tx, dmid, key); err == nil {
			devs = copiesOf(tx, f.Fid)
		}
		return err
	})
	return f, devs, err
}

func (b *backend) Files(ctx context.Context, from, to int64, limit int) ([]store.File, error) {
	var out []store.File
	err := b.read(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bFile).Cursor()
		for k, v := c.Seek(id64(max(from, 0))); k != nil && len(out) < limit; k, v = c.Next() {
			fid := int64(getU64(k))
			if fid > to {
				break
			}
			f, err := decodeFile(fid, v)
			if err != nil {
				return err
			}
			out = append(out, f.File)
		}
		return nil
	})
	return out, err
}

func (b *backend) MaxFid(ctx context.Context) (int64, error) {
	var n int64
	err := b.read(ctx, func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bFile).Cursor().Last(); k != nil {
			n = int64(getU64(k))
		}
		return nil
	})
	return n, err
}

func (b *backend) FidCounter(ctx context.Context) (int64, error) {
	var n int64
	err := b.read(ctx, func(tx *bolt.Tx) error {
		n = int64(getU64(tx.Bucket(bMeta).Get(kFidCounter)))
		return nil
	})
	return n, err
}

func (b *backend) FileCounts(ctx context.Context) ([]store.FileCount, error) {
	var out []store.FileCount
	err := b.read(ctx, func(tx *bolt.Tx) error {
		counts := map[[3]int]int64{}
		err := tx.Bucket(bFile).ForEach(func(k, v []byte) error {
			f, err := decodeFile(int64(getU64(k)), v)
			counts[[3]int{f.DomainID, f.ClassID, f.DevCount}]++
			return err
		})
		for k, n := range counts {
			out = append(out, store.FileCount{DomainID: k[0], ClassID: k[1], DevCount: k[2], Files: n})
		}
		slices.SortFunc(out, func(a, b store.FileCount) int {
			return cmp.Or(cmp.Compare(a.DomainID, b.DomainID), cmp.Compare(a.ClassID, b.ClassID), cmp.Compare(a.DevCount, b.DevCount))
		})
		return err
	})
	return out, err
}

// ListKeys walks the (dmid, key) index: bbolt orders keys by bytes, which is
// the order the contract asks for, and a prefix is a range of it.
func (b *backend) ListKeys(ctx context.Context, dmid int, prefix, after string, limit int) ([]string, error) {
	var out []string
	err := b.read(ctx, func(tx *bolt.Tx) error {
		pfx := fileKeyKey(dmid, prefix)
		start := pfx
		if aft := fileKeyKey(dmid, after); after != "" && bytes.Compare(aft, start) > 0 {
			start = aft
		}
		c := tx.Bucket(bFileKey).Cursor()
		for k, _ := c.Seek(start); k != nil && len(out) < limit && bytes.HasPrefix(k, pfx); k, _ = c.Next() {
			if key := string(k[8:]); key > after {
				out = append(out, key)
			}
		}
		return nil
	})
	return out, err
}

func (b *backend) RenameFile(ctx context.Context, dmid int, from, to string) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		keys := tx.Bucket(bFileKey)
		v := keys.Get(fileKeyKey(dmid, from))
		if v == nil {
			return fmt.Errorf("%w: key %q of domain %d", store.ErrNotFound, from, dmid)
		}
		if keys.Get(fileKeyKey(dmid, to)) != nil {
			return fmt.Errorf("%w: key %q of domain %d", store.ErrDuplicate, to, dmid)
		}
		f, ok, err := getFile(tx, int64(getU64(v)))
		if err != nil || !ok {
			return cmp.Or(err, fmt.Errorf("%w: index entry of key %q names no file", errCorrupt, from))
		}
		old := f
		f.Key = to
		return putFile(tx, f, &old)
	})
}

func (b *backend) SetFileClass(ctx context.Context, fid int64, classid int) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		f, ok, err := getFile(tx, fid)
		if err == nil && !ok {
			err = fmt.Errorf("%w: file %d", store.ErrNotFound, fid)
		}
		if err != nil {
			return err
		}
		old := f
		f.ClassID = classid
		return putFile(tx, f, &old)
	})
}

func (b *backend) DeleteFile(ctx context.Context, fid int64) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		f, ok, err := getFile(tx, fid)
		if err == nil && !ok {
			err = fmt.Errorf("%w: file %d", store.ErrNotFound, fid)
		}
		if err != nil {
			return err
		}
		if _, err := deleteTemp(tx, fid); err != nil {
			return err
		}
		return deleteFileRow(tx, f.File, time.Now().Round(0))
	})
}

// checkImportRow refuses values of an imported row that the contract's
// ranges do not allow (the Store checked the fids and texts already).
func checkImportRow(im store.Import) error {
	for _, f := range im.Files {
		if f.DomainID < 1 || f.DomainID > store.MaxDomainID || f.ClassID < 0 || f.ClassID > store.MaxClassID || len(f.Key) > 255 {
			return fmt.Errorf("%w: imported file %d: domain %d, class %d, key of %d bytes", store.ErrInvalid, f.Fid, f.DomainID, f.ClassID, len(f.Key))
		}
	}
	for _, r := range im.FileOn {
		if r.DevID < 1 || r.DevID > store.MaxDeviceID {
			return fmt.Errorf("%w: imported copy of fid %d on device %d", store.ErrInvalid, r.Fid, r.DevID)
		}
	}
	for _, it := range im.Queue {
		if it.DevID < 0 || it.DevID > store.MaxDeviceID || it.FailCount < 0 {
			return fmt.Errorf("%w: imported %s row of fid %d: devid %d, failcount %d", store.ErrInvalid, it.Queue, it.Fid, it.DevID, it.FailCount)
		}
	}
	if im.FidFloor < 0 || im.FidFloor > math.MaxInt64/2 {
		return fmt.Errorf("%w: fid floor %d", store.ErrInvalid, im.FidFloor)
	}
	return nil
}

func (b *backend) ImportRows(ctx context.Context, im store.Import) error {
	if err := checkImportRow(im); err != nil {
		return err
	}
	// One transaction: any duplicate returns an error, and bbolt rolls
	// back every row written before it.
	return b.write(ctx, func(tx *bolt.Tx) error {
		top := im.FidFloor
		for _, f := range im.Files {
			top = max(top, f.Fid)
			if tx.Bucket(bFile).Get(id64(f.Fid)) != nil {
				return fmt.Errorf("%w: file %d", store.ErrDuplicate, f.Fid)
			}
			if tx.Bucket(bFileKey).Get(fileKeyKey(f.DomainID, f.Key)) != nil {
				return fmt.Errorf("%w: key %q of domain %d", store.ErrDuplicate, f.Key, f.DomainID)
			}
			if err := putFile(tx, fileRow{File: f}, nil); err != nil {
				return err
			}
		}
		for _, r := range im.FileOn {
			top = max(top, r.Fid)
			// Imported devcounts are kept as they were: addCopy alone.
			added, err := addCopy(tx, r.Fid, r.DevID)
			if err != nil {
				return err
			}
			if !added {
				return fmt.Errorf("%w: copy of fid %d on device %d", store.ErrDuplicate, r.Fid, r.DevID)
			}
		}
		for _, c := range im.Checksums {
			top = max(top, c.Fid)
			if tx.Bucket(bChecksum).Get(id64(c.Fid)) != nil {
				return fmt.Errorf("%w: checksum of fid %d", store.ErrDuplicate, c.Fid)
			}
			if err := putChecksum(tx, c); err != nil {
				return err
			}
		}
		for _, it := range im.Queue {
			top = max(top, it.Fid)
			rows, _ := queueOf(tx, it.Queue)
			if rows.Get(id64(it.Fid)) != nil {
				return fmt.Errorf("%w: %s row of fid %d", store.ErrDuplicate, it.Queue, it.Fid)
			}
			if err := putRow(tx, it.Queue, it, nil); err != nil {
				return err
			}
		}
		for _, e := range im.FsckLog {
			top = max(top, e.Fid)
			if err := appendFsck(tx, e); err != nil {
				return err
			}
		}
		for k, v := range im.Settings {
			if err := tx.Bucket(bSetting).Put([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		return raiseCounter(tx, kFidCounter, top)
	})
}
