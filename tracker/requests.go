package tracker

import (
	"context"
	"errors"
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
}

type handler func(t *Tracker, ctx context.Context, r *request) (*Reply, error)

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

// commands maps command names to handlers (Worker::Query's cmd_* subs).
var commands map[string]handler

func init() {
	commands = map[string]handler{
		"noop":                 cmdNoop,
		"test":                 cmdTest,
		"sleep":                cmdSleep,
		"clear_cache":          cmdClearCache,
		"do_monitor_round":     cmdDoMonitorRound,
		"create_open":          cmdCreateOpen,
		"create_close":         cmdCreateClose,
		"get_paths":            cmdGetPaths,
		"delete":               cmdDelete,
		"rename":               cmdRename,
		"updateclass":          cmdUpdateClassOfKey,
		"file_info":            cmdFileInfo,
		"file_debug":           cmdFileDebug,
		"list_keys":            cmdListKeys,
		"list_fids":            cmdListFids,
		"get_domains":          cmdGetDomains,
		"create_domain":        cmdCreateDomain,
		"delete_domain":        cmdDeleteDomain,
		"create_class":         cmdCreateClass,
		"update_class":         cmdUpdateClass,
		"delete_class":         cmdDeleteClass,
		"create_host":          cmdCreateHost,
		"update_host":          cmdUpdateHost,
		"delete_host":          cmdDeleteHost,
		"get_hosts":            cmdGetHosts,
		"create_device":        cmdCreateDevice,
		"get_devices":          cmdGetDevices,
		"set_state":            cmdSetState,
		"set_weight":           cmdSetWeight,
		"replicate_now":        cmdReplicateNow,
		"set_server_setting":   cmdSetServerSetting,
		"server_setting":       cmdServerSetting,
		"server_settings":      cmdServerSettings,
		"fsck_start":           cmdFsckStart,
		"fsck_stop":            cmdFsckStop,
		"fsck_reset":           cmdFsckReset,
		"fsck_status":          cmdFsckStatus,
		"fsck_getlog":          cmdFsckGetLog,
		"fsck_clearlog":        cmdFsckClearLog,
		"rebalance_status":     cmdRebalanceStatus,
		"rebalance_start":      cmdRebalanceStart,
		"rebalance_stop":       cmdRebalanceStop,
		"rebalance_test":       cmdRebalanceTest,
		"rebalance_reset":      cmdRebalanceReset,
		"rebalance_set_policy": cmdRebalanceSetPolicy,
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

func cmdNoop(t *Tracker, ctx context.Context, r *request) (*Reply, error) { return nil, nil }

func cmdTest(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	if perlTrue(r.Args.Get("crash")) {
		return nil, errors.New("crashed on purpose")
	}
	return nil, nil
}

func cmdSleep(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	d := time.Duration(perlNum(r.Args.Get("duration"))) * time.Second
	if d <= 0 {
		d = 10 * time.Second
	}
	d = min(d, t.cfg.SleepMax)
	if dl, ok := ctx.Deadline(); ok {
		// Answer within the request's own deadline rather than fail at it.
		d = min(d, time.Until(dl)-100*time.Millisecond)
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return nil, nil
}

func cmdClearCache(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	t.ns.Invalidate()
	return nil, nil
}

func cmdDoMonitorRound(t *Tracker, ctx context.Context, r *request) (*Reply, error) {
	t.ns.Invalidate()
	return nil, nil
}
