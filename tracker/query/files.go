package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

func (e *Env) cmdCreateOpen(ctx context.Context, r *Request) (*Reply, error) {
	// The original takes an empty key here (create_close then discards the
	// upload), but a tempfile row needs a key in our store: no_key.
	ns, dom, key, err := e.checkDomainKey(ctx, r)
	if err != nil {
		return nil, err
	}
	multi := PerlTrue(r.Args.Get("multi_dest"))
	size := PerlNum(r.Args.Get("size"))
	expFid, ok := numArg(r.Args.Get("fid"))
	if !ok || expFid < 0 || expFid > store.MaxNamedFid {
		return nil, perr("bad_params", fmt.Sprintf("fid must be between 1 and %d", store.MaxNamedFid))
	}
	classid := 0
	if cname := r.Args.Get("class"); cname != "" {
		c, fresh, err := e.lookupClass(ctx, ns, dom.ID, cname)
		if err != nil {
			return nil, err
		}
		if c == nil {
			return nil, perr("unreg_class")
		}
		classid, ns = c.ID, fresh
	}

	// The slot first, so that a create_open past a limit costs no write
	// (uploads.go); one that fails before its tempfile exists gives it back.
	slot, err := e.Uploads.take(ctx, clientAddr(r))
	if err != nil {
		if held, ok := e.Uploads.limitLog.allow(); ok {
			e.Log.Warn("create_open refused: too many open uploads", "remote", r.ClientIP,
				"open", e.Uploads.open(), "err", err, "refused_unlogged", held)
		}
		return nil, err
	}
	opened := false
	defer func() {
		if !opened {
			e.Uploads.cancel(slot)
		}
	}()

	// As the original's wait_for_monitor: right after start the monitor
	// may not have looked at any device yet; wait for it briefly rather
	// than answer no_devices.
	e.waitForMonitor(ctx, ns)

	want := 1
	if multi {
		want = 3
	}
	dests := cluster.UploadDests(ns.JoinAll(e.Observe), size, want, e.Config.Cluster)
	if len(dests) == 0 {
		return nil, perr("no_devices")
	}
	devids := make([]int, len(dests))
	for i, d := range dests {
		devids[i] = d.ID
	}
	// Read before the tempfile exists, so that nothing fails after it.
	skip, err := e.settingCachedBool(ctx, "skip_mkcol")
	if err != nil {
		return nil, err
	}
	fid, err := e.Store.CreateTempFile(ctx, store.TempFile{Fid: expFid, DomainID: dom.ID, Key: key, ClassID: classid, DevIDs: devids})
	if err != nil {
		switch {
		case errors.Is(err, store.ErrDuplicate):
			return nil, perr("fid_in_use")
		case errors.Is(err, store.ErrNoSpace):
			return nil, e.noSpace("create_open", err)
		}
		e.Log.Error("register tempfile", "err", err)
		return nil, perr("db")
	}
	e.Uploads.opened(slot, fid)
	opened = true
	e.temps.remember(fid, classid, slices.Clone(devids))

	if !skip {
		e.mkcols(ctx, ns, dests, fid, r)
	}
	return createOpenReply(ns, dests, fid, multi, r), nil
}

// mkcols asks each destination's node to make the fid's directory, all at
// once, as the original did before answering create_open. A failure is
// only logged: the client's PUT then fails and says so.
func (e *Env) mkcols(ctx context.Context, ns *namespace, dests []cluster.Device, fid int64, r *Request) {
	var wg sync.WaitGroup
	for _, d := range dests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := ns.HostByID[d.HostID]
			if err := e.Nodes.Mkcol(ctx, hostBase(h, r, false), d.ID, fid); err != nil {
				e.Log.Warn("MKCOL failed; the PUT may fail", "devid", d.ID, "fid", fid, "err", err)
			}
		}()
	}
	wg.Wait()
}

// createOpenReply is create_open's answer: the fid and one path (or, with
// multi_dest, each destination's devid and path).
func createOpenReply(ns *namespace, dests []cluster.Device, fid int64, multi bool, r *Request) *Reply {
	res := &Reply{}
	res.Set("fid", fid)
	if multi {
		for i, d := range dests {
			u, _ := devURL(ns, d.ID, fid, r, false)
			res.Set(fmt.Sprintf("devid_%d", i+1), d.ID)
			res.Set(fmt.Sprintf("path_%d", i+1), u)
		}
		res.Set("dev_count", len(dests))
		return res
	}
	u, _ := devURL(ns, dests[0].ID, fid, r, false)
	res.Set("devid", dests[0].ID)
	res.Set("path", u)
	return res
}

