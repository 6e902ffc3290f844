package sqlstore

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"strings"

	"github.com/gomogile/gomogile/store"
)

// importChunk is how many rows one INSERT of ImportRows carries: few
// enough that the largest (file, 6 columns) stays far below every
// database's bound on parameters (SQLite's 32,766 the lowest), many enough
// that a batch of thousands of files is a few dozen statements.
const importChunk = 500

// ImportRows writes rows copied from another database in one transaction.
func (s *Store) ImportRows(ctx context.Context, im store.Import) error {
	stmts, top, err := s.importStmts(im)
	if err != nil {
		return s.wrap(err)
	}
	keys := slices.Sorted(maps.Keys(im.Settings))
	err = s.tx(ctx, func(tx *sql.Tx) error {
		for _, st := range stmts {
			if _, err := s.exec(ctx, tx, st.query, st.args...); err != nil {
				return err
			}
		}
		for _, k := range keys {
			if err := s.upsertSetting(ctx, tx, k, im.Settings[k]); err != nil {
				return err
			}
		}
		if top <= 0 {
			return nil
		}
		if err := s.ensureCounter(ctx, tx, top); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, "UPDATE gomogile_counter SET value = ? WHERE name = ? AND value < ?", top, fidCounter, top)
		return err
	})
	return s.wrap(err)
}

// importStmts builds the INSERTs of im's rows (which the store.Store
// has checked) and finds the largest fid among them and im.FidFloor.
func (s *Store) importStmts(im store.Import) ([]stmt, int64, error) {
	top := im.FidFloor
	fid := func(f int64) { top = max(top, f) }
	var stmts []stmt
	add := func(table string, cols []string, rows [][]any) {
		for len(rows) > 0 {
			n := min(len(rows), importChunk)
			one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
			var args []any
			for _, r := range rows[:n] {
				args = append(args, r...)
			}
			stmts = append(stmts, stmt{"INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES " +
				strings.TrimSuffix(strings.Repeat(one+", ", n), ", "), args})
			rows = rows[n:]
		}
	}
	var rows [][]any
	for _, f := range im.Files {
		fid(f.Fid)
		rows = append(rows, []any{f.Fid, f.DomainID, f.Key, f.Length, f.ClassID, f.DevCount})
	}
	add("file", strings.Split(fileCols, ", "), rows)
	rows = nil
	for _, r := range im.FileOn {
		fid(r.Fid)
		rows = append(rows, []any{r.Fid, r.DevID})
	}
	add("file_on", []string{"fid", "devid"}, rows)
	rows = nil
	for _, c := range im.Checksums {
		fid(c.Fid)
		sum := c.Sum
		if sum == nil {
			sum = []byte{}
		}
		rows = append(rows, []any{c.Fid, int(c.HashType), sum})
	}
	add("checksum", []string{"fid", "hashtype", "checksum"}, rows)
	byQueue := map[store.Queue][][]any{}
	var queues []store.Queue
	for _, it := range im.Queue {
		fid(it.Fid)
		t, err := queueOf(it.Queue)
		if err != nil {
			return nil, 0, err
		}
		r := []any{it.Fid, min(it.NextTry.Unix(), endOfTime), it.FailCount}
		if t.devid != "" {
			r = append(r, it.DevID)
		}
		if t.arg {
			r = append(r, nullStr(it.Arg))
		}
		if t.flags {
			r = append(r, it.Flags)
		}
		if t.typ != 0 {
			r = append(r, t.typ)
		}
		if byQueue[it.Queue] == nil {
			queues = append(queues, it.Queue)
		}
		byQueue[it.Queue] = append(byQueue[it.Queue], r)
	}
	for _, q := range queues {
		t, _ := queueOf(q)
		cols := []string{"fid", "nexttry", "failcount"}
		if t.devid != "" {
			cols = append(cols, t.devid)
		}
		if t.arg {
			cols = append(cols, "arg")
		}
		if t.flags {
			cols = append(cols, "flags")
		}
		if t.typ != 0 {
			cols = append(cols, "type")
		}
		add(t.table, cols, byQueue[q])
	}
	rows = nil
	for _, e := range im.FsckLog {
		rows = append(rows, []any{e.Time.Unix(), nullInt(e.Fid), e.Code, nullInt(int64(e.DevID))})
	}
	// One row per statement: the log ids follow the order given only if
	// each row is inserted after the one before.
	for _, r := range rows {
		add("fsck_log", []string{"utime", "fid", "evcode", "devid"}, [][]any{r})
	}
	return stmts, top, nil
}
