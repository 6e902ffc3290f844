package query

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/store"
)

// The fsck_* commands (mogadm fsck start, stop, reset, clearlog,
// printlog, taillog, status): fsck's state lives in server settings and
// its log in the fsck log, as in 2.73; the workers do the checking
// (tracker/jobs). The settings are the ones the original's fsck worker
// reads: fsck_host (running when set), fsck_highest_fid_checked,
// fsck_fid_at_end, fsck_start_time, fsck_stop_time, fsck_fids_checked,
// fsck_start_fid, fsck_opt_policy_only, fsck_start_maxlogid,
// fsck_logid_processed and the fsck_sum_evcount_<code> counters.

func (e *Env) cmdFsckStart(ctx context.Context, r *Request) (*Reply, error) {
	fsckHost, err := e.setting(ctx, "fsck_host")
	if err != nil {
		return nil, err
	}
	rebalHost, err := e.setting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	if PerlTrue(fsckHost) {
		return nil, perr("fsck_running", "fsck is already running")
	}
	if PerlTrue(rebalHost) {
		return nil, perr("rebal_running", "rebalance running; cannot run fsck at same time")
	}
	checked, err := e.intSetting(ctx, "fsck_highest_fid_checked")
	if err != nil {
		return nil, err
	}
	final, err := e.intSetting(ctx, "fsck_fid_at_end")
	if err != nil {
		return nil, err
	}
	if (checked != 0 && final != 0 && checked >= final) || (final == 0 && checked == 0) {
		if err := e.fsckReset(ctx); err != nil {
			e.Log.Error("fsck reset", "err", err)
			return nil, perr("db")
		}
	}
	now, err := e.dbUnixTime(ctx)
	if err != nil {
		return nil, err
	}
	start, err := e.intSetting(ctx, "fsck_highest_fid_checked")
	if err != nil {
		return nil, err
	}
	for _, kv := range []struct {
		k string
		v *string
	}{
		{"fsck_start_time", &now},
		{"fsck_stop_time", nil},
		{"fsck_fids_checked", sp("0")},
		{"fsck_start_fid", sp(strconv.FormatInt(start, 10))},
		{"fsck_host", sp(e.Host)},
	} {
		if err := e.setOrDelete(ctx, kv.k, kv.v); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func (e *Env) cmdFsckStop(ctx context.Context, r *Request) (*Reply, error) {
	if err := e.Store.DeleteServerSetting(ctx, "fsck_host"); err != nil {
		return nil, err
	}
	now, err := e.dbUnixTime(ctx)
	if err != nil {
		return nil, err
	}
	return nil, e.Store.SetServerSetting(ctx, "fsck_stop_time", now)
}

func (e *Env) cmdFsckReset(ctx context.Context, r *Request) (*Reply, error) {
	var policy *string
	if PerlTrue(r.Args.Get("policy_only")) {
		policy = sp("1")
	}
	if err := e.setOrDelete(ctx, "fsck_opt_policy_only", policy); err != nil {
		return nil, err
	}
	start := "0"
	if PerlTrue(r.Args.Get("startpos")) {
		start = r.Args.Get("startpos")
	}
	if err := e.Store.SetServerSetting(ctx, "fsck_highest_fid_checked", start); err != nil {
		return nil, err
	}
	if err := e.fsckReset(ctx); err != nil {
		e.Log.Error("fsck reset", "err", err)
		return nil, perr("db")
	}
	return nil, nil
}

// fsckReset is Query::_do_fsck_reset.
func (e *Env) fsckReset(ctx context.Context) error {
	maxFid, err := e.Store.MaxFid(ctx)
	if err != nil {
		return err
	}
	for _, kv := range []struct {
		k string
		v *string
	}{
		{"fsck_start_time", nil},
		{"fsck_stop_time", nil},
		{"fsck_fids_checked", sp("0")},
		{"fsck_fid_at_end", sp(strconv.FormatInt(maxFid, 10))},
	} {
		if err := e.setOrDelete(ctx, kv.k, kv.v); err != nil {
			return err
		}
	}
	all, err := e.Store.ServerSettings(ctx)
	if err != nil {
		return err
	}
	for k := range all {
		if strings.HasPrefix(k, "fsck_sum_evcount_") {
			if err := e.Store.DeleteServerSetting(ctx, k); err != nil {
				return err
			}
		}
	}
	logid, err := e.maxFsckLogID(ctx, 0)
	if err != nil {
		return err
	}
	s := strconv.FormatInt(logid, 10)
	if err := e.Store.SetServerSetting(ctx, "fsck_start_maxlogid", s); err != nil {
		return err
	}
	return e.Store.SetServerSetting(ctx, "fsck_logid_processed", s)
}

// maxFsckLogID pages through fsck_log past `after` (the contract has no
// MAX(logid)); callers start from fsck_logid_processed to keep it short.
func (e *Env) maxFsckLogID(ctx context.Context, after int64) (int64, error) {
	for {
		evs, err := e.Store.FsckEvents(ctx, after, 1000)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			return after, nil
		}
		after = evs[len(evs)-1].LogID
	}
}

// fsckSummarize is Store::fsck_log_summarize: fold log rows past
// fsck_logid_processed into fsck_sum_evcount_<code>, under the same named
// lock so two trackers never count a row twice. It returns the largest
// logid seen.
func (e *Env) fsckSummarize(ctx context.Context) (int64, error) {
	lock, err := e.Store.Lock(ctx, "mgfs:fscksum", 10*time.Second)
	if err != nil {
		if errors.Is(err, store.ErrLockTimeout) {
			// Another tracker is summarizing; report what is there.
			return e.maxFsckLogID(ctx, 0)
		}
		return 0, err
	}
	defer lock.Release(context.WithoutCancel(ctx))
	// A summary written after a newer grant of the lock would count rows twice.
	ctx = store.WithFence(ctx, lock)
	processed, err := e.intSetting(ctx, "fsck_logid_processed")
	if err != nil {
		return 0, err
	}
	after := processed
	counts := map[string]int64{}
	for {
		evs, err := e.Store.FsckEvents(ctx, after, 1000)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			counts[ev.Code]++
		}
		after = evs[len(evs)-1].LogID
	}
	for code, n := range counts {
		if _, err := e.Store.IncrServerSetting(ctx, "fsck_sum_evcount_"+code, n); err != nil {
			return 0, err
		}
	}
	if after != processed {
		if err := e.Store.SetServerSetting(ctx, "fsck_logid_processed", strconv.FormatInt(after, 10)); err != nil {
			return 0, err
		}
	}
	return after, nil
}

