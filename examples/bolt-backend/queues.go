package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gomogile/gomogile/store"
)

// Queues: each queue has its rows (fid → row) and a due index (nexttry,
// fid → ∅), so that Lease reads the oldest due rows first and stops at the
// first one not due, and Expedite reads only rows in the future. Parked
// rows (store.Never) are due at store.EndOfTime, the last entries of the
// index, which Lease never takes.

var endOfTime = store.EndOfTime.UnixNano()

// queueOf returns q's buckets.
func queueOf(tx *bolt.Tx, q store.Queue) (rows, due *bolt.Bucket) {
	names := queueBuckets[q]
	return tx.Bucket(names[0]), tx.Bucket(names[1])
}

func encodeRow(it store.QueueItem) []byte {
	e := &enc{}
	e.int(nanos(it.NextTry)).int(int64(it.DevID)).str(it.Arg).int(int64(it.FailCount)).int(int64(it.Flags))
	return e.b
}

func decodeRow(q store.Queue, fid int64, v []byte) (store.QueueItem, error) {
	d := &dec{b: v}
	it := store.QueueItem{Queue: q, Fid: fid, NextTry: fromNanos(d.int()), DevID: int(d.int()), Arg: d.str(), FailCount: int(d.int()), Flags: int(d.int())}
	return it, d.done(q.String()+" row", v)
}

func dueKey(it store.QueueItem) []byte { return cat(timeKey(nanos(it.NextTry)), id64(it.Fid)) }

// putRow writes row it of q and its due index entry; old, when not nil, is
// the row it replaces.
func putRow(tx *bolt.Tx, q store.Queue, it store.QueueItem, old *store.QueueItem) error {
	rows, due := queueOf(tx, q)
	if old != nil {
		if err := due.Delete(dueKey(*old)); err != nil {
			return err
		}
	}
	if err := rows.Put(id64(it.Fid), encodeRow(it)); err != nil {
		return err
	}
	return due.Put(dueKey(it), nil)
}

// getRow reads fid's row of q; ok is false when there is none.
func getRow(tx *bolt.Tx, q store.Queue, fid int64) (it store.QueueItem, ok bool, err error) {
	rows, _ := queueOf(tx, q)
	v := rows.Get(id64(fid))
	if v == nil {
		return it, false, nil
	}
	it, err = decodeRow(q, fid, v)
	return it, err == nil, err
}

// dueAt is when a row delayed by after from now is due. A delay reaching
// past store.EndOfTime stops just short of it: still not parked (Expedite
// moves it), and still a time whose nanoseconds fit an int64.
func dueAt(now time.Time, after time.Duration) time.Time {
	if after == store.Never {
		return store.EndOfTime
	}
	if after >= store.EndOfTime.Sub(now) {
		return fromNanos(endOfTime - 1)
	}
	return now.Add(after)
}

// enqueue adds e to q, or moves an existing row's nexttry earlier, keeping
// everything else of it: Enqueue's idempotence, and how CommitFile and
// DeleteFile queue rows.
func enqueue(tx *bolt.Tx, q store.Queue, e store.QueueEntry, now time.Time) error {
	next := dueAt(now, e.After)
	old, ok, err := getRow(tx, q, e.Fid)
	if err != nil {
		return err
	}
	if !ok {
		return putRow(tx, q, store.QueueItem{Queue: q, Fid: e.Fid, DevID: e.DevID, Arg: e.Arg, NextTry: next}, nil)
	}
	if !next.Before(old.NextTry) {
		return nil
	}
	it := old
	it.NextTry = next
	return putRow(tx, q, it, &old)
}

func (b *backend) Enqueue(ctx context.Context, q store.Queue, entries ...store.QueueEntry) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		now := time.Now().Round(0)
		for _, e := range entries {
			if err := enqueue(tx, q, e, now); err != nil {
				return err
			}
		}
		return nil
	})
}

