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

// command is one query command: its handler (Worker::Query's cmd_* sub)
// and who may send it (see access.go).
type command struct {
	run handler
	cat category
}

// commandTable maps command names to t's handlers and their categories,
// built once by New from method values. It is the one place a command's
// category is decided; the package doc and the README's Security table
// name them (TestCommandTable_Documented).
func (t *Tracker) commandTable() map[string]command {
	return map[string]command{
		// What MogileFS::Client sends for an application: files.
		"create_open":  {t.cmdCreateOpen, clientCmd},
		"create_close": {t.cmdCreateClose, clientCmd},
		"get_paths":    {t.cmdGetPaths, clientCmd},
		"delete":       {t.cmdDelete, clientCmd},
		"rename":       {t.cmdRename, clientCmd},
		"updateclass":  {t.cmdUpdateClassOfKey, clientCmd},
		"file_info":    {t.cmdFileInfo, clientCmd},
		"file_debug":   {t.cmdFileDebug, clientCmd},
		"list_keys":    {t.cmdListKeys, clientCmd},
		// Reads file rows by fid range, as list_keys does by key.
		"list_fids": {t.cmdListFids, clientCmd},

		// Read-only views: mogadm's listings and checks, which operators
		// and monitoring also run from hosts outside admin_networks. They
		// change nothing (fsck_status folds the fsck log into its
		// summary counters, as the original's does; rebalance_test reloads
		// the namespace, as any request naming an unknown domain does) but
		// show hosts' addresses, so client_networks still bounds them.
		"get_domains":      {t.cmdGetDomains, clientCmd},
		"get_hosts":        {t.cmdGetHosts, clientCmd},
		"get_devices":      {t.cmdGetDevices, clientCmd},
		"server_setting":   {t.cmdServerSetting, clientCmd},
		"server_settings":  {t.cmdServerSettings, clientCmd},
		"fsck_status":      {t.cmdFsckStatus, clientCmd},
		"fsck_getlog":      {t.cmdFsckGetLog, clientCmd},
		"rebalance_status": {t.cmdRebalanceStatus, clientCmd},
		"rebalance_test":   {t.cmdRebalanceTest, clientCmd},
		// Liveness probes: they do nothing (test crash=1 fails on purpose).
		"noop": {t.cmdNoop, clientCmd},
		"test": {t.cmdTest, clientCmd},

		// What mogadm sends to change the cluster's shape or where its
		// files go: admin_networks only, when it is set.
		"create_domain":        {t.cmdCreateDomain, adminCmd},
		"delete_domain":        {t.cmdDeleteDomain, adminCmd},
		"create_class":         {t.cmdCreateClass, adminCmd},
		"update_class":         {t.cmdUpdateClass, adminCmd},
		"delete_class":         {t.cmdDeleteClass, adminCmd},
		"create_host":          {t.cmdCreateHost, adminCmd},
		"update_host":          {t.cmdUpdateHost, adminCmd},
		"delete_host":          {t.cmdDeleteHost, adminCmd},
		"create_device":        {t.cmdCreateDevice, adminCmd},
		"set_state":            {t.cmdSetState, adminCmd},
		"set_weight":           {t.cmdSetWeight, adminCmd},
		"set_server_setting":   {t.cmdSetServerSetting, adminCmd},
		"replicate_now":        {t.cmdReplicateNow, adminCmd},
		"fsck_start":           {t.cmdFsckStart, adminCmd},
		"fsck_stop":            {t.cmdFsckStop, adminCmd},
		"fsck_reset":           {t.cmdFsckReset, adminCmd},
		"fsck_clearlog":        {t.cmdFsckClearLog, adminCmd}, // the log is fsck's evidence
		"rebalance_start":      {t.cmdRebalanceStart, adminCmd},
		"rebalance_stop":       {t.cmdRebalanceStop, adminCmd},
		"rebalance_reset":      {t.cmdRebalanceReset, adminCmd},
		"rebalance_set_policy": {t.cmdRebalanceSetPolicy, adminCmd},
		// No client library sends these; operators and the original's test
		// rig do after changing the namespace. They drop every cache and
		// wait for a whole monitor round (every storage node asked), which
		// a peer could otherwise make the tracker do in a loop.
		"clear_cache":      {t.cmdClearCache, adminCmd},
		"do_monitor_round": {t.cmdDoMonitorRound, adminCmd},
		// The original's test rig's: it holds a query slot for as long as
		// asked and serves no application.
		"sleep": {t.cmdSleep, adminCmd},
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
