package sqlstore

// Schema17Tables names the tables of MogileFS schema 17, in dependency
// order, as every dialect's Schema must create them (each family's DDL is
// exported by its backend: postgres.Schema17, mysql.Schema17). With
// OwnTables and a backend's own lock tables they are every table a
// gomogile database holds, which is what a harness empties between tests.
var Schema17Tables = []string{
	"domain", "class", "file", "tempfile", "file_to_delete", "unreachable_fids",
	"file_on", "file_on_corrupt", "host", "device", "server_settings",
	"file_to_replicate", "file_to_delete_later", "fsck_log", "file_to_queue",
	"file_to_delete2", "checksum",
}
