package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/gomogile/gomogile/store"
)

// Column limits of schema 17, checked here so every backend refuses the same
// values (SQLite would store them, MySQL truncate or fail).
const (
	maxDomainName  = 255
	maxClassName   = 50
	maxPolicy      = 255
	maxHostName    = 40
	maxIP          = 15
	maxMask        = 18
	maxKey         = 255
	maxDevIDs      = 60
	maxSettingKey  = 50
	maxChecksum    = 64
	maxEvCode      = 4
	maxDmid        = 65535
	maxClassID     = 255
	maxMediumInt   = 16777215
	maxWeight      = 8388607
	maxMinDevCount = 255
)

func checkText(what, v string, maxLen int, required bool) error {
	if required && v == "" {
		return invalid("empty %s", what)
	}
	if len(v) > maxLen {
		return invalid("%s is %d bytes, more than %d", what, len(v), maxLen)
	}
	if !utf8.ValidString(v) {
		return invalid("%s %q is not valid UTF-8", what, v)
	}
	for i := 0; i < len(v); i++ {
		if v[i] == 0 {
			return invalid("%s %q contains a NUL byte", what, v)
		}
	}
	return nil
}

func checkRange(what string, v, lo, hi int) error {
	if v < lo || v > hi {
		return invalid("%s %d out of range [%d, %d]", what, v, lo, hi)
	}
	return nil
}

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
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("create domain %q", name)
	if err := s.check(op); err != nil {
		return store.Domain{}, err
	}
	if err := checkText("domain name", name, maxDomainName, true); err != nil {
		return store.Domain{}, s.wrap(op, err)
	}
	id, err := s.insertNext(ctx, "dmid", "SELECT MAX(dmid) FROM domain", nil, maxDmid,
		func(tx *sql.Tx, id int) error {
			_, err := s.exec(ctx, tx, "INSERT INTO domain (dmid, namespace) VALUES (?, ?)", id, name)
			return err
		},
		func() (bool, error) {
			return s.exists(ctx, s.db, "SELECT 1 FROM domain WHERE namespace = ?", name)
		})
	if err != nil {
		return store.Domain{}, s.wrap(op, err)
	}
	return store.Domain{ID: id, Name: name}, nil
}

// DeleteDomain removes a domain and its class rows once no file or named
// class uses it.
func (s *Store) DeleteDomain(ctx context.Context, dmid int) error {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("delete domain %d", dmid)
	if err := s.check(op); err != nil {
		return err
	}
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
	return s.wrap(op, err)
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
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	const op = "list domains"
	if err := s.check(op); err != nil {
		return nil, err
	}
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
	return out, s.wrap(op, err)
}

func checkClass(c store.Class) error {
	if err := checkText("class name", c.Name, maxClassName, true); err != nil {
		return err
	}
	if err := checkText("replication policy", c.ReplPolicy, maxPolicy, false); err != nil {
		return err
	}
	if err := checkRange("mindevcount", c.MinDevCount, 0, maxMinDevCount); err != nil {
		return err
	}
	if err := checkRange("hashtype", int(c.HashType), 0, 255); err != nil {
		return err
	}
	if c.Name == "default" && c.ID != 0 {
		return invalid("class \"default\" is class 0, not %d", c.ID)
	}
	return checkRange("dmid", c.DomainID, 1, maxDmid)
}

// CreateClass allocates the next classid of a domain; "default" is 0.
func (s *Store) CreateClass(ctx context.Context, c store.Class) (store.Class, error) {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("create class %q in domain %d", c.Name, c.DomainID)
	if err := s.check(op); err != nil {
		return store.Class{}, err
	}
	if err := checkClass(c); err != nil {
		return store.Class{}, s.wrap(op, err)
	}
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
			return store.Class{}, s.wrap(op, err)
		}
		return c, nil
	}
	id, err := s.insertNext(ctx, "classid", "SELECT MAX(classid) FROM class WHERE dmid = ?", []any{c.DomainID}, maxClassID,
		insert,
		func() (bool, error) {
			return s.exists(ctx, s.db, "SELECT 1 FROM class WHERE dmid = ? AND classname = ?", c.DomainID, c.Name)
		})
	if err != nil {
		return store.Class{}, s.wrap(op, err)
	}
	c.ID = id
	return c, nil
}

