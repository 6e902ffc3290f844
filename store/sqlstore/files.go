package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gomogile/gomogile/store"
)

const fidCounter = "fid"

// The fid allocator's invariant: the counter row "fid" is at least every
// fid in file and tempfile. initFidCounter establishes it (New runs it, and
// so does an allocation that finds the row missing); a named reservation
// raises the counter in the transaction that inserts the row; an
// allocation adds one to it. So taking the next value is one short
// autocommit statement (Dialect.Counter): no MAX(fid) per upload, and the
// row is locked for that statement only, not across a transaction.

// nextFid takes the next fid from the counter.
func (s *Store) nextFid(ctx context.Context) (int64, error) {
	c := s.d.Counter()
	var fid int64
	err := s.read(ctx, func() error {
		var ok bool
		var err error
		if fid, ok, err = s.bump(ctx, c.Next, c.NextByInsertID, fidCounter); err != nil || ok {
			return err
		}
		// A new database, or its rows were emptied.
		if err := s.initFidCounter(ctx); err != nil {
			return err
		}
		if fid, ok, err = s.bump(ctx, c.Next, c.NextByInsertID, fidCounter); err == nil && !ok {
			err = errors.New("the fid counter row vanished as it was created")
		}
		return err
	})
	if err == nil && fid <= 0 {
		err = fmt.Errorf("fid counter gave %d", fid)
	}
	return fid, err
}

// FidCounter is the fid counter's value, and never below a fid in file
// or tempfile (a database the counter row was not made in yet: one made by
// mogdbsetup and never written by a Store).
func (s *Store) FidCounter(ctx context.Context) (int64, error) {
	var v int64
	err := s.read(ctx, func() error {
		var c sql.NullInt64
		err := s.queryRow(ctx, s.db, "SELECT value FROM gomogile_counter WHERE name = ?", fidCounter).Scan(&c)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		top, err := s.topFid(ctx, s.db)
		v = max(c.Int64, top)
		return err
	})
	return v, s.wrap(err)
}

// initFidCounter creates the fid counter, or raises it, to the largest fid
// in file or tempfile, without failing when a concurrent Store does the
// same. Fids taken meanwhile are already below the counter.
func (s *Store) initFidCounter(ctx context.Context) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		top, err := s.topFid(ctx, tx)
		if err != nil {
			return err
		}
		if err := s.ensureCounter(ctx, tx, top); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, "UPDATE gomogile_counter SET value = ? WHERE name = ? AND value < ?", top, fidCounter, top)
		return err
	})
}

func (s *Store) ensureCounter(ctx context.Context, tx *sql.Tx, value int64) error {
	_, err := s.exec(ctx, tx, s.d.Upsert("gomogile_counter", []string{"name", "value"}, []string{"name"}, ""), fidCounter, value)
	return err
}

// topFid is the largest fid in file or tempfile.
func (s *Store) topFid(ctx context.Context, q querier) (int64, error) {
	var a, b sql.NullInt64
	if err := s.queryRow(ctx, q, "SELECT MAX(fid) FROM file").Scan(&a); err != nil {
		return 0, err
	}
	if err := s.queryRow(ctx, q, "SELECT MAX(fid) FROM tempfile").Scan(&b); err != nil {
		return 0, err
	}
	return max(a.Int64, b.Int64), nil
}

// keyIs matches dkey against a key given twice: the plain comparison lets
// the (dmid, dkey) index find the row, the byte comparison keeps a
// case-insensitive or PAD SPACE collation from matching "K" or "k " for "k"
// (which, in a commit, would replace another key's file). Where the
// dialect says dkey is Collated, the unique key itself treats "K" and "k"
// as one key, so the lookup must too (as MogileFS's did), or a commit of
// "k" beside "K" would find no owner and collide on every retry.
func (s *Store) keyIs() string {
	if collated(s.d, "dkey") {
		return "dkey = ? AND dkey = ?"
	}
	return "dkey = ? AND " + s.d.ByteOrder("dkey") + " = ?"
}

func joinDevIDs(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, ",")
}

