package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/gomogile/gomogile/store"
)

// insertNext runs one transaction that reads the largest id with maxQ and
// inserts with the next one through ins. Allocators of one kind queue on
// their counter row first, so on MySQL and PostgreSQL they do not all read
// the same MAX and collide. A writer that bypasses the counter (another
// program, an older tracker) can still take the id first: the transaction
// then fails on the key and is run again, unless taken reports that the
// caller's own unique value is what collided, which is the caller's
// ErrDuplicate.
func (s *Store) insertNext(ctx context.Context, kind, maxQ string, maxArgs []any, limit int,
	ins func(tx *sql.Tx, id int) error, taken func() (bool, error)) (int, error) {
	var id int
	var err error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		err = s.tx(ctx, func(tx *sql.Tx) error {
			if err := s.serialize(ctx, tx, kind); err != nil {
				return err
			}
			var top sql.NullInt64
			if err := s.queryRow(ctx, tx, maxQ, maxArgs...).Scan(&top); err != nil {
				return err
			}
			id = int(top.Int64) + 1
			if id > limit {
				return invalid("no id left (largest is %d)", limit)
			}
			return ins(tx, id)
		})
		if err == nil || s.classify(err) != ErrKindDuplicate || isSentinel(err) {
			return id, err
		}
		dup, terr := taken()
		if terr != nil {
			return 0, terr
		}
		if dup {
			return 0, err
		}
		if serr := sleep(ctx, attempt); serr != nil {
			return 0, err
		}
	}
	return 0, err
}

// serialize takes the row lock of counter name until the transaction ends
// (SQLite's writers are serialised already), creating the row if needed
// without failing when a concurrent Store creates it too.
func (s *Store) serialize(ctx context.Context, tx *sql.Tx, name string) error {
	const bump = "UPDATE gomogile_counter SET value = value + 1 WHERE name = ?"
	n, err := s.execN(ctx, tx, bump, name)
	if err != nil || n > 0 {
		return err
	}
	if _, err := s.exec(ctx, tx, s.d.Upsert("gomogile_counter", []string{"name", "value"}, []string{"name"}, ""), name, 0); err != nil {
		return err
	}
	_, err = s.exec(ctx, tx, bump, name)
	return err
}

// CreateDomain allocates the next dmid.
func (s *Store) CreateDomain(ctx context.Context, name string) (store.Domain, error) {
	id, err := s.insertNext(ctx, "dmid", "SELECT MAX(dmid) FROM domain", nil, store.MaxDomainID,
		func(tx *sql.Tx, id int) error {
			_, err := s.exec(ctx, tx, "INSERT INTO domain (dmid, namespace) VALUES (?, ?)", id, name)
			return err
		},
		func() (bool, error) {
			return s.exists(ctx, s.db, "SELECT 1 FROM domain WHERE namespace = ?", name)
		})
	if err != nil {
		return store.Domain{}, s.wrap(err)
	}
	return store.Domain{ID: id, Name: name}, nil
}

// DeleteDomain removes a domain and its class rows once no file or named
// class uses it.
func (s *Store) DeleteDomain(ctx context.Context, dmid int) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM domain WHERE dmid = ?", dmid); err != nil || !ok {
			return notFound(err)
		}
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM file WHERE dmid = ?"+limitClause(1), dmid); err != nil || ok {
			return hasErr(err, store.ErrHasFiles)
		}
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM class WHERE dmid = ? AND classid <> 0"+limitClause(1), dmid); err != nil || ok {
			return hasErr(err, store.ErrHasClasses)
		}
		if _, err := s.exec(ctx, tx, "DELETE FROM class WHERE dmid = ?", dmid); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, "DELETE FROM domain WHERE dmid = ?", dmid)
		return err
	})
	return s.wrap(err)
}

func notFound(err error) error {
	if err != nil {
		return err
	}
	return store.ErrNotFound
}

func hasErr(err, sentinel error) error {
	if err != nil {
		return err
	}
	return sentinel
}

