// Package jobs runs a tracker's background workers, as MogileFS's
// Worker::* do: it keeps every file at its class's replica count, deletes
// the blobs of deleted files, cleans up after abandoned uploads and dead
// devices, watches the storage nodes, checks files (fsck), and moves files
// off devices by a rebalance policy. A device in state drain only stops
// getting new files, as since MogileFS 2.40: its files move only when a
// rebalance's policy selects it (from_devices=N, say).
//
// Workers reach the metadata database only through the store contract and
// are safe to run in several trackers on one database: queue rows are
// leased (no two trackers hold one row) and per-fid work happens under the
// original's named locks, mgfs:fid:<fid>:replicate while copying, deleting,
// moving or fixing a fid and mgfs:fid:<fid> around file_on changes.
//
// Workers decide with the same model of the cluster as the tracker's query
// commands (package tracker/internal/cluster): the same device predicates
// under the same settings (Options.Settings: min_free_space and
// default_mindevcount), the same rebalance policy parser, and the same
// storage-node client built from Options.Nodes (conn_timeout,
// node_timeout, conn_pool_size). tracker.JobsOptions maps a tracker's
// configuration onto Options.
//
// Every queue item is bounded by its lease, and a Lease call and each
// pass of the monitor, reaper and job master by Options.PassTimeout, so a
// hung database or storage node delays a worker rather than stopping it.
//
// A [Manager] is built with [New], started with [Manager.Open] and stopped
// with [Manager.Close], which stops leasing, lets in-flight items finish for
// a grace period, then hands the rest back due now and releases their locks.
//
// # Processes
//
// By default workers are goroutines of the Manager's process. With
// Options.Process each worker is a process of its own, as 2.73's children
// were: the program's own binary started with [WorkerArgs], whose main
// calls [RunWorker] when [IsWorker] recognises them (cmd/mogilefsd does).
// The Manager serves its Store to the process over a socketpair, relays
// its log records (with its "pid"), the monitor's observations and !to
// messages, lists its pid in Stats, replaces it when it exits or is
// killed, and kills it when it is silent past its job's watchdog timeout
// (proc.go). Behaviour is otherwise the same; TestProcesses_* run the
// workers this way.
//
// # Workers
//
//   - replicate (pooled): leases file_to_replicate, copies with HTTP GET and
//     PUT until the class's policy (MultipleHosts(N), MultipleDevices(N) or
//     a Union of them) is met, backs off 15 s, 1 m, 5 m … 24 h on failure, parks a fid with
//     no copy at all, and deletes the copies beyond what the policy wants
//     (a lowered mindevcount), as the original's replicator does. It also
//     works the rebalance queue.
//   - delete (pooled): leases file_to_delete2, DELETEs every copy (404 is
//     done), then drops file_on, checksum and queue rows.
//   - fsck (pooled): leases the fsck queue and checks each fid, logging the
//     original's codes (NOPA, POVI, MISS, BLEN, BCNT, REPL, BSUM, NSUM, MSUM,
//     BALG, SRCH, FOND, GONE). Checksums (MD5 or SHA-1: the class's
//     algorithm, else fsck_checksum's) are digested by the storage node on
//     its management port ("SHA-1 <uri> fsck"), or over HTTP when that
//     fails, as HTTPFile::digest does; replication digests the bytes it
//     moves with the file's known algorithm, else the class's (see Copies
//     and checksums for what either trusts).
//   - reaper: turns expired tempfiles into deletions, every expired one in
//     a pass however many (see reaper.go for its capacity against the
//     tracker's upload limits), and forgets the copies on dead devices
//     after queueing their fids for replication.
//   - monitor: reads /dev<N>/usage, records usage, test-writes devices, and
//     keeps the observed states the others place files by. It also keeps a
//     "watch" connection to each host's management port
//     (mogstored_stream_port) for the devices' I/O utilisation, and probes
//     whether each writeable device refuses a body with a wrong
//     Content-MD5; get_devices reports both (Utilization, RejectBadMD5).
//   - job_master (unless NoJobMaster): injects fsck batches while fsck_host
//     names this tracker and rebalance batches while rebal_host does.
//
// # Copies and checksums
//
// A MogileFS installation exists to keep files, so no single read decides
// what a file's bytes are, and no copy counts before its device proved it
// holds them:
//
//   - A checksum is recorded only from the client (create_close's
//     checksum argument, which create_close checks against the stored
//     bytes when the class keeps that algorithm or checksumverify is set),
//     or from independent agreement: replication records the class's digest of the bytes it
//     copied only when a second read of the source agrees (the node's
//     management port digests its own disk, else a second GET), and fsck
//     only when two copies agree or the only copy is digested twice alike.
//   - Replication digests every copy (with the file's recorded algorithm,
//     else the class's, else MD5 for the copy alone), and records the copy
//     (file_on) only after the destination answered HEAD with the file's
//     length and a digest of what it stored equal to what was sent; a
//     recorded checksum must match the bytes read from the source. A copy
//     refused after its PUT is deleted from the destination. A source whose
//     reads disagree gets one more try, then counts as failed for the
//     round, so one bad read costs a copy, never the file.
//   - fsck forgets a copy for a wrong checksum only when a second digest
//     of it disagrees with the recorded checksum too and another copy
//     matches it, so the last copy that matches the upload is never
//     replaced; copies that disagree with no checksum recorded to decide
//     are all kept and reported (BSUM, or MSUM under fsck_checksum). A copy
//     is judged missing or short only when HEAD says so twice. With no good
//     copy anywhere, only copies on dead or deleted devices are forgotten;
//     the rest stay, with GONE logged, for an operator to look at.
//
// # Rebalance
//
// As Rebalance.pm: the source devices are those the policy's from_* keys
// select among the devices files can be deleted from; they are emptied
// one at a time, each in state drain while it is worked (alive again
// afterwards unless leave_in_drain_mode). A file's candidate destinations
// are the devices that should get new files and that the to_* and not_to_*
// keys select, minus every source of the run (use_dest_devs=N keeps N of
// them, shuffled). The replicate workers then copy the file as replication
// does with the source masked away and the candidates as the only
// destinations, and delete the source copy. A file the policy finds no
// place for among the candidates (policy_no_suggestions: each already holds
// a copy, say) keeps its copy, its row leaves the queue with an error
// logged, and the run goes on and finishes, as in the original, where
// re-running the rebalance retries. A policy without a from_* key (the
// default, from_all_devs=1, whatever its to_* keys say) makes every device
// a source and so leaves no destination: nothing moves, and each job master pass logs
// "rebalance cannot find suitable destination devices" until
// rebalance_stop, as the original's job master dies with that message on
// each pass.
//
// # Differences from the original
//
//   - Every copy is checked on its destination by length (HEAD after PUT)
//     and by a digest of what was stored, whatever the class; the original
//     checked the length only, re-read an MD5 copy only, and skipped even
//     that for a node that checks Content-MD5. With no checksum recorded,
//     the source is read twice and the reads must agree; the original
//     recorded the digest of one read as the file's checksum, and its fsck
//     then replaced good copies with that read's bytes (see Copies and
//     checksums).
//   - fsck asks twice before it judges a copy missing, short or corrupt,
//     and with no good copy anywhere keeps the copies of live devices; the
//     original forgot every copy it could not read well once.
//   - The monitor probes a device's Content-MD5 checking once, and again
//     after the device was unreachable, rather than at every test write; an
//     unanswered probe decides nothing. A device's utilisation is forgotten
//     when the watch connection that reported it drops (the original keeps
//     showing the last figure), a connection silent for 15 s is redone, and
//     connections to hosts that no longer have readable devices are closed.
//   - A reaper pass reaps every expired tempfile (for up to half of
//     PassTimeout, then the next pass follows at once); the original reaped
//     50 a pass, at most 10 a second, which a flood of abandoned uploads
//     outgrows (TestReaper_OnePassReapsTheBacklog).
//   - The reaper queues up to queue_rate_for_reaper (1000) fids of a dead
//     device per pass, fewer when queue_size_for_reaper bounds the
//     replicate queue, as the original.
//   - A rebalance whose policy leaves no destination drains no device; the
//     original marks its first source drain before it finds out, on every
//     pass, and leaves it so (TestRebalance_DefaultPolicyMovesNothing).
//   - rebal_signal=stop (rebalance_stop) returns the device being emptied
//     to alive unless leave_in_drain_mode; the original means to but reads
//     the device from the wrong field and leaves it in drain
//     (TestRebalance_Stop).
//   - limit_by=count moves exactly limit fids; the original's check
//     decrements past zero, skips one fid and then takes all the rest
//     (TestRebalance_PolicyLimits).
//   - Rebalance policies support fid_age=old only, and rebalance_set_policy
//     refuses the others (the contract lists fids
//     on a device ascending) and limit_by none, count and size (the original
//     does not implement percent either). A global limit is given its
//     budget when the run starts; the original never set it, so a global
//     limit moved nothing there.
//   - The MultipleHosts(N) and MultipleDevices(N) replication policies run,
//     and a Union(…) of them, which is met when every member is (the
//     original parses Union but cannot run it). create_class and
//     update_class refuse the plugins' MultipleNetworks and
//     HostsPerNetwork; a class that already has one, in a database made by
//     the original, is retried with backoff and logged.
//   - Placement weighs a device by free space times its weight/100; the
//     original ignores weight when replicating.
package jobs