func splitDevIDs(s string) []int {
	var out []int
	for _, p := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(p)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// CreateTempFile reserves a fid.
func (s *Store) CreateTempFile(ctx context.Context, t store.TempFile) (int64, error) {
	devids := joinDevIDs(t.DevIDs)
	ins := `INSERT INTO tempfile (fid, createtime, classid, dmid, dkey, devids)
VALUES (?, ` + s.d.UnixNow() + `, ?, ?, ?, ?)`
	insert := func(q querier, fid int64) error {
		_, err := s.exec(ctx, q, ins, fid, t.ClassID, t.DomainID, t.Key, nullStr(devids))
		return err
	}
	if t.Fid != 0 {
		err := s.tx(ctx, func(tx *sql.Tx) error {
			for _, table := range []string{"file", "tempfile"} {
				if ok, err := s.exists(ctx, tx, "SELECT 1 FROM "+table+" WHERE fid = ?", t.Fid); err != nil || ok {
					return hasErr(err, store.ErrDuplicate)
				}
			}
			// Keep the counter at or above a caller-named fid, so it is
			// never handed out again once its rows are gone.
			if err := s.ensureCounter(ctx, tx, t.Fid); err != nil {
				return err
			}
			if _, err := s.exec(ctx, tx, "UPDATE gomogile_counter SET value = ? WHERE name = ? AND value < ?", t.Fid, fidCounter, t.Fid); err != nil {
				return err
			}
			return insert(tx, t.Fid)
		})
		if err != nil {
			return 0, s.wrap(err)
		}
		return t.Fid, nil
	}
	if s.plan.insertTemp != nil && len(store.Fences(ctx)) == 0 {
		fid, err := s.plan.insertTemp(ctx, t.ClassID, t.DomainID, t.Key, nullStr(devids))
		if err != nil {
			return 0, s.wrap(err)
		}
		return fid, nil
	}
	fenced := len(store.Fences(ctx)) != 0
	for attempt := 0; ; attempt++ {
		fid, err := s.nextFid(ctx)
		if err != nil {
			return 0, s.wrap(err)
		}
		if fenced {
			err = s.tx(ctx, func(tx *sql.Tx) error { return insert(tx, fid) })
		} else {
			err = insert(s.db, fid)
		}
		if err == nil {
			return fid, nil
		}
		if err = s.fidRetry(ctx, err, !fenced, attempt); err != nil {
			return 0, s.wrap(err)
		}
	}
}

// fidRetry decides what follows an attempt to insert a row under a new
// fid that failed with err: nil to try again, or the error to return.
// autocommit says the INSERT ran as a statement of its own, so that when
// the connection or ctx ended under it, it may have applied: the outcome
// is unknown, as for a COMMIT (a reservation nobody was told of is left
// for the reaper, and the caller knows it may exist). A statement that
// never reached the server (ErrKindUnsent: the connection was refused, or
// found dead before it was written) applied nothing and is tried again,
// like a conflict, after a pause. A duplicate fid means something put a
// row above the counter (another program writing tempfile): the counter's
// invariant is restored and the next try goes at once.
func (s *Store) fidRetry(ctx context.Context, err error, autocommit bool, attempt int) error {
	if isSentinel(err) {
		return err
	}
	kind := s.classify(err)
	if autocommit && kind != ErrKindUnsent &&
		(kind == ErrKindConnLost || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("%w: %w", store.ErrUnknownOutcome, err)
	}
	if s.lastAttempt(err, attempt) {
		return err
	}
	if kind == ErrKindDuplicate {
		return s.initFidCounter(ctx)
	}
	if !s.retryable(err) || sleep(ctx, attempt) != nil {
		return err
	}
	return nil
}

const tempfileCols = "fid, dmid, dkey, classid, createtime, devids"

func scanTempFile(sc interface{ Scan(...any) error }) (store.TempFile, error) {
	var t store.TempFile
	var key, devids sql.NullString
	var ct sql.NullInt64
	if err := sc.Scan(&t.Fid, &t.DomainID, &key, &t.ClassID, &ct, &devids); err != nil {
		return t, err
	}
	t.Key, t.CreateTime, t.DevIDs = key.String, unixTime(ct), splitDevIDs(devids.String)
	return t, nil
}

// TempFile reads a tempfile row.
func (s *Store) TempFile(ctx context.Context, fid int64) (store.TempFile, error) {
	var t store.TempFile
	err := s.read(ctx, func() error {
		var err error
		t, err = scanTempFile(s.queryRow(ctx, s.db, "SELECT "+tempfileCols+" FROM tempfile WHERE fid = ?", fid))
		return err
	})
	return t, s.wrap(err)
}

// DeleteTempFile removes a tempfile row.
func (s *Store) DeleteTempFile(ctx context.Context, fid int64) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		n, err := s.execN(ctx, tx, "DELETE FROM tempfile WHERE fid = ?", fid)
		if err == nil && n == 0 {
			err = store.ErrNotFound
		}
		return err
	})
	return s.wrap(err)
}

