// Package tracker is gomogile's MogileFS tracker (mogilefsd): its
// configuration (the original's mogilefsd.conf keys, flags and defaults),
// the line-protocol server clients speak on port 7001, and the query
// commands of MogileFS::Worker::Query, answering through a store.Store.
//
// # Protocol
//
// A request is one line, "cmd urlencoded-args" ended by "\r\n" (a bare
// "\n" is accepted). Replies are "OK <urlencoded args>\r\n" or
// "ERR <code> <urlencoded text>\r\n"; a callid argument is echoed (as an
// argument of OK, appended to ERR) as Query.pm's ok_line/err_line do. Lines
// starting with '!' are ProcManager's admin commands (!version, !stats,
// !jobs, !want, !to, !queue, !watch, !recent, !shutdown, anything else:
// help), answered with text lines ending in ".\r\n". Lines over
// MaxLineBytes get "ERR line_too_long" and the connection is closed; bad
// %-escapes get "ERR bad_params".
//
// # Commands
//
// create_open, create_close, get_paths, delete, rename, updateclass,
// file_info, file_debug, list_keys, list_fids, get_domains, create_domain,
// delete_domain, create_class, update_class, delete_class, create_host,
// update_host, delete_host, get_hosts, create_device, get_devices,
// set_state, set_weight, replicate_now, set_server_setting,
// server_setting, server_settings, fsck_start, fsck_stop, fsck_reset,
// fsck_status, fsck_getlog, fsck_clearlog, rebalance_status,
// rebalance_start, rebalance_stop, rebalance_test, rebalance_reset,
// rebalance_set_policy, clear_cache, do_monitor_round, noop, test, sleep.
// Argument names, reply keys and error codes are Query.pm's. Not
// implemented (unknown_command): the experimental edit_file, the
// half-finished httpcopy and Perl plugin commands.
//
// # Caching
//
// The tracker reads file, placement, queue, checksum and setting rows from
// the database on every request, because operators edit them by hand;
// domains, classes, hosts and devices are cached for Config.CacheTTL,
// reloaded on a miss, and dropped at once by clear_cache and by the
// tracker's own changes.
//
// # Devices
//
// A device gets new files when it and its host are alive, it has
// min_free_space MB free (when usage is known), and the monitor of the
// [Jobs] manager last saw it writeable; it serves reads when its host is
// alive or readonly, it is alive, readonly or drain, and the monitor saw it
// readable or writeable. Without a Jobs manager the database state alone
// decides. Blob paths follow the original layout, see [jobs.FidPath].
//
// # Configuration
//
// [Config] lists the keys; [Main] the flags. Precedence: flags, then
// MOGILEFSD_<KEY> environment variables (MOGILEFSD_DB_DSN,
// MOGILEFSD_DB_USER, MOGILEFSD_DB_PASS, MOGILEFSD_LISTEN, …, one per key),
// then the file (/etc/mogilefs/mogilefsd.conf or --config), then defaults.
// With no db_dsn at all the tracker uses an embedded SQLite database,
// /var/lib/mogilefs/mogilefs.db, or ./mogilefs.db when that directory
// cannot be written.
//
// # Hostile clients
//
// Nothing a client sends may stop, exhaust or corrupt the tracker.
// admin_networks limits the "!" commands (empty = everyone, as the
// original); line_timeout bounds a partial request line while idle
// connections stay open (idle_timeout 0, as the original); max_conns_per_ip
// and max_conns bound connections. A client may name a fid up to
// store.MaxNamedFid; numeric arguments that overflow are refused; the
// "!watch" stream is a shared ring that a slow watcher skips through (it is
// told how many lines it lost); log values are cut to 256 bytes; store
// error texts are logged, not sent. The README's "Security" section lists
// the keys, defaults and a hardened example.
package tracker