func (e *Env) cmdCreateClose(ctx context.Context, r *Request) (*Reply, error) {
	ns, dom, err := e.checkDomain(ctx, r)
	if err != nil {
		return nil, err
	}
	a, err := parseCloseArgs(r)
	if err != nil {
		return nil, err
	}
	// ended: the tempfile row is known gone, so the upload's slot, if this
	// tracker holds it, comes back (uploads.go). Nothing else frees it.
	ended := false
	defer func() {
		if ended {
			e.Uploads.ended(a.fid)
		}
	}()
	if u, ok := devURL(ns, a.devid, a.fid, r, false); !ok || u != a.path {
		return nil, perr("bogus_args")
	}
	var tf store.TempFile
	if row, ok := e.temps.take(a.fid); ok {
		tf = store.TempFile{Fid: a.fid, ClassID: row.classID, DevIDs: row.devIDs}
	} else if tf, err = e.Store.TempFile(ctx, a.fid); errors.Is(err, store.ErrNotFound) {
		ended = true
		return e.noTempFile(ctx, r, a.fid, dom.ID, a.key) // commit_retry.go
	} else if err != nil {
		return nil, err
	}
	failed := func() { ended = e.backOutUpload(ctx, a.fid, a.devid) || ended }
	if !slices.Contains(tf.DevIDs, a.devid) {
		failed()
		return nil, perr("invalid_destdev", fmt.Sprintf("File uploaded to invalid dest %d. Valid devices were: %s", a.devid, joinInts(tf.DevIDs)))
	}
	if a.key == "" {
		// Closing without a key discards the upload.
		failed()
		return nil, nil
	}
	size, err := e.uploadSize(ctx, r, a.path)
	if err != nil {
		failed()
		return nil, err
	}
	class, classOK := e.classFor(ns, dom.ID, tf.ClassID)
	keepSum := a.haveSum && classOK && class.HashType == a.sumType
	// The client asked for verification, or the class keeps checksums of
	// this type and we are about to store it: check before trusting it.
	if a.haveSum && (PerlTrue(r.Args.Get("checksumverify")) || keepSum) {
		rest, cancel, err := e.verifyUploadSum(r, a)
		defer cancel()
		if err != nil {
			failed()
			return nil, err
		}
		ctx = rest
	}

	// No lookup of the key first (the original's fid_exists check): the
	// commit finds the key's owner itself, and a close of this fid that
	// committed since the TempFile read above makes CommitFile answer as
	// for a retry, which is what the client asked for (see commit_retry.go).
	c := store.Commit{
		Fid: a.fid, DomainID: dom.ID, Key: a.key, ClassID: tf.ClassID, Length: size,
		DevIDs:    []int{a.devid},
		Replicate: !classOK || needsCopies(class),
	}
	if keepSum {
		c.Checksum = &store.Checksum{Fid: a.fid, HashType: a.sumType, Sum: a.sum}
	}
	if _, err := e.commitFile(ctx, c); err != nil {
		switch {
		case errors.Is(err, store.ErrNotFound):
			ended = true
			return e.noTempFile(ctx, r, a.fid, dom.ID, a.key)
		case errors.Is(err, store.ErrNoSpace):
			// The tempfile stays: a create_close retried once there is
			// space commits it.
			return nil, e.noSpace("create_close", err)
		}
		return nil, err
	}
	ended = true
	return nil, nil
}

// closeArgs are create_close's arguments, checked as the original checks
// them.
type closeArgs struct {
	key, path string
	fid       int64
	devid     int
	haveSum   bool
	sumType   store.HashType
	sum       []byte
}