// ExpiredTempFiles lists tempfiles older than age, oldest first.
func (s *Store) ExpiredTempFiles(ctx context.Context, age time.Duration, limit int) ([]store.TempFile, error) {
	var out []store.TempFile
	err := s.read(ctx, func() error {
		out = nil
		rows, err := s.query(ctx, s.db, "SELECT "+tempfileCols+" FROM tempfile WHERE createtime < "+s.d.UnixNow()+
			" - ? ORDER BY createtime, fid"+limitClause(limit), int64(age/time.Second))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := scanTempFile(rows)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, s.wrap(err)
}

const fileCols = "fid, dmid, dkey, length, classid, devcount"

func scanFile(sc interface{ Scan(...any) error }) (store.File, error) {
	var f store.File
	var key sql.NullString
	var length sql.NullInt64
	if err := sc.Scan(&f.Fid, &f.DomainID, &key, &length, &f.ClassID, &f.DevCount); err != nil {
		return f, err
	}
	f.Key, f.Length = key.String, length.Int64
	return f, nil
}

// maxCommitRounds bounds how often CommitFile reruns after losing a race
// for a new key to another commit.
const maxCommitRounds = 64

// CommitFile turns a tempfile into a file; see store.Files.
func (s *Store) CommitFile(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	devs := slices.Clone(c.DevIDs)
	slices.Sort(devs)
	devs = slices.Compact(devs)
	var res store.CommitResult
	var err error
	// Two commits of different fids for one new key both find no owner
	// and one fails on the (dmid, dkey) key; run it again so it replaces
	// the winner, as if they had come one after the other. Every round of
	// such a conflict has a winner, so N commits racing for one key need at
	// most N rounds: the bound only stops a pathological loop.
	for attempt := 0; attempt < maxCommitRounds; attempt++ {
		res, err = s.plan.commit(ctx, c, devs)
		if err == nil || isSentinel(err) || s.classify(err) != ErrKindDuplicate {
			break
		}
		if serr := sleep(ctx, min(attempt, 3)); serr != nil {
			err = serr
			break
		}
	}
	if err != nil {
		return store.CommitResult{}, s.wrap(err)
	}
	return res, nil
}

// commitTx is one commit in tx, a statement at a time. devs are the
// commit's devices, sorted and without repeats.
func (s *Store) commitTx(ctx context.Context, tx *sql.Tx, c store.Commit, devs []int) (store.CommitResult, error) {
	won, err := s.execN(ctx, tx, "DELETE FROM tempfile WHERE fid = ?", c.Fid)
	if err != nil {
		return store.CommitResult{}, err
	}
	var n int64
	if won != 0 {
		ins := s.commitInsert(c, devs, "")
		if n, err = s.execN(ctx, tx, ins.query, ins.args...); err != nil {
			return store.CommitResult{}, err
		}
	}
	res, tail, err := s.commitRest(ctx, tx, c, devs, won, n)
	if err == nil {
		err = s.runAll(ctx, tx, tail)
	}
	return res, err
}

// commitInsert is the common commit in one statement: a key nobody owns
// and a fid with no file_on rows but the commit's own, so devcount is
// len(devs) and nothing needs reading. The file_on rows it counts on
// cannot change under it: every writer of them locks the tempfile row
// first (lockFid), which the commit's DELETE holds, and this statement's
// read comes after the DELETE's wait for any such writer. When it inserts
// nothing (the key has an owner, or a placement of the tempfile stage added
// another device) commitRest finds out which. cond, when not empty, is one
// more condition for inserting.
func (s *Store) commitInsert(c store.Commit, devs []int, cond string) stmt {
	others := "SELECT 1 FROM file_on WHERE fid = ?"
	args := []any{c.Fid, c.DomainID, c.Key, c.Length, c.ClassID, len(devs), c.Fid}
	if len(devs) > 0 {
		others += " AND devid NOT IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(devs)), ", ") + ")"
		for _, d := range devs {
			args = append(args, d)
		}
	}
	where := "NOT EXISTS (" + others + ")"
	if cond != "" {
		where = cond + " AND " + where
	}
	ins := s.upsertFrom("file", fileColList, []string{"dmid", "dkey"}, "",
		"SELECT ?, ?, ?, ?, ?, ? FROM (SELECT 1 AS one) one WHERE "+where)
	return stmt{ins, args}
}

// commitRest is the commit after the DELETE of the tempfile, which changed
// won rows, and commitInsert, which inserted n. It returns the statements
// left, which need no answer: for the common commit (n == 1) the file_on
// rows, the checksum and the replication queue row; for any other, which
// it carries out itself, none.
func (s *Store) commitRest(ctx context.Context, q querier, c store.Commit, devs []int, won, n int64) (store.CommitResult, []stmt, error) {
	var res store.CommitResult
	if won == 0 {
		// Either another commit won, or this is a retry of one that
		// applied but whose acknowledgement was lost.
		f, err := scanFile(s.queryRow(ctx, q, "SELECT "+fileCols+" FROM file WHERE fid = ?", c.Fid))
		if errors.Is(err, sql.ErrNoRows) || (err == nil && (f.DomainID != c.DomainID || f.Key != c.Key)) {
			return res, nil, fmt.Errorf("%w: no tempfile %d", store.ErrNotFound, c.Fid)
		}
		if err != nil {
			return res, nil, err
		}
		res.File = f
		err = s.queryRow(ctx, q, "SELECT replaced_fid FROM gomogile_commit WHERE fid = ?", c.Fid).Scan(&res.ReplacedFid)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
		return res, nil, err
	}
	if n == 1 {
		res.File = store.File{Fid: c.Fid, DomainID: c.DomainID, Key: c.Key, Length: c.Length, ClassID: c.ClassID, DevCount: len(devs)}
	} else {
		var err error
		if res, err = s.commitOwned(ctx, q, c); err != nil {
			return res, nil, err
		}
	}
	var tail []stmt
	onIns := s.d.Upsert("file_on", []string{"fid", "devid"}, []string{"fid", "devid"}, "")
	for _, d := range devs {
		tail = append(tail, stmt{onIns, []any{c.Fid, d}})
	}
	if n != 1 {
		tail = append(tail, s.syncDevCountStmt(c.Fid))
	}
	if c.Checksum != nil {
		sum := *c.Checksum
		sum.Fid = c.Fid
		tail = append(tail, s.checksumStmt(sum))
	}
	if c.Replicate {
		st, err := s.enqueueStmt(store.QueueReplicate, store.QueueEntry{Fid: c.Fid})
		if err != nil {
			return res, nil, err
		}
		tail = append(tail, st)
	}
	if res.ReplacedFid != 0 {
		up := s.d.Upsert("gomogile_commit", []string{"fid", "replaced_fid"}, []string{"fid"},
			"replaced_fid = "+s.d.Excluded("replaced_fid"))
		tail = append(tail, stmt{up, []any{c.Fid, res.ReplacedFid}})
	}
	if n == 1 {
		return res, tail, nil
	}
	if err := s.runAll(ctx, q, tail); err != nil {
		return res, nil, err
	}
	var err error
	res.File, err = scanFile(s.queryRow(ctx, q, "SELECT "+fileCols+" FROM file WHERE fid = ?", c.Fid))
	return res, nil, err
}

// fileColList is fileCols as a list.
var fileColList = strings.Split(fileCols, ", ")

// commitOwned is the part of a commit that the one-statement INSERT of
// commitTx could not do: it removes and queues for deletion the fid that
// owns the key, if any, then inserts the file row (devcount 0, which the
// caller then syncs from file_on). It reports the replaced fid.
func (s *Store) commitOwned(ctx context.Context, tx querier, c store.Commit) (store.CommitResult, error) {
	var res store.CommitResult
	var owner sql.NullInt64
	err := s.queryRow(ctx, tx, "SELECT fid FROM file WHERE dmid = ? AND "+s.keyIs(), c.DomainID, c.Key, c.Key).Scan(&owner)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return res, err
	}
	if old := owner.Int64; owner.Valid && old != c.Fid {
		n, err := s.execN(ctx, tx, "DELETE FROM file WHERE fid = ?", old)
		if err != nil {
			return res, err
		}
		if n == 1 {
			if err := s.enqueueTx(ctx, tx, store.QueueDelete, store.QueueEntry{Fid: old}); err != nil {
				return res, err
			}
			if _, err := s.exec(ctx, tx, "DELETE FROM gomogile_commit WHERE fid = ?", old); err != nil {
				return res, err
			}
			res.ReplacedFid = old
		}
	}
	_, err = s.exec(ctx, tx, "INSERT INTO file ("+fileCols+") VALUES (?, ?, ?, ?, ?, 0)",
		c.Fid, c.DomainID, c.Key, c.Length, c.ClassID)
	return res, err
}