// UpdateClass rewrites a class row. The implicit default class of an
// existing domain gets its row on first update, as in MogileFS.
func (s *Store) UpdateClass(ctx context.Context, c store.Class) error {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("update class %d of domain %d", c.ID, c.DomainID)
	if err := s.check(op); err != nil {
		return err
	}
	if err := checkClass(c); err != nil {
		return s.wrap(op, err)
	}
	if err := checkRange("classid", c.ID, 0, maxClassID); err != nil {
		return s.wrap(op, err)
	}
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
	return s.wrap(op, err)
}

// DeleteClass removes a class no file uses.
func (s *Store) DeleteClass(ctx context.Context, dmid, classid int) error {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("delete class %d of domain %d", classid, dmid)
	if err := s.check(op); err != nil {
		return err
	}
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
	return s.wrap(op, err)
}

// Classes lists every class row by (dmid, classid).
func (s *Store) Classes(ctx context.Context) ([]store.Class, error) {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	const op = "list classes"
	if err := s.check(op); err != nil {
		return nil, err
	}
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
	return out, s.wrap(op, err)
}

func checkHost(h store.Host) (store.Host, error) {
	if h.Status == "" {
		h.Status = store.HostDown
	}
	switch h.Status {
	case store.HostAlive, store.HostDead, store.HostDown, store.HostReadOnly:
	default:
		return h, invalid("unknown host status %q", h.Status)
	}
	if h.HTTPPort == 0 {
		h.HTTPPort = 7500
	}
	if err := checkText("host name", h.Name, maxHostName, true); err != nil {
		return h, err
	}
	if err := checkText("host ip", h.IP, maxIP, true); err != nil {
		return h, err
	}
	if err := checkText("alt ip", h.AltIP, maxIP, false); err != nil {
		return h, err
	}
	if err := checkText("alt mask", h.AltMask, maxMask, false); err != nil {
		return h, err
	}
	if err := checkRange("http port", h.HTTPPort, 1, 65535); err != nil {
		return h, err
	}
	if err := checkRange("http get port", h.HTTPGetPort, 0, 65535); err != nil {
		return h, err
	}
	return h, checkRange("hostid", h.ID, 0, maxMediumInt)
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
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("create host %q", h.Name)
	if err := s.check(op); err != nil {
		return store.Host{}, err
	}
	h, err := checkHost(h)
	if err != nil {
		return store.Host{}, s.wrap(op, err)
	}
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
			return store.Host{}, s.wrap(op, err)
		}
		return h, nil
	}
	id, err := s.insertNext(ctx, "hostid", "SELECT MAX(hostid) FROM host", nil, maxMediumInt, insert,
		func() (bool, error) {
			return s.hostTaken(ctx, s.db, store.Host{Name: h.Name, IP: h.IP, AltIP: h.AltIP})
		})
	if err != nil {
		return store.Host{}, s.wrap(op, err)
	}
	h.ID = id
	return h, nil
}

