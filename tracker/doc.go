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
// Argument names, reply keys and error codes are Query.pm's. The commands
// live in package tracker/query, apart from the server. Each command has a
// category, decided in one table (query's table.go), that says who may
// send it (see Access):
//
// Client commands: create_open, create_close, get_paths, delete, rename,
// updateclass, file_info, file_debug, list_keys, list_fids (an
// application's files), get_domains, get_hosts, get_devices,
// server_setting, server_settings, fsck_status, fsck_getlog,
// rebalance_status, rebalance_test (read-only views, as mogadm lists and
// checks the cluster), noop, test (liveness).
//
// Admin commands: create_domain, delete_domain, create_class,
// update_class, delete_class, create_host, update_host, delete_host,
// create_device, set_state, set_weight, set_server_setting, replicate_now,
// fsck_start, fsck_stop, fsck_reset, fsck_clearlog, rebalance_start,
// rebalance_stop, rebalance_reset, rebalance_set_policy (what mogadm sends
// to change the cluster's shape or where its files go), clear_cache,
// do_monitor_round (no client library sends them; they drop every cache
// and wait for a whole monitor round), sleep (it holds a query slot as
// long as asked and serves no application).
//
// Not implemented (unknown_command): the experimental edit_file, the
// half-finished httpcopy and Perl plugin commands.
//
// # Access
//
// admin_networks and client_networks (comma-separated addresses or
// address/bits; empty = everyone, as in the original, the default) say who
// may send which command. An address in admin_networks may send
// everything, and when admin_networks is set the admin commands and the
// "!" commands are for it alone. client_networks bounds the client
// commands: when it is set, a peer in neither list gets none. With
// admin_networks empty, the admin and "!" commands follow client_networks,
// so that setting client_networks alone never leaves them open to the
// peers it shuts out. A refused command is answered "ERR access_denied
// <text>" (the callid echoed, as on every ERR line) without waiting for a
// query slot, logged as a warning with the command and the peer's
// address, and counted as an error in gomogile_requests_total; a refused
// "!" command is answered "ERROR: access denied: ..." and ".", as before.
// The status listener (status_listen) answers inside admin_networks only,
// when it is set, whatever client_networks says.
//
// # Caching
//
// The tracker reads file, placement, queue, checksum and setting rows from
// the database on every request, because operators edit them by hand,
// except skip_mkcol, which create_open reads for every upload: like the
// original's server_setting_cached it may be up to 5 s old (a change
// through this tracker's set_server_setting is seen at once);
// domains, classes, hosts and devices are cached for namespace_cache_ttl
// (Config.NamespaceCacheTTL, 3 s), reloaded on a miss, and dropped at once
// by clear_cache and by the tracker's own changes. The standard workers
// ([NewJobs], Options.Jobs) read the namespace through the same cache.
//
// # Devices
//
// The query commands and the workers decide with one model of the cluster
// (package tracker/internal/cluster), under the same settings. A device
// gets new files when it and its host are alive, it has min_free_space MB
// free (when usage is known), and the monitor of the [Jobs] manager last
// saw it writeable; it serves reads when its host is alive or readonly, it
// is alive, readonly or drain, and the monitor saw it readable or
// writeable. Without a Jobs manager the database state alone decides.
// Blob paths follow the original layout (/dev<devid>/b/mmm/ttt/<fid>.fid).
//
// # Requests
//
// Each request runs under its own context: it ends after request_timeout
// (30 s), when the client's connection goes away, or when Close gives up
// waiting, whichever comes first; the database and the storage nodes are
// asked under it. Reading a whole blob (create_close's checksum check) is
// not bound by request_timeout, since it takes as long as the blob is big,
// but by node_timeout per wait; nor is sleep, which sleeps as long as asked
// (duration, default 10 s) as in the original, unless sleep_max caps it.
//
// # Configuration
//
// [Config] lists the keys; [Main] the flags. Precedence: flags, then
// MOGILEFSD_<KEY> environment variables (MOGILEFSD_DB_DSN,
// MOGILEFSD_DB_USER, MOGILEFSD_DB_PASS, MOGILEFSD_LISTEN, …, one per key),
// then the file (/etc/mogilefs/mogilefsd.conf or --config), then defaults.
// With no db_dsn at all the tracker uses an embedded SQLite database,
// /var/lib/mogilefs/mogilefs.db, or ./mogilefs.db when that directory
// cannot be written. An unknown key is an error, so a typo is not silently
// ignored.
//
// Every key MogileFS 2.73 reads is either honoured, by the query commands
// and the workers alike, or refused at start with [ErrRefused] and a
// message saying why and what to use instead; none is accepted and then
// ignored:
//
//   - daemonize: honoured (-D) by the mogilefsd command, as are pidfile and
//     user; tracker.Main.Run, which serves in its caller's process, refuses
//     the three with [ErrProcess].
//   - db_dsn, db_user, db_pass: honoured; db_dsn also takes URL forms, and
//     no db_dsn at all means the embedded SQLite database (the original
//     defaulted to DBI:mysql:mogilefs).
//   - conf_port, listen: honoured.
//   - listener_jobs, query_jobs: honoured: concurrent requests
//     (listener_jobs wins, as in the original); at most 500.
//   - delete_jobs, replicate_jobs, fsck_jobs: honoured: worker counts.
//   - reaper_jobs: honoured for 0 (no reaper in this tracker) and 1;
//     larger counts are refused (more reapers would race for the same rows).
//   - job_master: honoured (--no-job_master).
//   - monitor_jobs: 1 is accepted, since there is always exactly one
//     monitor; other values are refused (the original ignores the key).
//   - min_free_space: honoured by create_open, replication and rebalance.
//   - max_disk_age: refused: the original reads it and uses it nowhere.
//   - max_handles: 0 is accepted; other values are refused: in the
//     original it bounds how often a database handle is reused, which a
//     connection pool does not need (the open-file limit is ulimit -n).
//   - debug: honoured: debug logging.
//   - pidfile: honoured (see daemonize).
//   - mogstored_stream_port: honoured by the monitor (utilisation); 0
//     watches nothing.
//   - default_mindevcount: honoured: the default class's replica count, for
//     the protocol and the replicate and fsck workers.
//   - node_timeout, conn_timeout, conn_pool_size: honoured by the one
//     storage-node client of the tracker and its workers; node_timeout
//     bounds each wait for a node's answer, conn_timeout each connect.
//   - rebalance_ignore_missing: honoured: a moved file's source copy
//     already gone counts as deleted; without it the move fails and the
//     source stays in file_on (for fsck), as in the original.
//   - repl_use_get_port: honoured: replication reads the source copy from
//     its host's http_get_port.
//   - local_network: empty is accepted; a value is refused: only the
//     ZoneLocal Perl plugin reads it (use hosts' altip/altmask).
//   - no_schema_check: false is accepted; true is refused: gomogile always
//     checks the schema (it upgrades older ones and refuses newer ones).
//   - plugins: refused: Perl plugins cannot be loaded.
//   - user: honoured (needs root; see daemonize).
//
// Server settings (set_server_setting) the original reads are likewise
// honoured — skip_mkcol, skip_devcount, fsck_checksum, fsck_opt_policy_only,
// queue_rate_for_* and queue_size_for_* (fsck, rebal, reaper), the fsck_* and
// rebal_* state, the slave list `mogadm slave add` writes (slave_keys,
// slave_<key> = "DSN|user|pass"; each change bumps slave_version, and the
// Store reads get_paths, file_info, list_keys and list_fids from those
// read replicas while they are within its lag bound, see package store),
// case_sensitive_list_keys (off: list_keys matches its prefix ignoring
// the case of ASCII letters, on every backend; see below) —
// or refused with ERR setting_refused and the reason:
// memcache_servers (no memcache; memcache_ttl alone means nothing, as in
// the original without servers), internal_queue_limit (no in-memory queue),
// and network_zones and zone_* (only MultipleNetworks and the ZoneLocal
// plugin read them).
//
// gomogile's own keys: idle_timeout, write_timeout, shutdown_timeout,
// max_conns, sleep_max, request_timeout, namespace_cache_ttl, and
// log_level, log_format and log_file (see [Config] and [NewLogger]),
// admin_networks and client_networks (see Access), and line_timeout,
// max_conns_per_ip, max_open_uploads_per_ip, max_open_uploads and
// tempfile_ttl (see Hostile clients below). cache_ttl is refused with a
// pointer to namespace_cache_ttl:
// the original has no such key, and its memcache_ttl (a server setting,
// often an hour) must not become an hour-long namespace cache.
//
// # Hostile clients
//
// Nothing a client sends may stop, exhaust or corrupt the tracker.
// admin_networks and client_networks limit who may send what (see
// Access); line_timeout bounds a partial request line while idle
// connections stay open (idle_timeout 0, as the original); max_conns_per_ip
// and max_conns bound connections.
//
// Open uploads (create_open whose create_close has not come) are bounded
// per client address, max_open_uploads_per_ip (1,000), and for all
// clients together, max_open_uploads (10,000); 0 is no bound. Past either,
// create_open gets "ERR too_many_uploads <text naming the key>" and writes
// nothing. MogileFS::Client's new_file then returns undef with that errcode,
// as for any ERR, and does not retry by itself. The limits are per tracker,
// in memory: the tempfile table records no client address, and counting its
// rows on every create_open would cost each upload a query on a table every
// tracker writes; N trackers on one database hold at most N ×
// max_open_uploads open uploads' rows. A slot comes back when its upload
// ends: a create_close on this tracker that commits or discards it, a
// failed create_open, or, for an abandoned upload, once tempfile_ttl (3,600
// s, the original's) has passed and the reaper has removed its tempfile; a
// create_close that decides nothing frees no slot, so no client frees
// another's. A tracker restarted forgets its slots (its previous run's
// abandoned uploads go with the reaper). gomogile_uploads_open and
// gomogile_uploads_refused_total{reason} count them (status_listen).
//
// A metadata database out of space (disk, table or tablespace full:
// store.ErrNoSpace) refuses create_open and create_close with "ERR db_full
// Metadata database out of space: uploads are refused until space is
// freed" and an error in the log (at most once a second); nothing is
// written, and once space is freed the next upload succeeds, with no
// restart. The original answered such a create_open "ERR db Database
// error"; clients treat both codes alike. A create_close refused so keeps
// its tempfile, and the client may send it again.
//
// A client may name a fid up to
// store.MaxNamedFid; numeric arguments that overflow are refused; the
// "!watch" stream is a shared ring that a slow watcher skips through (it is
// told how many lines it lost); log values are cut to 256 bytes; store
// error texts are logged, not sent. The README's "Security" section lists
// the keys, defaults and a hardened example.
//
// # Job control
//
// The original forks a child per worker; so does the mogilefsd command:
// each worker of replicate, delete, fsck, reaper, monitor and job_master
// is a process of its own ("mogilefsd [replicate]" in ps), with its pid in
// "!jobs" and in its "!watch" lines, so that an operator who kills or
// stops that pid (kill -9, kill -STOP) stops that worker and never the
// query server. The worker reaches the database through the tracker
// (package tracker/internal/storerpc: SQLite's Store is one process per
// file), and its locks are released when its process has ended. A worker
// that exits or is killed is logged ("Child <pid> (<job>) died: <$?>
// (UNEXPECTED)", 9 for kill -9) and replaced; one silent for longer than
// its job's watchdog timeout (2.73's: monitor 30 s, replicate 90 s,
// delete, fsck and job_master 120 s, reaper 240 s) is killed first
// ("Watchdog killing worker <pid> (<job>)"), as 2.73's parent did. A
// program that builds a tracker with New and a jobs.Manager without
// jobs.Options.Process runs the workers as goroutines, with the same
// observable model and the tracker's pid standing in. "!want N <job>" sets the desired
// count of any job class (queryworker, replicate, delete, fsck, reaper,
// monitor, job_master), 0 included; "!jobs" lists count, desired and pids
// of every job that has had workers; replicate, delete and fsck workers
// run only while a job master is wanted (job_master = 0 or --no-job_master
// starts none, "!want 1 job_master" starts them, "!want 0 job_master"
// stops them); "!to <job> :shutdown" ends each worker of the job, which
// the supervisor replaces once it has returned — logging its death and the
// shortfall then, half a second or more after the request, as the
// original's parent did from its loop — and "!to <job> :wake_up" makes idle workers look for
// work now. "!watch" streams lines as the original did: ":: " and the
// message, a worker's prefixed with "[<job>(<pid>)] ", including the
// original's "Job <job> has only N, wants M, making K." (for queryworker
// too; not at start-up, which starts what it was asked for), "Child <pid>
// (<job>) died: 0 (UNEXPECTED)", the monitor's "Port P not listening on IP
// (URL)?  Error was: ..." (once when a device starts failing, then once a
// minute with repeated=N, the failed checks not logged since; "devN on IP
// answers again" at Info when it is back) and fsck's "Connectivity problem
// reaching device N on host IP". clear_cache answers
// with the request's own arguments, as the original's does. These replies
// and lines were recorded from the original 2.73 tracker and are replayed
// against ours by TestOperatorScript (testdata/original-2.73-jobs.txt).
//
// The original's test-rig environment is honoured: with TESTING set (to
// anything Perl calls true) a failed replication is retried after 1 s
// instead of the back-off, and T_FAKE_IO_DEV<N>=<pct> overrides device N's
// I/O utilisation as the monitor reports it (and so get_paths ordering).
//
// # Differences from MogileFS 2.73
//
// Each is deliberate and pinned by a test.
//
//   - The query workers are goroutines of the tracker: "!jobs" lists the
//     tracker's own pid for each, and only the jobs above are processes
//     (TestMogilefsd_JobsAreProcesses).
//   - "!to queryworker <msg>" reports the query slots as the children it
//     reached but does nothing: query slots are not goroutines that read
//     messages. Messages other than :shutdown and :wake_up are counted and
//     ignored: the rest of the original's worker messages belong to its
//     process plumbing (TestJobControl_AsOriginal).
//   - "!want 0 job_master" stops the queue workers at once (each after its
//     current item); the original let them finish work its parent already
//     held in memory, which gomogile does not have (TestJobControl_AsOriginal,
//     TestFsck_NoJobMaster).
//   - "!want" is accepted as soon as the tracker listens; the original
//     answers "ERROR: Monitor has not completed initial run yet" until its
//     first monitor round is done. gomogile's workers that need to know
//     which devices are reachable wait for that round themselves, so a
//     count set earlier takes effect when they start; a script that
//     retries on that error works unchanged.
//   - A rebalance never deletes a source copy that would leave the file
//     with fewer copies than its class wants; the original does when the
//     target devices already hold the file (from_devices=2 to_devices=1,3
//     with copies on 1, 2, 3 leaves 2). The row is dropped with an error
//     instead (TestRebalance_TargetsHoldingTheFileKeepMinDevCount). How
//     the copies are spread is the policy's, asked within the targets, as
//     there: from_hosts=1 to_hosts=3 moves a file whose other copy is on
//     host 3 next to it (TestRebalance_TypicalPoliciesMoveEveryFile).
//   - A rebalance whose policy leaves no destination (the default policy,
//     every device a source) drains no device; the original marks its
//     first source drain on every pass before it finds out, and its
//     rebalance_stop never returns a device to alive. gomogile's does,
//     unless leave_in_drain_mode (TestRebalance_DefaultPolicyMovesNothing,
//     TestRebalance_Stop).
//   - "!watch" also carries gomogile's other warnings, as the message and
//     its key=value attributes, where the original has other texts or
//     none; e.g. a storage node that times out the monitor's usage request
//     gives "usage check failed dev=N host=IP err=...", where the original
//     marks the host unreachable silently. The lines scripts wait for are
//     the original's (TestOperatorScript).
//   - create_class and update_class refuse the MultipleNetworks(…) and
//     HostsPerNetwork(…) policies (ERR invalid_replpolicy, "Failed to load
//     replication policy class …"), which the original loads from the
//     MogileFS::Network plugin, together with its network_zones and zone_*
//     settings (refused by set_server_setting): network zones are not
//     implemented. Union(…) is parsed as the original parses it and, unlike
//     there (its replicate_to dies "not implemented"), runs: a file needs
//     what every member needs. Text after a policy is an error; the
//     original ignores it (TestCommands_CreateClassRefusesPoliciesTheWorkerCannotRun,
//     TestReplPolicy_UnionReplicates).
//   - "!stats" prints the original's work_queue_for_<job> and
//     work_sent_to_<job> (replicate, delete, fsck, rebalance) once a queue
//     has had work; work_sent_to_ counts the rows this tracker's workers
//     leased, and work_queue_for_ is always 0, because workers lease rows
//     from the database themselves and no work waits in the tracker
//     between job master and worker (TestStats_WorkCounters).
//   - list_keys compares its prefix byte for byte on every backend unless
//     case_sensitive_list_keys is set off (stored 0, as 2.73 stores it),
//     when ASCII letters match in either case on every backend; the
//     original without the setting (its default) matched case-insensitively
//     on MySQL and SQLite and never on PostgreSQL. Keys list in byte order
//     either way, and after is checked against the prefix the same way
//     (2.73 compared it case-sensitively, so a client paging with a
//     next_after of another case got after_mismatch)
//     (TestListKeys_CaseInsensitiveSetting).
//   - On a MySQL database made by mogdbsetup with a case-insensitive
//     collation, list_keys matches the prefix by that collation as the
//     original did, but lists in byte order, as on every backend, where the
//     original listed in collation order ("B" before "a" here, after it
//     there); case_sensitive_list_keys on does not make the match
//     case-sensitive there (store/mysql TestOpen_MogdbsetupLatin1).
//   - With no monitor running ("!want 0 monitor"), clear_cache and
//     do_monitor_round fail at the request's deadline (request_timeout)
//     rather than waiting for ever (TestMonitorRound_WaitsForAFreshPass).
//   - status_listen (off by default) adds an HTTP listener the original
//     did not have: Prometheus metrics, /healthz, /readyz, pprof and a
//     status page, answering only inside admin_networks when that is set
//     (TestStatus_MetricsDuringE2E, TestStatus_AdminNetworks,
//     TestStatus_PageInBrowser).
//   - fsck_status and rebalance_status also return queue_length, the fids
//     still queued for checking or moving: both jobs end their run once
//     every fid is queued, so without it a client cannot tell when the last
//     one has been handled. rebalance_status also returns nonempty_devs, the
//     run's completed source devices that still hold files (a failed move
//     leaves the queue too). Clients of the original ignore the extra keys
//     (TestCommands_FsckAndRebalance, TestCommands_RebalanceStatusNonemptyDevs).
package tracker