// syncDevCount sets devcount from file_on. The subquery is evaluated as a
// locking read on MySQL and at statement start on PostgreSQL, both after
// the caller locked the file row, so it sees every committed file_on row.
func (s *Store) syncDevCount(ctx context.Context, tx querier, fid int64) error {
	return s.run(ctx, tx, s.syncDevCountStmt(fid))
}

// syncDevCountStmt is syncDevCount's statement.
func (s *Store) syncDevCountStmt(fid int64) stmt {
	return stmt{"UPDATE file SET devcount = (SELECT COUNT(*) FROM file_on WHERE file_on.fid = ?) WHERE fid = ?", []any{fid, fid}}
}

// File reads a file row.
func (s *Store) File(ctx context.Context, fid int64) (store.File, error) {
	var f store.File
	err := s.readAny(ctx, func(ctx context.Context, db querier) error {
		var err error
		f, err = scanFile(s.queryRow(ctx, db, "SELECT "+fileCols+" FROM file WHERE fid = ?", fid))
		return err
	}, nil)
	return f, s.wrap(err)
}

// FileByKey reads the file owning (dmid, key).
func (s *Store) FileByKey(ctx context.Context, dmid int, key string) (store.File, error) {
	var f store.File
	err := s.readAny(ctx, func(ctx context.Context, db querier) error {
		var err error
		f, err = scanFile(s.queryRow(ctx, db, "SELECT "+fileCols+" FROM file WHERE dmid = ? AND "+s.keyIs(), dmid, key, key))
		return err
	}, nil)
	return f, s.wrap(err)
}