func (e *Env) cmdFsckClearLog(ctx context.Context, r *Request) (*Reply, error) {
	return nil, e.Store.ClearFsckLog(ctx)
}

func (e *Env) cmdFsckGetLog(ctx context.Context, r *Request) (*Reply, error) {
	evs, err := e.Store.FsckEvents(ctx, PerlNum(r.Args.Get("after_logid")), 100)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	for i, ev := range evs {
		p := fmt.Sprintf("row_%d_", i+1)
		res.Set(p+"logid", ev.LogID)
		res.Set(p+"utime", ev.Time.Unix())
		res.Set(p+"fid", ev.Fid)
		res.Set(p+"evcode", ev.Code)
		if ev.DevID != 0 {
			res.Set(p+"devid", ev.DevID)
		}
	}
	res.Set("row_count", len(evs))
	return res, nil
}

func (e *Env) cmdFsckStatus(ctx context.Context, r *Request) (*Reply, error) {
	maxLog, err := e.fsckSummarize(ctx)
	if err != nil {
		return nil, err
	}
	all, err := e.Store.ServerSettings(ctx)
	if err != nil {
		return nil, err
	}
	num := func(k string) int64 { return PerlNum(all[k]) }
	now, err := e.dbUnixTime(ctx)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	running := 0
	if PerlTrue(all["fsck_host"]) {
		running = 1
	}
	res.Set("running", running)
	res.Set("host", all["fsck_host"])
	res.Set("max_fid_checked", num("fsck_highest_fid_checked"))
	res.Set("policy_only", num("fsck_opt_policy_only"))
	res.Set("end_fid", num("fsck_fid_at_end"))
	res.Set("start_time", num("fsck_start_time"))
	res.Set("stop_time", num("fsck_stop_time"))
	res.Set("current_time", now)
	res.Set("max_logid", maxLog)
	// queue_length (gomogile's own): fids queued for checking and not yet
	// checked; fsck_host goes away once every fid is queued, not checked.
	qlen, err := e.Store.QueueLength(ctx, store.QueueFsck)
	if err != nil {
		return nil, err
	}
	res.Set("queue_length", qlen)
	var codes []string
	for k := range all {
		if strings.HasPrefix(k, "fsck_sum_evcount_") {
			codes = append(codes, k)
		}
	}
	sort.Strings(codes)
	for _, k := range codes {
		res.Set("num_"+strings.TrimPrefix(k, "fsck_sum_evcount_"), num(k))
	}
	return res, nil
}