// Domains lists every domain by dmid.
func (s *Store) Domains(ctx context.Context) ([]store.Domain, error) {
	var out []store.Domain
	err := s.read(ctx, func() error {
		out = nil
		rows, err := s.query(ctx, s.db, "SELECT dmid, namespace FROM domain ORDER BY dmid")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d store.Domain
			var name sql.NullString
			if err := rows.Scan(&d.ID, &name); err != nil {
				return err
			}
			d.Name = name.String
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, s.wrap(err)
}

// CreateClass allocates the next classid of a domain; "default" is 0.
func (s *Store) CreateClass(ctx context.Context, c store.Class) (store.Class, error) {
	insert := func(tx *sql.Tx, id int) error {
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM domain WHERE dmid = ?", c.DomainID); err != nil || !ok {
			return notFound(err)
		}
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM class WHERE dmid = ? AND classname = ?", c.DomainID, c.Name); err != nil || ok {
			return hasErr(err, store.ErrDuplicate)
		}
		_, err := s.exec(ctx, tx, `INSERT INTO class (dmid, classid, classname, mindevcount, replpolicy, hashtype)
VALUES (?, ?, ?, ?, ?, ?)`, c.DomainID, id, c.Name, c.MinDevCount, nullStr(c.ReplPolicy), nullInt(int64(c.HashType)))
		return err
	}
	if c.Name == "default" {
		err := s.tx(ctx, func(tx *sql.Tx) error { return insert(tx, 0) })
		if err != nil {
			return store.Class{}, s.wrap(err)
		}
		return c, nil
	}
	id, err := s.insertNext(ctx, "classid", "SELECT MAX(classid) FROM class WHERE dmid = ?", []any{c.DomainID}, store.MaxClassID,
		insert,
		func() (bool, error) {
			return s.exists(ctx, s.db, "SELECT 1 FROM class WHERE dmid = ? AND classname = ?", c.DomainID, c.Name)
		})
	if err != nil {
		return store.Class{}, s.wrap(err)
	}
	c.ID = id
	return c, nil
}

// UpdateClass rewrites a class row. The implicit default class of an
// existing domain gets its row on first update, as in MogileFS.
func (s *Store) UpdateClass(ctx context.Context, c store.Class) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		ok, err := s.exists(ctx, tx, "SELECT 1 FROM class WHERE dmid = ? AND classid = ?", c.DomainID, c.ID)
		if err != nil {
			return err
		}
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM class WHERE dmid = ? AND classname = ? AND classid <> ?",
			c.DomainID, c.Name, c.ID); err != nil || ok {
			return hasErr(err, store.ErrDuplicate)
		}
		if !ok {
			if c.ID != 0 {
				return store.ErrNotFound
			}
			if ok, err := s.exists(ctx, tx, "SELECT 1 FROM domain WHERE dmid = ?", c.DomainID); err != nil || !ok {
				return notFound(err)
			}
			_, err := s.exec(ctx, tx, `INSERT INTO class (dmid, classid, classname, mindevcount, replpolicy, hashtype)
VALUES (?, 0, ?, ?, ?, ?)`, c.DomainID, c.Name, c.MinDevCount, nullStr(c.ReplPolicy), nullInt(int64(c.HashType)))
			return err
		}
		_, err = s.exec(ctx, tx, `UPDATE class SET classname = ?, mindevcount = ?, replpolicy = ?, hashtype = ?
WHERE dmid = ? AND classid = ?`, c.Name, c.MinDevCount, nullStr(c.ReplPolicy), nullInt(int64(c.HashType)), c.DomainID, c.ID)
		return err
	})
	return s.wrap(err)
}

// DeleteClass removes a class no file uses.
func (s *Store) DeleteClass(ctx context.Context, dmid, classid int) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM class WHERE dmid = ? AND classid = ?", dmid, classid); err != nil || !ok {
			return notFound(err)
		}
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM file WHERE dmid = ? AND classid = ?"+limitClause(1), dmid, classid); err != nil || ok {
			return hasErr(err, store.ErrHasFiles)
		}
		_, err := s.exec(ctx, tx, "DELETE FROM class WHERE dmid = ? AND classid = ?", dmid, classid)
		return err
	})
	return s.wrap(err)
}

