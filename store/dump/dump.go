// Package dump writes an installation's metadata as a canonical export:
// one JSON object per line, table by table in a fixed order, each table's
// rows in key order, read through the store contract alone, so that it
// reads the same from every backend (an outside one included) and two
// databases that hold the same installation give byte-identical dumps.
// It is a logical backup an operator can keep (mogtool dump), and the
// ground a move between backends is checked on: Digest hashes each table's
// lines, and two digests that match say the two databases hold the same
// rows.
//
// What is written, in this order (the "t" field names the table):
//
//	dump       one header line: the format and its version
//	setting    server settings, by key
//	domain     by name
//	class      by domain name, then name (the default classes are implicit)
//	host       by hostid
//	device     by devid
//	file       by fid, with its domain and class by name
//	file_on    by fid, then devid
//	checksum   by fid, the sum in hex
//	queue      replicate, delete, fsck, rebalance, each by fid (nexttry in
//	           Unix seconds, as the tables keep it)
//	fsck_log   in logid order
//
// Domains and classes are named rather than numbered, and fsck events and
// devices' usage times are written without their log ids and times: those
// are the database's own and carry no meaning outside it (a device's usage
// time is the monitor's, which measures it again). Hosts, devices and fids
// are numbered, since storage nodes' paths and operators' tools name them.
// Tempfiles (uploads in flight) are not written: a dump is of an
// installation at rest.
package dump

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"

	"github.com/gomogile/gomogile/store"
)

// Format and Version are the header line's fields.
const (
	Format  = "gomogile-dump"
	Version = 1
)

// pageSize is how many rows one read of a paged table asks for (a var
// so that the tests can page through small tables).
var pageSize = 5000

// Tables are the table names in the order a dump writes them, after the
// header.
var Tables = []string{"setting", "domain", "class", "host", "device", "file", "file_on", "checksum", "queue", "fsck_log"}

