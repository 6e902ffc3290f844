package store

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The largest ids MogileFS schema 17's columns hold (SMALLINT, TINYINT and
// MEDIUMINT UNSIGNED on MySQL): a Store refuses larger ones, and a backend
// allocating ids stops there.
const (
	MaxDomainID = 65535
	MaxClassID  = 255
	MaxHostID   = 16777215
	MaxDeviceID = 16777215
)

// The limits of MogileFS schema 17's columns: what every backend can store,
// checked once here for all of them (by the Store New returns) so that a
// value one database would truncate and another refuse is refused alike.
const (
	maxDomainName  = 255
	maxClassName   = 50
	maxPolicy      = 255
	maxHostName    = 40
	maxIP          = 15
	maxMask        = 18
	maxKey         = 255
	maxDevIDs      = 60 // tempfile.devids, the comma-separated list
	maxSettingKey  = 50
	maxSettingVal  = 65535
	maxChecksum    = 64
	maxEvCode      = 4
	maxWeight      = 8388607
	maxMinDevCount = 255
	maxQueueArg    = 65535
	maxUsageMiB    = 1<<32 - 1
)

// invalid reports a refused argument.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// checkText refuses text a MogileFS column cannot hold the same way on
// every database: too long, not UTF-8, or with a NUL byte.
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
	if strings.IndexByte(v, 0) >= 0 {
		return invalid("%s %q contains a NUL byte", what, v)
	}
	return nil
}

func checkRange(what string, v, lo, hi int) error {
	if v < lo || v > hi {
		return invalid("%s %d out of range [%d, %d]", what, v, lo, hi)
	}
	return nil
}

func checkLimit(limit int) error {
	if limit < 0 {
		return invalid("negative limit %d", limit)
	}
	return nil
}

func checkKey(key string) error { return checkText("key", key, maxKey, true) }

func checkSettingKey(key string) error {
	return checkText("setting name", key, maxSettingKey, true)
}

func checkSetting(key, value string) error {
	if err := checkSettingKey(key); err != nil {
		return err
	}
	return checkText("setting value", value, maxSettingVal, false)
}

func checkDevID(id int) error {
	if id <= 0 || id > MaxDeviceID {
		return invalid("devid %d out of range", id)
	}
	return nil
}

func checkCopy(fid int64, devid int) error {
	if fid <= 0 || devid <= 0 || devid > MaxDeviceID {
		return invalid("fid %d, devid %d", fid, devid)
	}
	return nil
}

func checkQueue(q Queue) error {
	switch q {
	case QueueReplicate, QueueDelete, QueueFsck, QueueRebalance:
		return nil
	}
	return invalid("unknown queue %d", int(q))
}

func checkClass(c Class) error {
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
	return checkRange("dmid", c.DomainID, 1, MaxDomainID)
}

// checkHost fills in a host's defaults (status down, port 7500) and checks
// it.
func checkHost(h Host) (Host, error) {
	if h.Status == "" {
		h.Status = HostDown
	}
	switch h.Status {
	case HostAlive, HostDead, HostDown, HostReadOnly:
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
	return h, checkRange("hostid", h.ID, 0, MaxHostID)
}

// checkDevice fills in a device's defaults (alive, weight 100) and checks
// it.
func checkDevice(d Device) (Device, error) {
	if d.Status == "" {
		d.Status = DeviceAlive
	}
	if d.Weight == 0 {
		d.Weight = 100
	}
	switch {
	case !d.Status.Valid():
		return d, invalid("unknown device state %q", d.Status)
	case d.ID < 0 || d.ID > MaxDeviceID:
		return d, invalid("devid %d out of range", d.ID)
	case d.Weight < 0 || d.Weight > maxWeight:
		return d, invalid("weight %d out of range", d.Weight)
	case d.MBTotal < 0 || d.MBUsed < 0:
		return d, invalid("negative usage")
	}
	return d, nil
}

func checkTempFile(t TempFile) error {
	n := 0
	for i, id := range t.DevIDs {
		if err := checkDevID(id); err != nil {
			return err
		}
		if i > 0 {
			n++ // the comma
		}
		n += len(strconv.Itoa(id))
	}
	if n > maxDevIDs {
		return invalid("%d devids do not fit tempfile.devids (%d bytes)", len(t.DevIDs), maxDevIDs)
	}
	if err := checkFileKey(t.Key, t.DomainID, t.ClassID); err != nil {
		return err
	}
	if t.Fid < 0 {
		return invalid("negative fid %d", t.Fid)
	}
	if t.Fid > MaxNamedFid {
		// A named fid raises the counter; above the bound it could raise it
		// to where allocation overflows (see MaxNamedFid).
		return invalid("fid %d above the largest fid a caller may name (%d)", t.Fid, MaxNamedFid)
	}
	return nil
}

// checkFileKey checks where a file goes: its key, domain and class.
func checkFileKey(key string, dmid, classid int) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkRange("dmid", dmid, 1, MaxDomainID); err != nil {
		return err
	}
	return checkRange("classid", classid, 0, MaxClassID)
}

