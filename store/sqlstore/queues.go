package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/store"
)

// queueTable describes where a queue lives in schema 17.
type queueTable struct {
	table string
	where string // extra condition selecting the queue's rows ("" or " AND type = N")
	typ   int    // file_to_queue.type; 0 for the other tables
	devid string // column of QueueEntry.DevID, "" if none
	arg   bool   // has arg
	flags bool   // has flags
}

func queueOf(q store.Queue) (queueTable, error) {
	switch q {
	case store.QueueReplicate:
		return queueTable{table: "file_to_replicate", devid: "fromdevid", flags: true}, nil
	case store.QueueDelete:
		return queueTable{table: "file_to_delete2"}, nil
	case store.QueueFsck, store.QueueRebalance:
		typ := 1
		if q == store.QueueRebalance {
			typ = 2
		}
		return queueTable{table: "file_to_queue", where: " AND type = " + strconv.Itoa(typ), typ: typ,
			devid: "devid", arg: true, flags: true}, nil
	}
	return queueTable{}, invalid("unknown queue %d", int(q))
}

// cols lists the columns read into a QueueItem, in scanItem's order.
func (t queueTable) cols() string {
	dev, arg, flags := "0", "NULL", "0"
	if t.devid != "" {
		dev = t.devid
	}
	if t.arg {
		arg = "arg"
	}
	if t.flags {
		flags = "flags"
	}
	return "fid, nexttry, failcount, " + dev + ", " + arg + ", " + flags
}

func scanItem(q store.Queue, sc interface{ Scan(...any) error }) (store.QueueItem, error) {
	it := store.QueueItem{Queue: q}
	var next int64
	var dev, flags, fail sql.NullInt64
	var arg sql.NullString
	if err := sc.Scan(&it.Fid, &next, &fail, &dev, &arg, &flags); err != nil {
		return it, err
	}
	it.NextTry, it.DevID, it.Arg, it.Flags, it.FailCount = time.Unix(next, 0), int(dev.Int64), arg.String, int(flags.Int64), int(fail.Int64)
	return it, nil
}

// enqueueTx inserts or merges one queue row: an existing row keeps its
// failcount, devid and arg, and takes the earlier nexttry. The new row's
// nexttry is computed from the database clock inside the statement, so no
// caller reads the clock first.
func (s *Store) enqueueTx(ctx context.Context, tx querier, q store.Queue, e store.QueueEntry) error {
	st, err := s.enqueueStmt(q, e)
	if err != nil {
		return err
	}
	return s.run(ctx, tx, st)
}

// enqueueStmt is enqueueTx's statement.
func (s *Store) enqueueStmt(q store.Queue, e store.QueueEntry) (stmt, error) {
	t, err := queueOf(q)
	if err != nil {
		return stmt{}, err
	}
	cols := []string{"fid", "nexttry", "failcount"}
	vals := []string{"?", s.nextTryExpr(), "?"}
	args := []any{e.Fid, nextTryDelay(e.After), 0}
	key := []string{"fid"}
	if t.typ != 0 {
		cols, vals, args = append(cols, "type"), append(vals, "?"), append(args, t.typ)
		key = append(key, "type")
	}
	if t.devid != "" {
		cols, vals, args = append(cols, t.devid), append(vals, "?"), append(args, nullInt(int64(e.DevID)))
	}
	if t.arg {
		cols, vals, args = append(cols, "arg"), append(vals, "?"), append(args, nullStr(e.Arg))
	}
	if t.flags {
		cols, vals, args = append(cols, "flags"), append(vals, "?"), append(args, 0)
	}
	up := s.upsertFrom(t.table, cols, key, "nexttry = "+s.d.Least(t.table+".nexttry", s.d.Excluded("nexttry")),
		"VALUES ("+strings.Join(vals, ", ")+")")
	return stmt{up, args}, nil
}

// nextTryExpr is the SQL of nextTry on the database clock, with the delay
// (nextTryDelay) as its one '?'.
func (s *Store) nextTryExpr() string {
	return s.d.Least(s.d.UnixNow()+" + ?", strconv.Itoa(endOfTime))
}