func parseCloseArgs(r *Request) (closeArgs, error) {
	a := closeArgs{key: r.Args.Get("key"), path: r.Args.Get("path")}
	switch {
	case !PerlTrue(r.Args.Get("fid")):
		return a, perr("no_fid")
	case !PerlTrue(r.Args.Get("devid")):
		return a, perr("no_devid")
	case !PerlTrue(a.path):
		return a, perr("no_path")
	}
	a.fid = PerlNum(r.Args.Get("fid"))
	a.devid = int(PerlNum(r.Args.Get("devid")))
	if a.haveSum = PerlTrue(r.Args.Get("checksum")); a.haveSum {
		var err error
		if a.sumType, a.sum, err = parseChecksum(r.Args.Get("checksum")); err != nil {
			return a, perr("invalid_checksum_format")
		}
	}
	return a, nil
}

// backOutUpload backs out an upload that will not be committed: the blob
// is recorded and the fid queued for deletion, so nothing is orphaned on
// the storage node. It reports whether the tempfile row is gone.
func (e *Env) backOutUpload(ctx context.Context, fid int64, devid int) (ended bool) {
	bctx := context.WithoutCancel(ctx)
	if _, err := e.Store.AddFileOn(bctx, fid, devid); err != nil {
		e.Log.Error("back out upload: record copy", "fid", fid, "devid", devid, "err", err)
	}
	if err := e.Store.DeleteTempFile(bctx, fid); err != nil && !errors.Is(err, store.ErrNotFound) {
		e.Log.Error("back out upload: drop tempfile", "fid", fid, "err", err)
	} else {
		ended = true
	}
	if err := e.Store.Enqueue(bctx, store.QueueDelete, store.QueueEntry{Fid: fid}); err != nil {
		e.Log.Error("back out upload: queue delete", "fid", fid, "err", err)
	}
	return ended
}

// uploadSize is the uploaded blob's size as its storage node reports it,
// checked against the client's size= when given (size_verify_error,
// size_mismatch).
func (e *Env) uploadSize(ctx context.Context, r *Request, path string) (int64, error) {
	expect := PerlNum(r.Args.Get("size"))
	if expect == 0 {
		expect = -1
	}
	size, err := e.Nodes.Size(ctx, path)
	if err != nil {
		kind := "cantreach"
		if errors.Is(err, cluster.ErrMissing) {
			kind = "missing"
		}
		return 0, perr("size_verify_error", fmt.Sprintf("Expected: %d; actual: 0 (%s); path: %s; error: %v", expect, kind, path, err))
	}
	if expect > -1 && expect != size {
		return 0, perr("size_mismatch", fmt.Sprintf("Expected: %d; actual: %d; path: %s", expect, size, path))
	}
	return size, nil
}

// verifyUploadSum reads the uploaded blob back and compares its digest
// with the client's checksum (checksum_mismatch). The read takes as long
// as the blob is big, so it runs on the request's bulk context, and the
// rest of the request gets request_timeout anew: the returned context.
func (e *Env) verifyUploadSum(r *Request, a closeArgs) (context.Context, context.CancelFunc, error) {
	actual, err := e.digest(r.bulk(), a.path, a.sumType)
	rest, cancel := context.WithTimeout(r.bulk(), e.Config.RequestTimeout)
	if err != nil || string(actual) != string(a.sum) {
		got := "(unreadable: " + fmt.Sprint(err) + ")"
		if err == nil {
			got = checksumInfo(a.sumType, actual)
		}
		return rest, cancel, perr("checksum_mismatch", fmt.Sprintf("Expected: Checksum[f=%d;%s=%x]; actual: %s; path: %s",
			a.fid, a.sumType, a.sum, got, a.path))
	}
	return rest, cancel, nil
}

// noSpace answers a write the metadata database refused for lack of space
// with ERR db_full, and logs it (at most once a second: a flood of uploads
// must not fill the log as well). Nothing was written; once space is
// freed, the same request succeeds, with no restart.
func (e *Env) noSpace(cmd string, err error) error {
	e.Uploads.refusedNoSpace.Add(1)
	if held, ok := e.Uploads.fullLog.allow(); ok {
		e.Log.Error("metadata database out of space: uploads refused until space is freed", "cmd", cmd, "err", err, "refused_unlogged", held)
	}
	return perr("db_full", "Metadata database out of space: uploads are refused until space is freed")
}

