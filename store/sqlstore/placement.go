package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/gomogile/gomogile/store"
)

// lockFid takes the row locks that every writer of fid's file_on rows takes
// first, tempfile before file, with UPDATEs that change nothing: a row lock
// on MySQL and PostgreSQL (SQLite serialises writers anyway). While the
// tempfile row is locked, CommitFile cannot turn it into a file, so a
// file_on change at the tempfile stage is never missed by the commit's count.
func (s *Store) lockFid(ctx context.Context, tx querier, fid int64) error {
	return s.runAll(ctx, tx, lockFidStmts(fid))
}

// lockFidStmts are lockFid's statements.
func lockFidStmts(fid int64) []stmt {
	return []stmt{
		{"UPDATE tempfile SET createtime = createtime WHERE fid = ?", []any{fid}},
		{"UPDATE file SET devcount = devcount WHERE fid = ?", []any{fid}},
	}
}

// AddFileOn records a copy of fid on devid.
func (s *Store) AddFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	return s.changeFileOn(ctx, fid, devid, true)
}

// RemoveFileOn forgets the copy of fid on devid.
func (s *Store) RemoveFileOn(ctx context.Context, fid int64, devid int) (bool, error) {
	return s.changeFileOn(ctx, fid, devid, false)
}

func (s *Store) changeFileOn(ctx context.Context, fid int64, devid int, add bool) (bool, error) {
	// The change: a do-nothing Upsert affects one row when it inserted,
	// none when the row was there (see Dialect.Upsert), so no probe first.
	change := stmt{"DELETE FROM file_on WHERE fid = ? AND devid = ?", []any{fid, devid}}
	if add {
		change.query = s.d.Upsert("file_on", []string{"fid", "devid"}, []string{"fid", "devid"}, "")
	}
	changed, err := s.plan.changeFileOn(ctx, fid, change)
	if err != nil {
		return false, s.wrap(err)
	}
	return changed, nil
}

// FileOn lists the devices holding fid.
func (s *Store) FileOn(ctx context.Context, fid int64) ([]int, error) {
	var out []int
	err := s.readAny(ctx, func(ctx context.Context, db querier) error {
		out = nil
		rows, err := s.query(ctx, db, "SELECT devid FROM file_on WHERE fid = ? ORDER BY devid", fid)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d int
			if err := rows.Scan(&d); err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	}, func() bool { return len(out) == 0 })
	return out, s.wrap(err)
}

// FileByKeyOn implements store.PathsReader: the file row and its file_on
// rows in one statement (a LEFT JOIN, so a file without copies still comes
// back), one round trip and one snapshot.
func (s *Store) FileByKeyOn(ctx context.Context, dmid int, key string) (store.File, []int, error) {
	var f store.File
	var devs []int
	err := s.readAny(ctx, func(ctx context.Context, db querier) error {
		f, devs = store.File{}, nil
		// USING (fid): every other column name is the file's or file_on's
		// alone, so fileCols and keyIs need no table prefix.
		rows, err := s.query(ctx, db, "SELECT "+fileCols+", devid FROM file LEFT JOIN file_on USING (fid) WHERE dmid = ? AND "+
			s.keyIs()+" ORDER BY devid", dmid, key, key)
		if err != nil {
			return err
		}
		defer rows.Close()
		found := false
		for rows.Next() {
			var dev sql.NullInt64
			g, err := scanFile(rowWithDev{rows, &dev})
			if err != nil {
				return err
			}
			f, found = g, true
			if dev.Valid {
				devs = append(devs, int(dev.Int64))
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !found {
			return sql.ErrNoRows
		}
		return nil
	}, nil)
	if err != nil {
		return store.File{}, nil, s.wrap(err)
	}
	return f, devs, nil
}

// rowWithDev scans a file row followed by a file_on devid.
type rowWithDev struct {
	rows *sql.Rows
	dev  *sql.NullInt64
}

func (r rowWithDev) Scan(dest ...any) error { return r.rows.Scan(append(dest, r.dev)...) }

// FidsOnDevice lists fids on devid above after.
func (s *Store) FidsOnDevice(ctx context.Context, devid int, after int64, limit int) ([]int64, error) {
	var out []int64
	err := s.read(ctx, func() error {
		out = nil
		rows, err := s.query(ctx, s.db, "SELECT fid FROM file_on WHERE devid = ? AND fid > ? ORDER BY fid"+limitClause(limit), devid, after)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var f int64
			if err := rows.Scan(&f); err != nil {
				return err
			}
			out = append(out, f)
		}
		return rows.Err()
	})
	return out, s.wrap(err)
}

// SyncDevCount repairs devcount from file_on.
func (s *Store) SyncDevCount(ctx context.Context, fid int64) (int, error) {
	var n int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockFid(ctx, tx, fid); err != nil {
			return err
		}
		if err := s.syncDevCount(ctx, tx, fid); err != nil {
			return err
		}
		err := s.queryRow(ctx, tx, "SELECT devcount FROM file WHERE fid = ?", fid).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	return n, s.wrap(err)
}

// FileOnRows lists file_on rows after `after` in (fid, devid) order.
func (s *Store) FileOnRows(ctx context.Context, after store.FileOnRow, limit int) ([]store.FileOnRow, error) {
	var out []store.FileOnRow
	err := s.read(ctx, func() error {
		out = nil
		// fid >= ? first, so that the primary key's range bounds the scan.
		rows, err := s.query(ctx, s.db, "SELECT fid, devid FROM file_on WHERE fid >= ? AND (fid > ? OR devid > ?) ORDER BY fid, devid"+limitClause(limit),
			after.Fid, after.Fid, after.DevID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r store.FileOnRow
			if err := rows.Scan(&r.Fid, &r.DevID); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, s.wrap(err)
}