// nextTryDelay is the delay nextTryExpr adds to the clock: whole seconds,
// rounded up; store.Never reaches endOfTime whatever the clock.
func nextTryDelay(d time.Duration) int64 {
	if d == store.Never {
		return endOfTime
	}
	return min(secondsCeil(d), endOfTime)
}

// Enqueue adds or merges rows of q.
func (s *Store) Enqueue(ctx context.Context, q store.Queue, entries ...store.QueueEntry) error {
	if _, err := queueOf(q); err != nil {
		return s.wrap(err)
	}
	if len(entries) == 0 {
		return nil
	}
	// In fid order, so two Stores enqueuing overlapping sets lock rows in
	// the same order.
	sorted := slices.Clone(entries)
	slices.SortStableFunc(sorted, func(a, b store.QueueEntry) int { return cmpInt64(a.Fid, b.Fid) })
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, e := range sorted {
			if err := s.enqueueTx(ctx, tx, q, e); err != nil {
				return err
			}
		}
		return nil
	})
	return s.wrap(err)
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Lease claims up to max due rows in one statement where the dialect is a
// Claimer, else in one transaction, whatever max is — of two round trips
// on a Config.Batch connection, of four otherwise: a locking read of the due rows in (nexttry, fid) order
// (Dialect.ClaimLock: it skips or waits out rows another Lease holds, and
// re-checks that they are still due), one UPDATE moving them all out of
// reach, COMMIT. Two Stores never get one row: the second's read does not
// return a row the first holds, nor, once the first commits, a row whose
// nexttry it moved.
func (s *Store) Lease(ctx context.Context, q store.Queue, maxRows int, lease time.Duration) ([]store.QueueItem, error) {
	t, err := queueOf(q)
	if err != nil {
		return nil, s.wrap(err)
	}
	if maxRows == 0 {
		return nil, nil
	}
	now := s.d.UnixNow()
	due := " FROM " + t.table + " WHERE nexttry <= " + now + t.where + " ORDER BY nexttry, fid" + limitClause(maxRows) + s.d.ClaimLock()
	var out []store.QueueItem
	if s.plan.claim != nil && len(store.Fences(ctx)) == 0 {
		out, err = s.plan.claim(ctx, q, t, now, due, lease)
	} else {
		out, err = s.plan.lease(ctx, q, t, "SELECT "+t.cols()+", "+now+due, lease)
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	return out, nil
}

// leaseUpdate is the UPDATE that moves the rows out, read by a Lease's
// locking read, out of reach for lease from the database clock of that
// read; it sets their NextTry to match.
func leaseUpdate(t queueTable, out []store.QueueItem, lease time.Duration) (string, []any) {
	dbNow := out[0].NextTry.Unix()
	until := min(dbNow+secondsCeil(lease), endOfTime-1)
	args := []any{until}
	for i, it := range out {
		args = append(args, it.Fid)
		out[i].NextTry = time.Unix(until, 0)
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(out)), ", ")
	return "UPDATE " + t.table + " SET nexttry = ? WHERE fid IN (" + marks + ")" + t.where, args
}