func joinInts(a []int) string {
	s := make([]string, len(a))
	for i, v := range a {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (e *Env) fileByKey(ctx context.Context, dmid int, key, missingCode string) (store.File, error) {
	f, err := e.Store.FileByKey(ctx, dmid, key)
	if errors.Is(err, store.ErrNotFound) {
		return f, perr(missingCode)
	}
	return f, err
}

func (e *Env) cmdGetPaths(ctx context.Context, r *Request) (*Reply, error) {
	ctx = store.AllowReplica(ctx) // a read replica may answer (2.73's slaves_ok)
	ns, dom, key, err := e.checkDomainKey(ctx, r)
	if err != nil {
		return nil, err
	}
	pathcount := int(PerlNum(r.Args.Get("pathcount")))
	if pathcount < 2 {
		pathcount = 2
	}
	noverify := PerlTrue(r.Args.Get("noverify"))
	// The file and its devices in one read (one round trip on SQL).
	f, devids, err := store.FileByKeyOn(ctx, e.Store, dom.ID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, perr("unknown_key")
	}
	if err != nil {
		return nil, err
	}
	var cand []weighted
	for _, id := range devids {
		if d, ok := ns.DevByID[id]; ok {
			cand = append(cand, weighted{d, readWeight(d, e.Observe(d.ID))})
		}
	}
	res := &Reply{}
	var paths, drain []string
	backup := ""
	for _, d := range weightedList(cand) {
		if _, ok := ns.HostByID[d.HostID]; !ok {
			continue
		}
		u, _ := devURL(ns, d.ID, f.Fid, r, true)
		if !e.shouldReadFrom(ns, d) {
			backup = u
			continue
		}
		// Only the first path is verified, and not with noverify.
		if len(paths) == 0 && !noverify {
			if n, err := e.Nodes.Size(ctx, u); err != nil || n != f.Length {
				continue
			}
		}
		if d.Status == store.DeviceDrain {
			drain = append(drain, u)
			continue
		}
		paths = append(paths, u)
		if len(paths) == pathcount {
			break
		}
	}
	for _, u := range drain {
		if len(paths) == pathcount {
			break
		}
		paths = append(paths, u)
	}
	if len(paths) == 0 && backup != "" {
		paths = append(paths, backup)
	}
	res.Set("paths", len(paths))
	for i, p := range paths {
		res.Set(fmt.Sprintf("path%d", i+1), p)
	}
	return res, nil
}

func (e *Env) cmdDelete(ctx context.Context, r *Request) (*Reply, error) {
	_, dom, key, err := e.checkDomainKey(ctx, r)
	if err != nil {
		return nil, err
	}
	f, err := e.fileByKey(ctx, dom.ID, key, "unknown_key")
	if err != nil {
		return nil, err
	}
	if err := e.Store.DeleteFile(ctx, f.Fid); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, perr("unknown_key")
		}
		return nil, err
	}
	return nil, nil
}

func (e *Env) cmdRename(ctx context.Context, r *Request) (*Reply, error) {
	_, dom, err := e.checkDomain(ctx, r)
	if err != nil {
		return nil, err
	}
	from, to := r.Args.Get("from_key"), r.Args.Get("to_key")
	if from == "" || to == "" {
		return nil, perr("no_key")
	}
	if _, err := e.fileByKey(ctx, dom.ID, from, "unknown_key"); err != nil {
		return nil, err
	}
	switch err := e.Store.RenameFile(ctx, dom.ID, from, to); {
	case errors.Is(err, store.ErrDuplicate):
		return nil, perr("key_exists")
	case errors.Is(err, store.ErrNotFound):
		return nil, perr("unknown_key")
	case err != nil:
		return nil, err
	}
	return nil, nil
}