func checkCommit(c Commit) error {
	if c.Fid <= 0 {
		return invalid("fid %d", c.Fid)
	}
	if err := checkFileKey(c.Key, c.DomainID, c.ClassID); err != nil {
		return err
	}
	if c.Length < 0 {
		return invalid("negative length %d", c.Length)
	}
	for _, id := range c.DevIDs {
		if err := checkDevID(id); err != nil {
			return err
		}
	}
	if c.Checksum != nil {
		return checkChecksum(*c.Checksum)
	}
	return nil
}

func checkChecksum(c Checksum) error {
	if err := checkRange("hashtype", int(c.HashType), 0, 255); err != nil {
		return err
	}
	if len(c.Sum) > maxChecksum {
		return invalid("checksum is %d bytes, more than %d", len(c.Sum), maxChecksum)
	}
	return nil
}

func checkEntry(q Queue, e QueueEntry) error {
	if e.Fid <= 0 {
		return invalid("fid %d", e.Fid)
	}
	if e.After < 0 && e.After != Never {
		return invalid("negative delay %v", e.After)
	}
	if e.DevID < 0 || e.DevID > MaxDeviceID {
		return invalid("devid %d out of range", e.DevID)
	}
	if e.Arg != "" && q != QueueFsck && q != QueueRebalance {
		return invalid("queue %s takes no arg", q)
	}
	return checkText("arg", e.Arg, maxQueueArg, false)
}

func checkFsckEvent(e FsckEvent) error {
	if err := checkText("event code", e.Code, maxEvCode, true); err != nil {
		return err
	}
	if e.Fid < 0 || e.DevID < 0 || e.DevID > MaxDeviceID {
		return invalid("fsck event of fid %d, devid %d", e.Fid, e.DevID)
	}
	return nil
}

// checkImport checks every row of a move between backends before any is
// written.
func checkImport(im Import) error {
	fid := func(f int64) error {
		if f <= 0 {
			return invalid("fid %d", f)
		}
		return nil
	}
	for _, f := range im.Files {
		if err := fid(f.Fid); err != nil {
			return err
		}
		if f.Length < 0 || f.DevCount < 0 || f.Key == "" {
			return invalid("fid %d: key %q, length %d, devcount %d", f.Fid, f.Key, f.Length, f.DevCount)
		}
	}
	for _, r := range im.FileOn {
		if err := fid(r.Fid); err != nil {
			return err
		}
	}
	for _, c := range im.Checksums {
		if err := fid(c.Fid); err != nil {
			return err
		}
		if err := checkChecksum(c); err != nil {
			return err
		}
	}
	for _, it := range im.Queue {
		if err := fid(it.Fid); err != nil {
			return err
		}
		if err := checkQueue(it.Queue); err != nil {
			return err
		}
	}
	for _, e := range im.FsckLog {
		if err := checkFsckEvent(e); err != nil {
			return err
		}
	}
	for k, v := range im.Settings {
		if err := checkSetting(k, v); err != nil {
			return err
		}
	}
	return nil
}
