// Package query holds the tracker's query commands: what MogileFS 2.73's
// Worker::Query answers (create_open, get_paths, create_domain, fsck_start
// and the rest), with its argument names, reply keys and error codes.
//
// It is apart from the server (package tracker: connections, limits, the
// line protocol, the "!" commands, the status page) so that a command can
// be read and tested without one. A command is a method of Env, the
// explicit environment it runs in: the store, the namespace cache, the
// storage-node client, the configuration values it reads, the upload
// slots and the workers. Nothing else reaches it: no connection, no
// listener, no server state. The server parses a line, looks the command
// up (Lookup), checks its category against admin_networks and
// client_networks, and runs it on its Env; a *ProtoError the command
// returns becomes the ERR line. This package cannot import the server,
// and the compiler keeps it so.
//
// The command table (table.go) is the one place a command's category is
// decided. The commands are grouped by family, one file each: files.go
// (create_open, create_close, get_paths, delete, rename, updateclass,
// file_info, file_debug, list_fids) with listkeys.go (list_keys),
// commit_retry.go (create_close after an ambiguous commit), uploads.go and
// opened.go (the open uploads' bookkeeping) and storage.go (checksums of
// blobs on storage nodes); namespace.go (domains, classes, hosts,
// devices); settings.go (server settings); fsck.go; rebalance.go;
// monitor.go (clear_cache, do_monitor_round, replicate_now); misc.go
// (noop, test, sleep). cluster.go is the namespace as the commands look at
// it (domain and class lookups, device URLs, read order).
package query