// The line types, with their fields in the order they are written.
type (
	header struct {
		T       string `json:"t"`
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	settingLine struct {
		T     string `json:"t"`
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	domainLine struct {
		T    string `json:"t"`
		Name string `json:"name"`
	}
	classLine struct {
		T           string `json:"t"`
		Domain      string `json:"domain"`
		Name        string `json:"name"`
		MinDevCount int    `json:"mindevcount"`
		ReplPolicy  string `json:"replpolicy"`
		HashType    string `json:"hashtype"`
	}
	hostLine struct {
		T           string `json:"t"`
		HostID      int    `json:"hostid"`
		Name        string `json:"name"`
		Status      string `json:"status"`
		IP          string `json:"ip"`
		HTTPPort    int    `json:"http_port"`
		HTTPGetPort int    `json:"http_get_port"`
		AltIP       string `json:"altip"`
		AltMask     string `json:"altmask"`
	}
	deviceLine struct {
		T       string `json:"t"`
		DevID   int    `json:"devid"`
		HostID  int    `json:"hostid"`
		Status  string `json:"status"`
		Weight  int    `json:"weight"`
		MBTotal int64  `json:"mb_total"`
		MBUsed  int64  `json:"mb_used"`
	}
	fileLine struct {
		T        string `json:"t"`
		Fid      int64  `json:"fid"`
		Domain   string `json:"domain"`
		Key      string `json:"key"`
		Length   int64  `json:"length"`
		Class    string `json:"class"`
		DevCount int    `json:"devcount"`
	}
	fileOnLine struct {
		T     string `json:"t"`
		Fid   int64  `json:"fid"`
		DevID int    `json:"devid"`
	}
	checksumLine struct {
		T        string `json:"t"`
		Fid      int64  `json:"fid"`
		HashType string `json:"hashtype"`
		Sum      string `json:"sum"`
	}
	queueLine struct {
		T         string `json:"t"`
		Queue     string `json:"queue"`
		Fid       int64  `json:"fid"`
		DevID     int    `json:"devid"`
		Arg       string `json:"arg"`
		NextTry   int64  `json:"nexttry"`
		FailCount int    `json:"failcount"`
		Flags     int    `json:"flags"`
	}
	fsckLine struct {
		T     string `json:"t"`
		Time  int64  `json:"utime"`
		Fid   int64  `json:"fid"`
		Code  string `json:"evcode"`
		DevID int    `json:"devid"`
	}
)

// TableDigest is one table's part of a Digest.
type TableDigest struct {
	Table  string
	Rows   int64
	SHA256 string // of the table's lines, newlines included, in hex
}

// Sink receives a dump's lines, each without its newline, table by table.
type Sink func(table string, line []byte) error

// Write writes st's dump to w. It reads each table a page at a time; the
// dump is consistent only if nothing writes to st meanwhile.
func Write(ctx context.Context, st *store.Store, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	err := Walk(ctx, st, func(_ string, line []byte) error {
		if _, err := bw.Write(line); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// Digest reads st as Write does and returns, for each table in Tables'
// order, its row count and the SHA-256 of its lines.
func Digest(ctx context.Context, st *store.Store) ([]TableDigest, error) {
	hs := map[string]hash.Hash{}
	out := make([]TableDigest, len(Tables))
	idx := map[string]int{}
	for i, t := range Tables {
		hs[t], out[i].Table, idx[t] = sha256.New(), t, i
	}
	err := Walk(ctx, st, func(table string, line []byte) error {
		h, ok := hs[table]
		if !ok {
			return nil // the header
		}
		h.Write(line)
		h.Write([]byte{'\n'})
		out[idx[table]].Rows++
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].SHA256 = hex.EncodeToString(hs[out[i].Table].Sum(nil))
	}
	return out, nil
}

// Walk reads st and hands every line of its dump to sink, header first.
func Walk(ctx context.Context, st *store.Store, sink Sink) error {
	d := &walker{st: st, sink: sink}
	if err := d.emit("dump", header{T: "dump", Format: Format, Version: Version}); err != nil {
		return err
	}
	for _, step := range []func(context.Context) error{d.settings, d.namespace, d.files, d.fileOn, d.checksums, d.queues, d.fsckLog} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

type walker struct {
	st      *store.Store
	sink    Sink
	domains map[int]string         // dmid -> name
	classes map[[2]int]store.Class // (dmid, classid) -> class
}

func (d *walker) emit(table string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("dump: %s: %w", table, err)
	}
	return d.sink(table, b)
}

func (d *walker) settings(ctx context.Context) error {
	all, err := d.st.ServerSettings(ctx)
	if err != nil {
		return fmt.Errorf("dump: settings: %w", err)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range all {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		if k == store.MoveSetting {
			continue // a move's bookkeeping, not the installation's
		}
		if err := d.emit("setting", settingLine{T: "setting", Key: k, Value: all[k]}); err != nil {
			return err
		}
	}
	return nil
}

func (d *walker) namespace(ctx context.Context) error {
	domains, err := d.st.Domains(ctx)
	if err != nil {
		return fmt.Errorf("dump: domains: %w", err)
	}
	classes, err := d.st.Classes(ctx)
	if err != nil {
		return fmt.Errorf("dump: classes: %w", err)
	}
	hosts, err := d.st.Hosts(ctx)
	if err != nil {
		return fmt.Errorf("dump: hosts: %w", err)
	}
	devs, err := d.st.Devices(ctx)
	if err != nil {
		return fmt.Errorf("dump: devices: %w", err)
	}
	d.domains = map[int]string{}
	for _, dm := range domains {
		d.domains[dm.ID] = dm.Name
	}
	d.classes = map[[2]int]store.Class{}
	for _, c := range classes {
		d.classes[[2]int{c.DomainID, c.ID}] = c
	}
	slices.SortFunc(domains, func(a, b store.Domain) int { return cmp.Compare(a.Name, b.Name) })
	for _, dm := range domains {
		if err := d.emit("domain", domainLine{T: "domain", Name: dm.Name}); err != nil {
			return err
		}
	}
	slices.SortFunc(classes, func(a, b store.Class) int {
		return cmp.Or(cmp.Compare(d.domains[a.DomainID], d.domains[b.DomainID]), cmp.Compare(a.Name, b.Name))
	})
	for _, c := range classes {
		if err := d.emit("class", classLine{T: "class", Domain: d.domains[c.DomainID], Name: c.Name,
			MinDevCount: c.MinDevCount, ReplPolicy: c.ReplPolicy, HashType: c.HashType.String()}); err != nil {
			return err
		}
	}
	slices.SortFunc(hosts, func(a, b store.Host) int { return cmp.Compare(a.ID, b.ID) })
	for _, h := range hosts {
		if err := d.emit("host", hostLine{T: "host", HostID: h.ID, Name: h.Name, Status: string(h.Status), IP: h.IP,
			HTTPPort: h.HTTPPort, HTTPGetPort: h.HTTPGetPort, AltIP: h.AltIP, AltMask: h.AltMask}); err != nil {
			return err
		}
	}
	slices.SortFunc(devs, func(a, b store.Device) int { return cmp.Compare(a.ID, b.ID) })
	for _, dv := range devs {
		if err := d.emit("device", deviceLine{T: "device", DevID: dv.ID, HostID: dv.HostID, Status: string(dv.Status),
			Weight: dv.Weight, MBTotal: dv.MBTotal, MBUsed: dv.MBUsed}); err != nil {
			return err
		}
	}
	return nil
}

// errDangling is a file row naming a domain the database does not have:
// the dump cannot name it, and a move must not guess.
var errDangling = errors.New("dump: a file's domain is not in the domain table")

// className is the class's name, "default" for classid 0 and for a class
// row that is gone (MogileFS treats such a file as in its domain's
// default class).
func (d *walker) className(dmid, classid int) string {
	if c, ok := d.classes[[2]int{dmid, classid}]; ok && classid != 0 {
		return c.Name
	}
	return "default"
}

func (d *walker) files(ctx context.Context) error {
	for from := int64(0); ; {
		fs, err := d.st.Files(ctx, from, math.MaxInt64, pageSize)
		if err != nil {
			return fmt.Errorf("dump: files from fid %d: %w", from, err)
		}
		for _, f := range fs {
			dom, ok := d.domains[f.DomainID]
			if !ok {
				return fmt.Errorf("%w: fid %d, dmid %d", errDangling, f.Fid, f.DomainID)
			}
			if err := d.emit("file", fileLine{T: "file", Fid: f.Fid, Domain: dom, Key: f.Key, Length: f.Length,
				Class: d.className(f.DomainID, f.ClassID), DevCount: f.DevCount}); err != nil {
				return err
			}
		}
		if len(fs) < pageSize {
			return nil
		}
		from = fs[len(fs)-1].Fid + 1
	}
}

func (d *walker) fileOn(ctx context.Context) error {
	for after := (store.FileOnRow{}); ; {
		rows, err := d.st.FileOnRows(ctx, after, pageSize)
		if err != nil {
			return fmt.Errorf("dump: file_on after fid %d: %w", after.Fid, err)
		}
		for _, r := range rows {
			if err := d.emit("file_on", fileOnLine{T: "file_on", Fid: r.Fid, DevID: r.DevID}); err != nil {
				return err
			}
		}
		if len(rows) < pageSize {
			return nil
		}
		after = rows[len(rows)-1]
	}
}

func (d *walker) checksums(ctx context.Context) error {
	for after := int64(0); ; {
		cs, err := d.st.Checksums(ctx, after, pageSize)
		if err != nil {
			return fmt.Errorf("dump: checksums after fid %d: %w", after, err)
		}
		for _, c := range cs {
			if err := d.emit("checksum", checksumLine{T: "checksum", Fid: c.Fid, HashType: c.HashType.String(),
				Sum: hex.EncodeToString(c.Sum)}); err != nil {
				return err
			}
		}
		if len(cs) < pageSize {
			return nil
		}
		after = cs[len(cs)-1].Fid
	}
}

func (d *walker) queues(ctx context.Context) error {
	for _, q := range []store.Queue{store.QueueReplicate, store.QueueDelete, store.QueueFsck, store.QueueRebalance} {
		for after := int64(0); ; {
			its, err := d.st.QueueItems(ctx, q, after, pageSize)
			if err != nil {
				return fmt.Errorf("dump: %s queue after fid %d: %w", q, after, err)
			}
			for _, it := range its {
				if err := d.emit("queue", queueLine{T: "queue", Queue: q.String(), Fid: it.Fid, DevID: it.DevID, Arg: it.Arg,
					NextTry: it.NextTry.Unix(), FailCount: it.FailCount, Flags: it.Flags}); err != nil {
					return err
				}
			}
			if len(its) < pageSize {
				break
			}
			after = its[len(its)-1].Fid
		}
	}
	return nil
}

func (d *walker) fsckLog(ctx context.Context) error {
	for after := int64(0); ; {
		evs, err := d.st.FsckEvents(ctx, after, pageSize)
		if err != nil {
			return fmt.Errorf("dump: fsck log after %d: %w", after, err)
		}
		for _, e := range evs {
			if err := d.emit("fsck_log", fsckLine{T: "fsck_log", Time: e.Time.Unix(), Fid: e.Fid,
				Code: e.Code, DevID: e.DevID}); err != nil {
				return err
			}
		}
		if len(evs) < pageSize {
			return nil
		}
		after = evs[len(evs)-1].LogID
	}
}