// UpdateHost replaces every field of a host.
func (s *Store) UpdateHost(ctx context.Context, h store.Host) error {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("update host %d", h.ID)
	if err := s.check(op); err != nil {
		return err
	}
	h, err := checkHost(h)
	if err == nil && h.ID == 0 {
		err = invalid("hostid 0")
	}
	if err != nil {
		return s.wrap(op, err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
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
	return s.wrap(op, err)
}

// DeleteHost removes a host without devices.
func (s *Store) DeleteHost(ctx context.Context, hostid int) error {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("delete host %d", hostid)
	if err := s.check(op); err != nil {
		return err
	}
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
	return s.wrap(op, err)
}

// Hosts lists every host by hostid.
func (s *Store) Hosts(ctx context.Context) ([]store.Host, error) {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	const op = "list hosts"
	if err := s.check(op); err != nil {
		return nil, err
	}
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
	return out, s.wrap(op, err)
}

// CreateDevice adds a device with the caller's id or the next free one.
func (s *Store) CreateDevice(ctx context.Context, d store.Device) (store.Device, error) {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("create device %d on host %d", d.ID, d.HostID)
	if err := s.check(op); err != nil {
		return store.Device{}, err
	}
	if d.Status == "" {
		d.Status = store.DeviceAlive
	}
	if d.Weight == 0 {
		d.Weight = 100
	}
	var err error
	switch {
	case !d.Status.Valid():
		err = invalid("unknown device state %q", d.Status)
	case d.ID < 0 || d.ID > maxMediumInt:
		err = invalid("devid %d out of range", d.ID)
	case d.Weight < 0 || d.Weight > maxWeight:
		err = invalid("weight %d out of range", d.Weight)
	case d.MBTotal < 0 || d.MBUsed < 0:
		err = invalid("negative usage")
	}
	if err != nil {
		return store.Device{}, s.wrap(op, err)
	}
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
			return store.Device{}, s.wrap(op, err)
		}
		return d, nil
	}
	id, err := s.insertNext(ctx, "devid", "SELECT MAX(devid) FROM device", nil, maxMediumInt, insert,
		func() (bool, error) { return false, nil })
	if err != nil {
		return store.Device{}, s.wrap(op, err)
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
func (s *Store) updateDevice(ctx context.Context, op string, devid int, set string, args ...any) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, "SELECT 1 FROM device WHERE devid = ?", devid); err != nil || !ok {
			return notFound(err)
		}
		_, err := s.exec(ctx, tx, "UPDATE device SET "+set+" WHERE devid = ?", append(args, devid)...)
		return err
	})
	return s.wrap(op, err)
}

// SetDeviceState changes a device's status.
func (s *Store) SetDeviceState(ctx context.Context, devid int, state store.DeviceState) error {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("set state of device %d", devid)
	if err := s.check(op); err != nil {
		return err
	}
	if !state.Valid() {
		return s.wrap(op, invalid("unknown device state %q", state))
	}
	return s.updateDevice(ctx, op, devid, "status = ?", string(state))
}

// SetDeviceWeight changes a device's weight.
func (s *Store) SetDeviceWeight(ctx context.Context, devid int, weight int) error {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("set weight of device %d", devid)
	if err := s.check(op); err != nil {
		return err
	}
	if err := checkRange("weight", weight, 0, maxWeight); err != nil {
		return s.wrap(op, err)
	}
	return s.updateDevice(ctx, op, devid, "weight = ?", weight)
}

// SetDeviceUsage records usage, stamped by the database clock.
func (s *Store) SetDeviceUsage(ctx context.Context, devid int, mbTotal, mbUsed int64) error {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("set usage of device %d", devid)
	if err := s.check(op); err != nil {
		return err
	}
	if mbTotal < 0 || mbUsed < 0 || mbTotal > 1<<32-1 || mbUsed > 1<<32-1 {
		return s.wrap(op, invalid("usage %d/%d MiB out of range", mbUsed, mbTotal))
	}
	return s.updateDevice(ctx, op, devid, "mb_total = ?, mb_used = ?, mb_asof = "+s.d.UnixNow(), mbTotal, mbUsed)
}

// DeleteDevice removes a device no file_on row names.
func (s *Store) DeleteDevice(ctx context.Context, devid int) error {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	op := fmt.Sprintf("delete device %d", devid)
	if err := s.check(op); err != nil {
		return err
	}
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
	return s.wrap(op, err)
}

// Devices lists every device by devid.
func (s *Store) Devices(ctx context.Context) ([]store.Device, error) {
	ctx, cancel := s.bound(ctx, 0)
	defer cancel()
	const op = "list devices"
	if err := s.check(op); err != nil {
		return nil, err
	}
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
	return out, s.wrap(op, err)
}