// Files lists files with from <= fid <= to.
func (s *Store) Files(ctx context.Context, from, to int64, limit int) ([]store.File, error) {
	var out []store.File
	err := s.readAny(ctx, func(ctx context.Context, db querier) error {
		out = nil
		rows, err := s.query(ctx, db, "SELECT "+fileCols+" FROM file WHERE fid >= ? AND fid <= ? ORDER BY fid"+limitClause(limit), from, to)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			f, err := scanFile(rows)
			if err != nil {
				return err
			}
			out = append(out, f)
		}
		return rows.Err()
	}, func() bool { return len(out) == 0 })
	return out, s.wrap(err)
}

// MaxFid is the largest committed fid.
func (s *Store) MaxFid(ctx context.Context) (int64, error) {
	var v sql.NullInt64
	err := s.read(ctx, func() error {
		return s.queryRow(ctx, s.db, "SELECT MAX(fid) FROM file").Scan(&v)
	})
	return v.Int64, s.wrap(err)
}

// FileCounts counts committed files by domain, class and devcount.
func (s *Store) FileCounts(ctx context.Context) ([]store.FileCount, error) {
	var out []store.FileCount
	err := s.read(ctx, func() error {
		out = out[:0]
		rows, err := s.query(ctx, s.db, "SELECT dmid, classid, devcount, COUNT(*) FROM file GROUP BY dmid, classid, devcount ORDER BY dmid, classid, devcount")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c store.FileCount
			if err := rows.Scan(&c.DomainID, &c.ClassID, &c.DevCount, &c.Files); err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, s.wrap(err)
}

// likeEscaper quotes LIKE's wildcards with '!' (a backslash would mean
// different things in MySQL's string literals and in PostgreSQL's).
var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")

// prefixEnd is the smallest valid UTF-8 string above every string starting
// with prefix, or "" when there is none. Byte order of UTF-8 is code point
// order, so incrementing the last code point (skipping surrogates, carrying
// past U+10FFFF) bounds the range without producing invalid text, which
// PostgreSQL would refuse as a parameter.
func prefixEnd(prefix string) string {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
		switch {
		case r == utf8.MaxRune:
			continue
		case r == 0xD7FF:
			r = 0xE000
		default:
			r++
		}
		return prefix + string(r)
	}
	return ""
}

// ListKeys lists keys by prefix in byte order.
func (s *Store) ListKeys(ctx context.Context, dmid int, prefix, after string, limit int) ([]string, error) {
	key := s.d.ByteOrder("dkey")
	q := "SELECT dkey FROM file WHERE dmid = ?"
	args := []any{dmid}
	switch {
	case prefix == "":
	case collated(s.d, "dkey"):
		// MogileFS's LIKE, which follows the collation as the key's
		// uniqueness does.
		q += ` AND dkey LIKE ? ESCAPE '!'`
		args = append(args, likeEscaper.Replace(prefix)+"%")
	default:
		q += " AND " + key + " >= ?"
		args = append(args, prefix)
		if end := prefixEnd(prefix); end != "" {
			q += " AND " + key + " < ?"
			args = append(args, end)
		}
	}
	if after != "" {
		q += " AND " + key + " > ?"
		args = append(args, after)
	}
	q += " ORDER BY " + key + limitClause(limit)
	var out []string
	err := s.readAny(ctx, func(ctx context.Context, db querier) error {
		out = nil
		rows, err := s.query(ctx, db, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k sql.NullString
			if err := rows.Scan(&k); err != nil {
				return err
			}
			out = append(out, k.String)
		}
		return rows.Err()
	}, func() bool { return len(out) == 0 })
	return out, s.wrap(err)
}

// RenameFile moves a file to another key of its domain.
func (s *Store) RenameFile(ctx context.Context, dmid int, from, to string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var fid int64
		if err := s.queryRow(ctx, tx, "SELECT fid FROM file WHERE dmid = ? AND "+s.keyIs(), dmid, from, from).Scan(&fid); err != nil {
			return err
		}
		if from == to {
			return nil
		}
		// Another file only: under a collated key, "a" to "A" renames
		// the file to a spelling of its own key, as MogileFS's UPDATE did.
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM file WHERE dmid = ? AND "+s.keyIs()+" AND fid <> ?", dmid, to, to, fid); err != nil || ok {
			return hasErr(err, store.ErrDuplicate)
		}
		_, err := s.exec(ctx, tx, "UPDATE file SET dkey = ? WHERE fid = ?", to, fid)
		return err
	})
	return s.wrap(err)
}