// scanItems runs query, whose rows are a queue's cols then one more column
// (the clock, or the new nexttry), and returns them as items with that
// column as NextTry.
func (s *Store) scanItems(ctx context.Context, qr querier, q store.Queue, query string, args ...any) ([]store.QueueItem, error) {
	rows, err := s.query(ctx, qr, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.QueueItem
	for rows.Next() {
		var last int64
		it, err := scanItem(q, rowWithNow{rows, &last})
		if err != nil {
			return nil, err
		}
		it.NextTry = time.Unix(last, 0)
		out = append(out, it)
	}
	return out, rows.Err()
}

// rowWithNow scans a queue row followed by the database clock.
type rowWithNow struct {
	rows *sql.Rows
	now  *int64
}

func (r rowWithNow) Scan(dest ...any) error { return r.rows.Scan(append(dest, r.now)...) }

// Reschedule moves a row's nexttry, counting a failure if asked.
func (s *Store) Reschedule(ctx context.Context, q store.Queue, fid int64, after time.Duration, failed bool) error {
	t, err := queueOf(q)
	if err != nil {
		return s.wrap(err)
	}
	set := "nexttry = " + s.nextTryExpr()
	if failed {
		// failcount is TINYINT UNSIGNED in MySQL: stop at 255.
		set += ", failcount = CASE WHEN failcount < 255 THEN failcount + 1 ELSE failcount END"
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM "+t.table+" WHERE fid = ?"+t.where, fid); err != nil || !ok {
			return notFound(err)
		}
		_, err := s.exec(ctx, tx, "UPDATE "+t.table+" SET "+set+" WHERE fid = ?"+t.where, nextTryDelay(after), fid)
		return err
	})
	return s.wrap(err)
}

// Finish removes fid from q.
func (s *Store) Finish(ctx context.Context, q store.Queue, fid int64) error {
	t, err := queueOf(q)
	if err != nil {
		return s.wrap(err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, "DELETE FROM "+t.table+" WHERE fid = ?"+t.where, fid)
		return err
	})
	return s.wrap(err)
}

// QueueItem reads one row of q.
func (s *Store) QueueItem(ctx context.Context, q store.Queue, fid int64) (store.QueueItem, error) {
	t, err := queueOf(q)
	if err != nil {
		return store.QueueItem{}, s.wrap(err)
	}
	var it store.QueueItem
	err = s.read(ctx, func() error {
		var err error
		it, err = scanItem(q, s.queryRow(ctx, s.db, "SELECT "+t.cols()+" FROM "+t.table+" WHERE fid = ?"+t.where, fid))
		return err
	})
	return it, s.wrap(err)
}

// QueueItems lists the rows of q above fid after.
func (s *Store) QueueItems(ctx context.Context, q store.Queue, after int64, limit int) ([]store.QueueItem, error) {
	t, err := queueOf(q)
	if err != nil {
		return nil, s.wrap(err)
	}
	var out []store.QueueItem
	err = s.read(ctx, func() error {
		out = nil
		rows, err := s.query(ctx, s.db, "SELECT "+t.cols()+" FROM "+t.table+" WHERE fid > ?"+t.where+" ORDER BY fid"+limitClause(limit), after)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			it, err := scanItem(q, rows)
			if err != nil {
				return err
			}
			out = append(out, it)
		}
		return rows.Err()
	})
	return out, s.wrap(err)
}

// QueueLength counts the rows of q.
func (s *Store) QueueLength(ctx context.Context, q store.Queue) (int64, error) {
	t, err := queueOf(q)
	if err != nil {
		return 0, s.wrap(err)
	}
	var n int64
	err = s.read(ctx, func() error {
		return s.queryRow(ctx, s.db, "SELECT COUNT(*) FROM "+t.table+" WHERE 1 = 1"+t.where).Scan(&n)
	})
	return n, s.wrap(err)
}

// Expedite makes every waiting, unparked row of q due now.
func (s *Store) Expedite(ctx context.Context, q store.Queue) (int64, error) {
	t, err := queueOf(q)
	if err != nil {
		return 0, s.wrap(err)
	}
	var n int64
	err = s.tx(ctx, func(tx *sql.Tx) error {
		// The clock is read once per statement on every backend.
		now := s.d.UnixNow()
		var err error
		n, err = s.execN(ctx, tx, "UPDATE "+t.table+" SET nexttry = "+now+" WHERE nexttry > "+now+" AND nexttry < ?"+t.where, endOfTime)
		return err
	})
	return n, s.wrap(err)
}

// ClearQueue removes every row of q.
func (s *Store) ClearQueue(ctx context.Context, q store.Queue) error {
	t, err := queueOf(q)
	if err != nil {
		return s.wrap(err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, "DELETE FROM "+t.table+" WHERE 1 = 1"+t.where)
		return err
	})
	return s.wrap(err)
}