func (b *backend) Lease(ctx context.Context, q store.Queue, limit int, lease time.Duration) ([]store.QueueItem, error) {
	var out []store.QueueItem
	err := b.write(ctx, func(tx *bolt.Tx) error {
		out = nil
		now := time.Now().Round(0)
		rows, due := queueOf(tx, q)
		// Collect first: bbolt cursors do not survive writes to their bucket.
		var take []store.QueueItem
		nowKey := timeKey(now.UnixNano())
		c := due.Cursor()
		for k, _ := c.First(); k != nil && len(take) < limit && bytes.Compare(k[:8], nowKey) <= 0; k, _ = c.Next() {
			fid := int64(getU64(k[8:]))
			it, err := decodeRow(q, fid, rows.Get(id64(fid)))
			if err != nil {
				return err
			}
			if nanos(it.NextTry) == endOfTime {
				break // parked, whatever the clock says
			}
			take = append(take, it)
		}
		for _, old := range take {
			it := old
			it.NextTry = dueAt(now, lease)
			if err := putRow(tx, q, it, &old); err != nil {
				return err
			}
			out = append(out, it)
		}
		return nil
	})
	return out, err
}

func (b *backend) Reschedule(ctx context.Context, q store.Queue, fid int64, after time.Duration, failed bool) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		old, ok, err := getRow(tx, q, fid)
		if err == nil && !ok {
			err = fmt.Errorf("%w: %s row of fid %d", store.ErrNotFound, q, fid)
		}
		if err != nil {
			return err
		}
		it := old
		it.NextTry = dueAt(time.Now().Round(0), after)
		if failed {
			it.FailCount++
		}
		return putRow(tx, q, it, &old)
	})
}

func (b *backend) Finish(ctx context.Context, q store.Queue, fid int64) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		old, ok, err := getRow(tx, q, fid)
		if err != nil || !ok {
			return err
		}
		rows, due := queueOf(tx, q)
		if err := due.Delete(dueKey(old)); err != nil {
			return err
		}
		return rows.Delete(id64(fid))
	})
}

func (b *backend) QueueItem(ctx context.Context, q store.Queue, fid int64) (store.QueueItem, error) {
	var it store.QueueItem
	err := b.read(ctx, func(tx *bolt.Tx) error {
		var ok bool
		var err error
		it, ok, err = getRow(tx, q, fid)
		if err == nil && !ok {
			err = fmt.Errorf("%w: %s row of fid %d", store.ErrNotFound, q, fid)
		}
		return err
	})
	return it, err
}

func (b *backend) QueueItems(ctx context.Context, q store.Queue, after int64, limit int) ([]store.QueueItem, error) {
	var out []store.QueueItem
	err := b.read(ctx, func(tx *bolt.Tx) error {
		rows, _ := queueOf(tx, q)
		c := rows.Cursor()
		for k, v := c.Seek(id64(max(after, 0))); k != nil && len(out) < limit; k, v = c.Next() {
			fid := int64(getU64(k))
			if fid <= after {
				continue
			}
			it, err := decodeRow(q, fid, v)
			if err != nil {
				return err
			}
			out = append(out, it)
		}
		return nil
	})
	return out, err
}

func (b *backend) QueueLength(ctx context.Context, q store.Queue) (int64, error) {
	var n int64
	err := b.read(ctx, func(tx *bolt.Tx) error {
		rows, _ := queueOf(tx, q)
		n = int64(rows.Stats().KeyN)
		return nil
	})
	return n, err
}

func (b *backend) Expedite(ctx context.Context, q store.Queue) (int64, error) {
	var n int64
	err := b.write(ctx, func(tx *bolt.Tx) error {
		n = 0
		now := time.Now().Round(0)
		rows, due := queueOf(tx, q)
		var move []store.QueueItem
		c := due.Cursor()
		for k, _ := c.Seek(timeKey(now.UnixNano() + 1)); k != nil; k, _ = c.Next() {
			fid := int64(getU64(k[8:]))
			it, err := decodeRow(q, fid, rows.Get(id64(fid)))
			if err != nil {
				return err
			}
			if nanos(it.NextTry) == endOfTime {
				break // parked rows stay parked; they sort last
			}
			move = append(move, it)
		}
		for _, old := range move {
			it := old
			it.NextTry = now
			if err := putRow(tx, q, it, &old); err != nil {
				return err
			}
		}
		n = int64(len(move))
		return nil
	})
	return n, err
}

func (b *backend) ClearQueue(ctx context.Context, q store.Queue) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		for _, name := range queueBuckets[q] {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		return nil
	})
}
