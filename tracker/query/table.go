package query

import (
	"context"
	"maps"
)

// Category says who may send a query command; the server enforces it
// (admin_networks, client_networks: tracker/access.go). Every command of
// the table has one (TestCommands_Categorised; in the tracker,
// TestCommandTable_EveryCommandHasACategory).
type Category uint8

const (
	// Uncategorised is a command added without a category: only
	// admin_networks may use it, so a forgotten category fails closed.
	Uncategorised Category = iota
	// Client: an application's file commands, and commands that only
	// read (the namespace, settings, fsck and rebalance progress) or do
	// nothing (noop, test).
	Client
	// Admin: changes the namespace, devices, server settings or the
	// fsck and rebalance jobs, or makes the tracker work for everyone
	// (clear_cache, do_monitor_round) or hold a query slot (sleep).
	Admin
)

func (c Category) String() string {
	switch c {
	case Client:
		return "client"
	case Admin:
		return "admin"
	}
	return "uncategorised"
}

// Handler answers one query command against e; a *ProtoError becomes its
// ERR line.
type Handler func(e *Env, ctx context.Context, r *Request) (*Reply, error)

// Command is one query command: its handler (Worker::Query's cmd_* sub)
// and who may send it.
type Command struct {
	Run Handler
	Cat Category
}

// Lookup returns the command called name.
func Lookup(name string) (Command, bool) {
	c, ok := commands[name]
	return c, ok
}

// Commands returns every command by name, for listing them.
func Commands() map[string]Command {
	return maps.Clone(commands)
}

// commands maps command names to their handlers and categories. It is the
// one place a command's category is decided; the tracker's package doc and
// the README's Security table name them (TestCommandTable_Documented).
var commands = map[string]Command{
	// What MogileFS::Client sends for an application: files.
	"create_open":  {(*Env).cmdCreateOpen, Client},
	"create_close": {(*Env).cmdCreateClose, Client},
	"get_paths":    {(*Env).cmdGetPaths, Client},
	"delete":       {(*Env).cmdDelete, Client},
	"rename":       {(*Env).cmdRename, Client},
	"updateclass":  {(*Env).cmdUpdateClassOfKey, Client},
	"file_info":    {(*Env).cmdFileInfo, Client},
	"file_debug":   {(*Env).cmdFileDebug, Client},
	"list_keys":    {(*Env).cmdListKeys, Client},
	// Reads file rows by fid range, as list_keys does by key.
	"list_fids": {(*Env).cmdListFids, Client},

	// Read-only views: mogadm's listings and checks, which operators
	// and monitoring also run from hosts outside admin_networks. They
	// change nothing (fsck_status folds the fsck log into its
	// summary counters, as the original's does; rebalance_test reloads
	// the namespace, as any request naming an unknown domain does) but
	// show hosts' addresses, so client_networks still bounds them.
	"get_domains":      {(*Env).cmdGetDomains, Client},
	"get_hosts":        {(*Env).cmdGetHosts, Client},
	"get_devices":      {(*Env).cmdGetDevices, Client},
	"server_setting":   {(*Env).cmdServerSetting, Client},
	"server_settings":  {(*Env).cmdServerSettings, Client},
	"fsck_status":      {(*Env).cmdFsckStatus, Client},
	"fsck_getlog":      {(*Env).cmdFsckGetLog, Client},
	"rebalance_status": {(*Env).cmdRebalanceStatus, Client},
	"rebalance_test":   {(*Env).cmdRebalanceTest, Client},
	// Liveness probes: they do nothing (test crash=1 fails on purpose).
	"noop": {(*Env).cmdNoop, Client},
	"test": {(*Env).cmdTest, Client},

	// What mogadm sends to change the cluster's shape or where its
	// files go: admin_networks only, when it is set.
	"create_domain":        {(*Env).cmdCreateDomain, Admin},
	"delete_domain":        {(*Env).cmdDeleteDomain, Admin},
	"create_class":         {(*Env).cmdCreateClass, Admin},
	"update_class":         {(*Env).cmdUpdateClass, Admin},
	"delete_class":         {(*Env).cmdDeleteClass, Admin},
	"create_host":          {(*Env).cmdCreateHost, Admin},
	"update_host":          {(*Env).cmdUpdateHost, Admin},
	"delete_host":          {(*Env).cmdDeleteHost, Admin},
	"create_device":        {(*Env).cmdCreateDevice, Admin},
	"set_state":            {(*Env).cmdSetState, Admin},
	"set_weight":           {(*Env).cmdSetWeight, Admin},
	"set_server_setting":   {(*Env).cmdSetServerSetting, Admin},
	"replicate_now":        {(*Env).cmdReplicateNow, Admin},
	"fsck_start":           {(*Env).cmdFsckStart, Admin},
	"fsck_stop":            {(*Env).cmdFsckStop, Admin},
	"fsck_reset":           {(*Env).cmdFsckReset, Admin},
	"fsck_clearlog":        {(*Env).cmdFsckClearLog, Admin}, // the log is fsck's evidence
	"rebalance_start":      {(*Env).cmdRebalanceStart, Admin},
	"rebalance_stop":       {(*Env).cmdRebalanceStop, Admin},
	"rebalance_reset":      {(*Env).cmdRebalanceReset, Admin},
	"rebalance_set_policy": {(*Env).cmdRebalanceSetPolicy, Admin},
	// No client library sends these; operators and the original's test
	// rig do after changing the namespace. They drop every cache and
	// wait for a whole monitor round (every storage node asked), which
	// a peer could otherwise make the tracker do in a loop.
	"clear_cache":      {(*Env).cmdClearCache, Admin},
	"do_monitor_round": {(*Env).cmdDoMonitorRound, Admin},
	// The original's test rig's: it holds a query slot for as long as
	// asked and serves no application.
	"sleep": {(*Env).cmdSleep, Admin},
}