// Classes lists every class row by (dmid, classid).
func (s *Store) Classes(ctx context.Context) ([]store.Class, error) {
	var out []store.Class
	err := s.read(ctx, func() error {
		out = nil
		rows, err := s.query(ctx, s.db, `SELECT dmid, classid, classname, mindevcount, replpolicy, hashtype
FROM class ORDER BY dmid, classid`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c store.Class
			var name, policy sql.NullString
			var hash sql.NullInt64
			if err := rows.Scan(&c.DomainID, &c.ID, &name, &c.MinDevCount, &policy, &hash); err != nil {
				return err
			}
			c.Name, c.ReplPolicy, c.HashType = name.String, policy.String, store.HashType(hash.Int64)
			if c.Name == "" && c.ID == 0 {
				c.Name = "default"
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, s.wrap(err)
}

// hostTaken reports whether another host has h's name, ip or altip.
func (s *Store) hostTaken(ctx context.Context, q querier, h store.Host) (bool, error) {
	ok, err := s.exists(ctx, q, "SELECT 1 FROM host WHERE hostid <> ? AND (hostname = ? OR hostip = ?)", h.ID, h.Name, h.IP)
	if err != nil || ok || h.AltIP == "" {
		return ok, err
	}
	return s.exists(ctx, q, "SELECT 1 FROM host WHERE hostid <> ? AND altip = ?", h.ID, h.AltIP)
}

const hostInsert = `INSERT INTO host (hostid, status, http_port, http_get_port, hostname, hostip, altip, altmask)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

func hostArgs(h store.Host) []any {
	return []any{h.ID, string(h.Status), h.HTTPPort, nullInt(int64(h.HTTPGetPort)), h.Name, h.IP, nullStr(h.AltIP), nullStr(h.AltMask)}
}

// CreateHost adds a host with its own id or the next free one.
func (s *Store) CreateHost(ctx context.Context, h store.Host) (store.Host, error) {
	insert := func(tx *sql.Tx, id int) error {
		h := h
		h.ID = id
		if ok, err := s.hostTaken(ctx, tx, h); err != nil || ok {
			return hasErr(err, store.ErrDuplicate)
		}
		_, err := s.exec(ctx, tx, hostInsert, hostArgs(h)...)
		return err
	}
	if h.ID != 0 {
		err := s.tx(ctx, func(tx *sql.Tx) error { return insert(tx, h.ID) })
		if err != nil {
			return store.Host{}, s.wrap(err)
		}
		return h, nil
	}
	id, err := s.insertNext(ctx, "hostid", "SELECT MAX(hostid) FROM host", nil, store.MaxHostID, insert,
		func() (bool, error) {
			return s.hostTaken(ctx, s.db, store.Host{Name: h.Name, IP: h.IP, AltIP: h.AltIP})
		})
	if err != nil {
		return store.Host{}, s.wrap(err)
	}
	h.ID = id
	return h, nil
}

// UpdateHost replaces every field of a host.
func (s *Store) UpdateHost(ctx context.Context, h store.Host) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM host WHERE hostid = ?", h.ID); err != nil || !ok {
			return notFound(err)
		}
		if ok, err := s.hostTaken(ctx, tx, h); err != nil || ok {
			return hasErr(err, store.ErrDuplicate)
		}
		_, err := s.exec(ctx, tx, `UPDATE host SET status = ?, http_port = ?, http_get_port = ?, hostname = ?,
hostip = ?, altip = ?, altmask = ? WHERE hostid = ?`, append(hostArgs(h)[1:], h.ID)...)
		return err
	})
	return s.wrap(err)
}

// DeleteHost removes a host without devices.
func (s *Store) DeleteHost(ctx context.Context, hostid int) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM host WHERE hostid = ?", hostid); err != nil || !ok {
			return notFound(err)
		}
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM device WHERE hostid = ?"+limitClause(1), hostid); err != nil || ok {
			return hasErr(err, store.ErrHasDevices)
		}
		_, err := s.exec(ctx, tx, "DELETE FROM host WHERE hostid = ?", hostid)
		return err
	})
	return s.wrap(err)
}

// Hosts lists every host by hostid.
func (s *Store) Hosts(ctx context.Context) ([]store.Host, error) {
	var out []store.Host
	err := s.read(ctx, func() error {
		out = nil
		rows, err := s.query(ctx, s.db, `SELECT hostid, status, http_port, http_get_port, hostname, hostip, altip, altmask
FROM host ORDER BY hostid`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h store.Host
			var status, name, ip, altip, altmask sql.NullString
			var port, getport sql.NullInt64
			if err := rows.Scan(&h.ID, &status, &port, &getport, &name, &ip, &altip, &altmask); err != nil {
				return err
			}
			h.Status, h.Name, h.IP, h.AltIP, h.AltMask = store.HostStatus(status.String), name.String, ip.String, altip.String, altmask.String
			h.HTTPPort, h.HTTPGetPort = int(port.Int64), int(getport.Int64)
			out = append(out, h)
		}
		return rows.Err()
	})
	return out, s.wrap(err)
}

// CreateDevice adds a device with the caller's id or the next free one.
func (s *Store) CreateDevice(ctx context.Context, d store.Device) (store.Device, error) {
	insert := func(tx *sql.Tx, id int) error {
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM host WHERE hostid = ?", d.HostID); err != nil || !ok {
			return notFound(err)
		}
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM device WHERE devid = ?", id); err != nil || ok {
			return hasErr(err, store.ErrDuplicate)
		}
		_, err := s.exec(ctx, tx, `INSERT INTO device (devid, hostid, status, weight, mb_total, mb_used, mb_asof)
VALUES (?, ?, ?, ?, ?, ?, ?)`, id, d.HostID, string(d.Status), d.Weight, nullInt(d.MBTotal), nullInt(d.MBUsed), nullTime(d.MBAsOf))
		return err
	}
	if d.ID != 0 {
		if err := s.tx(ctx, func(tx *sql.Tx) error { return insert(tx, d.ID) }); err != nil {
			return store.Device{}, s.wrap(err)
		}
		return d, nil
	}
	id, err := s.insertNext(ctx, "devid", "SELECT MAX(devid) FROM device", nil, store.MaxDeviceID, insert,
		func() (bool, error) { return false, nil })
	if err != nil {
		return store.Device{}, s.wrap(err)
	}
	d.ID = id
	return d, nil
}

func nullTime(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.Unix(), Valid: true}
}

// updateDevice runs one UPDATE of a device row, checking it exists first
// (RowsAffected cannot tell on MySQL when nothing changed).
func (s *Store) updateDevice(ctx context.Context, devid int, set string, args ...any) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM device WHERE devid = ?", devid); err != nil || !ok {
			return notFound(err)
		}
		_, err := s.exec(ctx, tx, "UPDATE device SET "+set+" WHERE devid = ?", append(args, devid)...)
		return err
	})
	return s.wrap(err)
}

// SetDeviceState changes a device's status.
func (s *Store) SetDeviceState(ctx context.Context, devid int, state store.DeviceState) error {
	return s.updateDevice(ctx, devid, "status = ?", string(state))
}

// SetDeviceWeight changes a device's weight.
func (s *Store) SetDeviceWeight(ctx context.Context, devid int, weight int) error {
	return s.updateDevice(ctx, devid, "weight = ?", weight)
}

// SetDeviceUsage records usage, stamped by the database clock.
func (s *Store) SetDeviceUsage(ctx context.Context, devid int, mbTotal, mbUsed int64) error {
	return s.updateDevice(ctx, devid, "mb_total = ?, mb_used = ?, mb_asof = "+s.d.UnixNow(), mbTotal, mbUsed)
}

// DeleteDevice removes a device no file_on row names.
func (s *Store) DeleteDevice(ctx context.Context, devid int) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM device WHERE devid = ?", devid); err != nil || !ok {
			return notFound(err)
		}
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM file_on WHERE devid = ?"+limitClause(1), devid); err != nil || ok {
			return hasErr(err, store.ErrHasFiles)
		}
		_, err := s.exec(ctx, tx, "DELETE FROM device WHERE devid = ?", devid)
		return err
	})
	return s.wrap(err)
}

// Devices lists every device by devid.
func (s *Store) Devices(ctx context.Context) ([]store.Device, error) {
	var out []store.Device
	err := s.read(ctx, func() error {
		out = nil
		rows, err := s.query(ctx, s.db, `SELECT devid, hostid, status, weight, mb_total, mb_used, mb_asof
FROM device ORDER BY devid`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d store.Device
			var status sql.NullString
			var weight, total, used, asof sql.NullInt64
			if err := rows.Scan(&d.ID, &d.HostID, &status, &weight, &total, &used, &asof); err != nil {
				return err
			}
			d.Status, d.Weight, d.MBTotal, d.MBUsed, d.MBAsOf = store.DeviceState(status.String), int(weight.Int64), total.Int64, used.Int64, unixTime(asof)
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, s.wrap(err)
}
