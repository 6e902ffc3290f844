package tracker

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// request is one query command with what handlers need to know about its
// client.
type request struct {
	Request
	clientIP string
	altZone  bool // zone=alt: answer with hosts' alternate IPs
	// bulk is the request's context without request_timeout, cancelled
	// like it when the client goes away or the tracker gives up: for
	// reading a whole blob (create_close's checksum check), which takes as
	// long as the blob is big and is bounded by node_timeout per wait
	// instead.
	bulk context.Context
}

// handler answers one query command; a *protoError becomes its ERR line.
type handler func(ctx context.Context, r *request) (*Reply, error)

// protoError is an "ERR code text" reply.
type protoError struct{ code, text string }

func (e *protoError) Error() string { return e.code + ": " + e.text }

// perr makes a protocol error; text "" means the original's default text.
func perr(code string, text ...string) error {
	e := &protoError{code: code}
	if len(text) > 0 {
		e.text = text[0]
	}
	return e
}

// commandTable maps command names to t's handlers (Worker::Query's cmd_*
// subs), built once by New from method values.
func (t *Tracker) commandTable() map[string]handler {
	return map[string]handler{
		"noop":                 t.cmdNoop,
		"test":                 t.cmdTest,
		"sleep":                t.cmdSleep,
		"clear_cache":          t.cmdClearCache,
		"do_monitor_round":     t.cmdDoMonitorRound,
		"create_open":          t.cmdCreateOpen,
		"create_close":         t.cmdCreateClose,
		"get_paths":            t.cmdGetPaths,
		"delete":               t.cmdDelete,
		"rename":               t.cmdRename,
		"updateclass":          t.cmdUpdateClassOfKey,
		"file_info":            t.cmdFileInfo,
		"file_debug":           t.cmdFileDebug,
		"list_keys":            t.cmdListKeys,
		"list_fids":            t.cmdListFids,
		"get_domains":          t.cmdGetDomains,
		"create_domain":        t.cmdCreateDomain,
		"delete_domain":        t.cmdDeleteDomain,
		"create_class":         t.cmdCreateClass,
		"update_class":         t.cmdUpdateClass,
		"delete_class":         t.cmdDeleteClass,
		"create_host":          t.cmdCreateHost,
		"update_host":          t.cmdUpdateHost,
		"delete_host":          t.cmdDeleteHost,
		"get_hosts":            t.cmdGetHosts,
		"create_device":        t.cmdCreateDevice,
		"get_devices":          t.cmdGetDevices,
		"set_state":            t.cmdSetState,
		"set_weight":           t.cmdSetWeight,
		"replicate_now":        t.cmdReplicateNow,
		"set_server_setting":   t.cmdSetServerSetting,
		"server_setting":       t.cmdServerSetting,
		"server_settings":      t.cmdServerSettings,
		"fsck_start":           t.cmdFsckStart,
		"fsck_stop":            t.cmdFsckStop,
		"fsck_reset":           t.cmdFsckReset,
		"fsck_status":          t.cmdFsckStatus,
		"fsck_getlog":          t.cmdFsckGetLog,
		"fsck_clearlog":        t.cmdFsckClearLog,
		"rebalance_status":     t.cmdRebalanceStatus,
		"rebalance_start":      t.cmdRebalanceStart,
		"rebalance_stop":       t.cmdRebalanceStop,
		"rebalance_test":       t.cmdRebalanceTest,
		"rebalance_reset":      t.cmdRebalanceReset,
		"rebalance_set_policy": t.cmdRebalanceSetPolicy,
	}
}

// perlTrue is Perl truthiness of a string argument.
func perlTrue(s string) bool { return s != "" && s != "0" }

// perlNum is Perl's numeric value of a string: leading digits, else 0.
func perlNum(s string) int64 {
	s = strings.TrimSpace(s)
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, err := strconv.ParseInt(s[:end], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func (t *Tracker) cmdNoop(ctx context.Context, r *request) (*Reply, error) { return nil, nil }

func (t *Tracker) cmdTest(ctx context.Context, r *request) (*Reply, error) {
	if perlTrue(r.Args.Get("crash")) {
		return nil, errors.New("crashed on purpose")
	}
	return nil, nil
}

// cmdSleep is cmd_sleep: sleep($args->{duration} || 10). A false duration
// ("", "0") is 10 s; Perl's sleep takes the integer part of any other, so
// "abc", "0.5" and negative durations return at once. As in the original
// nothing but the client bounds it, not request_timeout: a sleep holds a
// query slot and nothing else (sleep_max caps it where wanted). It ends
// early when the client hangs up or the tracker shuts down.
func (t *Tracker) cmdSleep(ctx context.Context, r *request) (*Reply, error) {
	secs := int64(10)
	if arg := r.Args.Get("duration"); perlTrue(arg) {
		secs = min(max(perlNum(arg), 0), math.MaxInt64/int64(time.Second))
	}
	d := time.Duration(secs) * time.Second
	if t.cfg.SleepMax > 0 {
		d = min(d, t.cfg.SleepMax)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-r.bulk.Done():
		return nil, r.bulk.Err()
	}
	return nil, nil
}

// cmdClearCache and cmdDoMonitorRound drop the namespace caches and, as the
// original, answer only after a full monitor round that started after the
// request, so that every worker has seen the change (class hash type,
// device state) by the time the client hears OK. The wait is bounded by the
// request's deadline (request_timeout).
func (t *Tracker) cmdClearCache(ctx context.Context, r *request) (*Reply, error) {
	if err := t.monitorRound(ctx); err != nil {
		return nil, err
	}
	// The original's clear_cache answers with the request's own arguments
	// (create_domain's reply is built the same way).
	res := &Reply{}
	for _, k := range slices.Sorted(maps.Keys(r.Args)) {
		if k != "callid" { // okLine adds it back
			res.Set(k, r.Args[k])
		}
	}
	return res, nil
}

func (t *Tracker) cmdDoMonitorRound(ctx context.Context, r *request) (*Reply, error) {
	return nil, t.monitorRound(ctx)
}

func (t *Tracker) monitorRound(ctx context.Context) error {
	t.ns.Invalidate()
	if t.jobs == nil || !t.jobsOpen {
		return nil
	}
	return t.jobs.MonitorRound(ctx)
}