func (e *Env) cmdUpdateClassOfKey(ctx context.Context, r *Request) (*Reply, error) {
	ns, dom, key, err := e.checkDomainKey(ctx, r)
	if err != nil {
		return nil, err
	}
	cname := r.Args.Get("class")
	if !PerlTrue(cname) {
		return nil, perr("no_class")
	}
	c, _, err := e.lookupClass(ctx, ns, dom.ID, cname)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, perr("class_not_found")
	}
	f, err := e.fileByKey(ctx, dom.ID, key, "invalid_key")
	if err != nil {
		return nil, err
	}
	devids, err := e.Store.FileOn(ctx, f.Fid)
	if err != nil {
		return nil, err
	}
	if len(devids) == 0 {
		return nil, perr("no_devices")
	}
	if f.ClassID != c.ID {
		if err := e.Store.SetFileClass(ctx, f.Fid, c.ID); err != nil {
			return nil, err
		}
		if err := e.Store.Enqueue(ctx, store.QueueReplicate, store.QueueEntry{Fid: f.Fid}); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func (e *Env) className(ns *namespace, dmid, classid int) string {
	if c, ok := ns.Class(dmid, classid, e.Config.Cluster); ok {
		return c.Name
	}
	return strconv.Itoa(classid) // class deleted behind the file's back
}

func (e *Env) cmdFileInfo(ctx context.Context, r *Request) (*Reply, error) {
	ctx = store.AllowReplica(ctx) // a read replica may answer (2.73's slaves_ok)
	ns, dom, key, err := e.checkDomainKey(ctx, r)
	if err != nil {
		return nil, err
	}
	f, err := e.fileByKey(ctx, dom.ID, key, "unknown_key")
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	res.Set("fid", f.Fid)
	res.Set("domain", dom.Name)
	res.Set("class", e.className(ns, f.DomainID, f.ClassID))
	if c, ok := ns.Class(f.DomainID, f.ClassID, e.Config.Cluster); ok && c.HashType != store.HashNone {
		cs, err := e.Store.Checksum(ctx, f.Fid)
		switch {
		case err == nil:
			res.Set("checksum", checksumInfo(cs.HashType, cs.Sum))
		case errors.Is(err, store.ErrNotFound):
			res.Set("checksum", "MISSING")
		default:
			return nil, err
		}
	}
	res.Set("key", key)
	res.Set("length", f.Length)
	res.Set("devcount", f.DevCount)
	if PerlTrue(r.Args.Get("devices")) {
		devids, err := e.Store.FileOn(ctx, f.Fid)
		if err != nil {
			return nil, err
		}
		res.Set("devids", joinInts(devids))
	}
	return res, nil
}

func (e *Env) cmdFileDebug(ctx context.Context, r *Request) (*Reply, error) {
	ns, file, fid, err := e.fileDebugTarget(ctx, r)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	if file != nil {
		res.Set("fid_fid", file.Fid)
		res.Set("fid_dmid", file.DomainID)
		res.Set("fid_dkey", file.Key)
		res.Set("fid_length", file.Length)
		res.Set("fid_classid", file.ClassID)
		res.Set("fid_devcount", file.DevCount)
		if d, ok := ns.DomainByID[file.DomainID]; ok {
			res.Set("fid_domain", d.Name)
		}
		res.Set("fid_class", e.className(ns, file.DomainID, file.ClassID))
	}
	if tf, err := e.Store.TempFile(ctx, fid); err == nil {
		res.Set("tempfile_fid", tf.Fid)
		res.Set("tempfile_dmid", tf.DomainID)
		res.Set("tempfile_dkey", tf.Key)
		res.Set("tempfile_classid", tf.ClassID)
		res.Set("tempfile_createtime", tf.CreateTime.Unix())
		res.Set("tempfile_devids", joinInts(tf.DevIDs))
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err := e.fileDebugQueues(ctx, fid, res); err != nil {
		return nil, err
	}
	devids, err := e.Store.FileOn(ctx, fid)
	if err != nil {
		return nil, err
	}
	for _, id := range devids {
		if u, ok := devURL(ns, id, fid, r, true); ok {
			res.Set(fmt.Sprintf("devpath_%d", id), u)
		}
	}
	if len(devids) > 0 {
		res.Set("devids", joinInts(devids))
	}
	// The original always answers, whatever it found: checksum is always
	// set.
	cs, err := e.Store.Checksum(ctx, fid)
	switch {
	case err == nil:
		res.Set("checksum", checksumInfo(cs.HashType, cs.Sum))
	case errors.Is(err, store.ErrNotFound):
		res.Set("checksum", "NONE")
	default:
		return nil, err
	}
	return res, nil
}

// fileDebugTarget is the fid file_debug asks about — fid=, else the file
// of domain= and key= — and its file row (nil for a fid without one:
// file_debug then reports its tempfile, queue rows and copies alone).
func (e *Env) fileDebugTarget(ctx context.Context, r *Request) (*namespace, *store.File, int64, error) {
	if PerlTrue(r.Args.Get("fid")) {
		fid := PerlNum(r.Args.Get("fid"))
		ns, err := e.namespace(ctx)
		if err != nil {
			return nil, nil, 0, err
		}
		f, err := e.Store.File(ctx, fid)
		switch {
		case err == nil:
			return ns, &f, fid, nil
		case errors.Is(err, store.ErrNotFound):
			return ns, nil, fid, nil
		}
		return nil, nil, 0, err
	}
	ns, dom, err := e.checkDomain(ctx, r)
	if err != nil {
		return nil, nil, 0, err
	}
	if r.Args.Get("key") == "" {
		return nil, nil, 0, perr("no_key")
	}
	f, err := e.fileByKey(ctx, dom.ID, r.Args.Get("key"), "unknown_key")
	if err != nil {
		return nil, nil, 0, err
	}
	return ns, &f, f.Fid, nil
}

// fileDebugQueues adds fid's row in each queue to res, under the
// original's prefixes and with the columns its tables had.
func (e *Env) fileDebugQueues(ctx context.Context, fid int64, res *Reply) error {
	for _, q := range []struct {
		prefix string
		q      store.Queue
	}{{"replqueue", store.QueueReplicate}, {"delqueue", store.QueueDelete}, {"rebqueue", store.QueueRebalance}, {"fsckqueue", store.QueueFsck}} {
		it, err := e.Store.QueueItem(ctx, q.q, fid)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		res.Set(q.prefix+"_fid", it.Fid)
		res.Set(q.prefix+"_nexttry", it.NextTry.Unix())
		res.Set(q.prefix+"_failcount", it.FailCount)
		switch q.q {
		case store.QueueReplicate:
			res.Set(q.prefix+"_fromdevid", zeroEmpty(it.DevID))
			res.Set(q.prefix+"_flags", it.Flags)
		case store.QueueFsck, store.QueueRebalance:
			res.Set(q.prefix+"_devid", zeroEmpty(it.DevID))
			res.Set(q.prefix+"_type", map[store.Queue]int{store.QueueFsck: 1, store.QueueRebalance: 2}[q.q])
			res.Set(q.prefix+"_flags", it.Flags)
			res.Set(q.prefix+"_arg", it.Arg)
		}
	}
	return nil
}

func zeroEmpty(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func (e *Env) cmdListFids(ctx context.Context, r *Request) (*Reply, error) {
	ctx = store.AllowReplica(ctx) // a read replica may answer (2.73's slaves_ok)
	from := PerlNum(r.Args.Get("from"))
	count := int(PerlNum(r.Args.Get("to")))
	if count == 0 {
		count = 100
	}
	if count > 500 || count < 0 {
		count = 500
	}
	ns, err := e.namespace(ctx)
	if err != nil {
		return nil, err
	}
	// file_row_from_fidid_range: fid > from, at most "to" rows.
	files, err := e.Store.Files(ctx, from+1, math.MaxInt64, count)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	for i, f := range files {
		n := i + 1
		res.Set(fmt.Sprintf("fid_%d_fid", n), f.Fid)
		res.Set(fmt.Sprintf("fid_%d_domain", n), ns.DomainByID[f.DomainID].Name)
		res.Set(fmt.Sprintf("fid_%d_class", n), e.className(ns, f.DomainID, f.ClassID))
		res.Set(fmt.Sprintf("fid_%d_key", n), f.Key)
		res.Set(fmt.Sprintf("fid_%d_length", n), f.Length)
		res.Set(fmt.Sprintf("fid_%d_devcount", n), f.DevCount)
	}
	res.Set("fid_count", len(files))
	return res, nil
}

// needsCopies says whether a file of class needs more than the one copy an
// upload makes: its policy's count (MultipleHosts(N), MultipleDevices(N),
// the largest of a Union's) or, without one, its mindevcount. A class with mindevcount=1 and
// MultipleHosts(2) is replicated at upload, not left at one copy until an
// fsck. A policy that does not parse is left to the replicate worker.
func needsCopies(class store.Class) bool {
	p, err := cluster.ParseReplPolicy(class.ReplPolicy)
	if err != nil {
		return true
	}
	return p.Copies(class.MinDevCount) > 1
}
