package tracker

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
// (tracker/jobs).

func (t *Tracker) cmdFsckStart(ctx context.Context, r *request) (*Reply, error) {
	fsckHost, err := t.setting(ctx, "fsck_host")
	if err != nil {
		return nil, err
	}
	rebalHost, err := t.setting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	if perlTrue(fsckHost) {
		return nil, perr("fsck_running", "fsck is already running")
	}
	if perlTrue(rebalHost) {
		return nil, perr("rebal_running", "rebalance running; cannot run fsck at same time")
	}
	checked, err := t.intSetting(ctx, "fsck_highest_fid_checked")
	if err != nil {
		return nil, err
	}
	final, err := t.intSetting(ctx, "fsck_fid_at_end")
	if err != nil {
		return nil, err
	}
	if (checked != 0 && final != 0 && checked >= final) || (final == 0 && checked == 0) {
		if err := t.fsckReset(ctx); err != nil {
			t.log.Error("fsck reset", "err", err)
			return nil, perr("db")
		}
	}
	now, err := t.dbUnixTime(ctx)
	if err != nil {
		return nil, err
	}
	start, err := t.intSetting(ctx, "fsck_highest_fid_checked")
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
		{"fsck_host", sp(t.host)},
	} {
		if err := t.setOrDelete(ctx, kv.k, kv.v); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func (t *Tracker) cmdFsckStop(ctx context.Context, r *request) (*Reply, error) {
	if err := t.st.DeleteServerSetting(ctx, "fsck_host"); err != nil {
		return nil, err
	}
	now, err := t.dbUnixTime(ctx)
	if err != nil {
		return nil, err
	}
	return nil, t.st.SetServerSetting(ctx, "fsck_stop_time", now)
}

func (t *Tracker) cmdFsckReset(ctx context.Context, r *request) (*Reply, error) {
	var policy *string
	if perlTrue(r.Args.Get("policy_only")) {
		policy = sp("1")
	}
	if err := t.setOrDelete(ctx, "fsck_opt_policy_only", policy); err != nil {
		return nil, err
	}
	start := "0"
	if perlTrue(r.Args.Get("startpos")) {
		start = r.Args.Get("startpos")
	}
	if err := t.st.SetServerSetting(ctx, "fsck_highest_fid_checked", start); err != nil {
		return nil, err
	}
	if err := t.fsckReset(ctx); err != nil {
		t.log.Error("fsck reset", "err", err)
		return nil, perr("db")
	}
	return nil, nil
}

// fsckReset is Query::_do_fsck_reset.
func (t *Tracker) fsckReset(ctx context.Context) error {
	maxFid, err := t.st.MaxFid(ctx)
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
		if err := t.setOrDelete(ctx, kv.k, kv.v); err != nil {
			return err
		}
	}
	all, err := t.st.ServerSettings(ctx)
	if err != nil {
		return err
	}
	for k := range all {
		if strings.HasPrefix(k, "fsck_sum_evcount_") {
			if err := t.st.DeleteServerSetting(ctx, k); err != nil {
				return err
			}
		}
	}
	logid, err := t.maxFsckLogID(ctx, 0)
	if err != nil {
		return err
	}
	s := strconv.FormatInt(logid, 10)
	if err := t.st.SetServerSetting(ctx, "fsck_start_maxlogid", s); err != nil {
		return err
	}
	return t.st.SetServerSetting(ctx, "fsck_logid_processed", s)
}

// maxFsckLogID pages through fsck_log past `after` (the contract has no
// MAX(logid)); callers start from fsck_logid_processed to keep it short.
func (t *Tracker) maxFsckLogID(ctx context.Context, after int64) (int64, error) {
	for {
		evs, err := t.st.FsckEvents(ctx, after, 1000)
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
func (t *Tracker) fsckSummarize(ctx context.Context) (int64, error) {
	lock, err := t.st.Lock(ctx, "mgfs:fscksum", 10*time.Second)
	if err != nil {
		if errors.Is(err, store.ErrLockTimeout) {
			// Another tracker is summarizing; report what is there.
			return t.maxFsckLogID(ctx, 0)
		}
		return 0, err
	}
	defer lock.Release(context.WithoutCancel(ctx))
	// A summary written after a newer grant of the lock would count rows twice.
	ctx = store.WithFence(ctx, lock)
	processed, err := t.intSetting(ctx, "fsck_logid_processed")
	if err != nil {
		return 0, err
	}
	after := processed
	counts := map[string]int64{}
	for {
		evs, err := t.st.FsckEvents(ctx, after, 1000)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			counts[e.Code]++
		}
		after = evs[len(evs)-1].LogID
	}
	for code, n := range counts {
		if _, err := t.st.IncrServerSetting(ctx, "fsck_sum_evcount_"+code, n); err != nil {
			return 0, err
		}
	}
	if after != processed {
		if err := t.st.SetServerSetting(ctx, "fsck_logid_processed", strconv.FormatInt(after, 10)); err != nil {
			return 0, err
		}
	}
	return after, nil
}

func (t *Tracker) cmdFsckClearLog(ctx context.Context, r *request) (*Reply, error) {
	return nil, t.st.ClearFsckLog(ctx)
}

func (t *Tracker) cmdFsckGetLog(ctx context.Context, r *request) (*Reply, error) {
	evs, err := t.st.FsckEvents(ctx, perlNum(r.Args.Get("after_logid")), 100)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	for i, e := range evs {
		p := fmt.Sprintf("row_%d_", i+1)
		res.Set(p+"logid", e.LogID)
		res.Set(p+"utime", e.Time.Unix())
		res.Set(p+"fid", e.Fid)
		res.Set(p+"evcode", e.Code)
		if e.DevID != 0 {
			res.Set(p+"devid", e.DevID)
		}
	}
	res.Set("row_count", len(evs))
	return res, nil
}

func (t *Tracker) cmdFsckStatus(ctx context.Context, r *request) (*Reply, error) {
	maxLog, err := t.fsckSummarize(ctx)
	if err != nil {
		return nil, err
	}
	all, err := t.st.ServerSettings(ctx)
	if err != nil {
		return nil, err
	}
	num := func(k string) int64 { return perlNum(all[k]) }
	now, err := t.dbUnixTime(ctx)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	running := 0
	if perlTrue(all["fsck_host"]) {
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
	qlen, err := t.st.QueueLength(ctx, store.QueueFsck)
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