// SetFileClass changes a file's class.
func (s *Store) SetFileClass(ctx context.Context, fid int64, classid int) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM file WHERE fid = ?", fid); err != nil || !ok {
			return notFound(err)
		}
		_, err := s.exec(ctx, tx, "UPDATE file SET classid = ? WHERE fid = ?", classid, fid)
		return err
	})
	return s.wrap(err)
}

// DeleteFile removes the file (and tempfile) row and queues the fid for
// deletion in one transaction.
func (s *Store) DeleteFile(ctx context.Context, fid int64) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// tempfile before file: the lock order of every writer of both.
		if _, err := s.exec(ctx, tx, "DELETE FROM tempfile WHERE fid = ?", fid); err != nil {
			return err
		}
		n, err := s.execN(ctx, tx, "DELETE FROM file WHERE fid = ?", fid)
		if err != nil {
			return err
		}
		if n == 0 {
			// Only a file is deleted; the rollback keeps a lone tempfile
			// for its own owner (DeleteTempFile, the reaper).
			return store.ErrNotFound
		}
		if err := s.enqueueTx(ctx, tx, store.QueueDelete, store.QueueEntry{Fid: fid}); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, "DELETE FROM gomogile_commit WHERE fid = ?", fid)
		return err
	})
	return s.wrap(err)
}
