package sqlstore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/gomogile/gomogile/store"
)

// ServerSetting reads one setting.
func (s *Store) ServerSetting(ctx context.Context, key string) (string, error) {
	var v sql.NullString
	err := s.read(ctx, func() error {
		return s.queryRow(ctx, s.db, "SELECT value FROM server_settings WHERE field = ?", key).Scan(&v)
	})
	return v.String, s.wrap(err)
}

// ServerSettings reads every setting.
func (s *Store) ServerSettings(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := s.read(ctx, func() error {
		clear(out)
		rows, err := s.query(ctx, s.db, "SELECT field, value FROM server_settings")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var v sql.NullString
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			out[k] = v.String
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	return out, nil
}

func (s *Store) upsertSetting(ctx context.Context, tx *sql.Tx, key, value string) error {
	up := s.d.Upsert("server_settings", []string{"field", "value"}, []string{"field"}, "value = "+s.d.Excluded("value"))
	_, err := s.exec(ctx, tx, up, key, value)
	return err
}

// SetServerSetting inserts or replaces a setting.
func (s *Store) SetServerSetting(ctx context.Context, key, value string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error { return s.upsertSetting(ctx, tx, key, value) })
	return s.wrap(err)
}

// DeleteServerSetting removes a setting if present.
func (s *Store) DeleteServerSetting(ctx context.Context, key string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, "DELETE FROM server_settings WHERE field = ?", key)
		return err
	})
	return s.wrap(err)
}

// IncrServerSetting adds delta to an integer setting under its row lock.
func (s *Store) IncrServerSetting(ctx context.Context, key string, delta int64) (int64, error) {
	var n int64
	// The row is made to exist first (an insert that does nothing on a
	// conflict waits for a concurrent inserter instead of failing), then
	// locked, then read: reading before holding the row lock let two
	// increments on PostgreSQL see the same value when the row appeared
	// between the statements.
	ensure := s.d.Upsert("server_settings", []string{"field", "value"}, []string{"field"}, "")
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, ensure, key, "0"); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, "UPDATE server_settings SET value = value WHERE field = ?", key); err != nil {
			return err
		}
		var v sql.NullString
		if err := s.queryRow(ctx, tx, "SELECT value FROM server_settings WHERE field = ?", key).Scan(&v); err != nil {
			return err
		}
		cur := int64(0)
		if t := strings.TrimSpace(v.String); t != "" {
			var err error
			if cur, err = strconv.ParseInt(t, 10, 64); err != nil {
				return invalid("setting %q is %q, not an integer", key, v.String)
			}
		}
		n = cur + delta
		_, err := s.exec(ctx, tx, "UPDATE server_settings SET value = ? WHERE field = ?", strconv.FormatInt(n, 10), key)
		return err
	})
	if err != nil {
		return 0, s.wrap(err)
	}
	return n, nil
}

func (s *Store) setChecksum(ctx context.Context, tx querier, c store.Checksum) error {
	return s.run(ctx, tx, s.checksumStmt(c))
}

// checksumStmt is setChecksum's statement.
func (s *Store) checksumStmt(c store.Checksum) stmt {
	up := s.d.Upsert("checksum", []string{"fid", "hashtype", "checksum"}, []string{"fid"},
		"hashtype = "+s.d.Excluded("hashtype")+", checksum = "+s.d.Excluded("checksum"))
	sum := c.Sum
	if sum == nil {
		sum = []byte{}
	}
	return stmt{up, []any{c.Fid, int(c.HashType), sum}}
}

// SetChecksum inserts or replaces a checksum.
func (s *Store) SetChecksum(ctx context.Context, c store.Checksum) error {
	err := s.tx(ctx, func(tx *sql.Tx) error { return s.setChecksum(ctx, tx, c) })
	return s.wrap(err)
}

// Checksum reads a checksum.
func (s *Store) Checksum(ctx context.Context, fid int64) (store.Checksum, error) {
	c := store.Checksum{Fid: fid}
	err := s.readAny(ctx, func(ctx context.Context, db querier) error {
		var ht int
		var sum []byte
		if err := s.queryRow(ctx, db, "SELECT hashtype, checksum FROM checksum WHERE fid = ?", fid).Scan(&ht, &sum); err != nil {
			return err
		}
		c.HashType, c.Sum = store.HashType(ht), sum
		return nil
	}, nil)
	if err != nil {
		return store.Checksum{}, s.wrap(err)
	}
	return c, nil
}

// Checksums lists checksums of fids above after.
func (s *Store) Checksums(ctx context.Context, after int64, limit int) ([]store.Checksum, error) {
	var out []store.Checksum
	err := s.read(ctx, func() error {
		out = nil
		rows, err := s.query(ctx, s.db, "SELECT fid, hashtype, checksum FROM checksum WHERE fid > ? ORDER BY fid"+limitClause(limit), after)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c store.Checksum
			var ht int
			if err := rows.Scan(&c.Fid, &ht, &c.Sum); err != nil {
				return err
			}
			c.HashType = store.HashType(ht)
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, s.wrap(err)
}

// DeleteChecksum removes a checksum if present.
func (s *Store) DeleteChecksum(ctx context.Context, fid int64) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, "DELETE FROM checksum WHERE fid = ?", fid)
		return err
	})
	return s.wrap(err)
}

// AppendFsckLog records an fsck event at the database time.
func (s *Store) AppendFsckLog(ctx context.Context, e store.FsckEvent) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, "INSERT INTO fsck_log (utime, fid, evcode, devid) VALUES ("+s.d.UnixNow()+", ?, ?, ?)",
			nullInt(e.Fid), e.Code, nullInt(int64(e.DevID)))
		return err
	})
	return s.wrap(err)
}

// FsckEvents lists events after a logid.
func (s *Store) FsckEvents(ctx context.Context, after int64, limit int) ([]store.FsckEvent, error) {
	var out []store.FsckEvent
	err := s.read(ctx, func() error {
		out = nil
		rows, err := s.query(ctx, s.db, "SELECT logid, utime, fid, evcode, devid FROM fsck_log WHERE logid > ? ORDER BY logid"+limitClause(limit), after)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e store.FsckEvent
			var ut, fid, dev sql.NullInt64
			var code sql.NullString
			if err := rows.Scan(&e.LogID, &ut, &fid, &code, &dev); err != nil {
				return err
			}
			e.Time, e.Fid, e.Code, e.DevID = unixTime(ut), fid.Int64, strings.TrimRight(code.String, " "), int(dev.Int64)
			out = append(out, e)
		}
		return rows.Err()
	})
	return out, s.wrap(err)
}

// FsckEventCounts counts events per code.
func (s *Store) FsckEventCounts(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.read(ctx, func() error {
		clear(out)
		rows, err := s.query(ctx, s.db, "SELECT evcode, COUNT(*) FROM fsck_log GROUP BY evcode")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var code sql.NullString
			var n int64
			if err := rows.Scan(&code, &n); err != nil {
				return err
			}
			out[strings.TrimRight(code.String, " ")] += n
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	return out, nil
}

// ClearFsckLog removes every event.
func (s *Store) ClearFsckLog(ctx context.Context) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, "DELETE FROM fsck_log")
		return err
	})
	return s.wrap(err)
}
