package sqlstore

// Schema17Tables names the tables of MogileFS schema 17, in dependency
// order, as every dialect's Schema must create them (each family's DDL is
// exported by its backend: postgres.Schema17, mysql.Schema17). With
// OwnTables and a backend's own lock tables they are every table a
// gomogile database holds, which is what a harness empties between tests.
var Schema17Tables = func() []string {
	names := make([]string, len(Schema17))
	for i, t := range Schema17 {
		names[i] = t.Name
	}
	return names
}()

// DueIndexes are indexes of our own on the schema 17 queue tables, in
// portable DDL, matching Lease's ORDER BY nexttry, fid: with an index on
// nexttry alone PostgreSQL and SQLite read and sort every due row to return
// the first few (200,000 due rows: 25 ms a Lease instead of 0.03). A
// dialect appends them to its Schema unless its engine already orders a
// secondary index's entries by the primary key (InnoDB does, so MySQL's
// (nexttry) index is (nexttry, fid) already). MogileFS ignores them.
var DueIndexes = []string{
	"CREATE INDEX IF NOT EXISTS file_to_replicate_nexttry_fid ON file_to_replicate (nexttry, fid)",
	"CREATE INDEX IF NOT EXISTS file_to_delete2_nexttry_fid ON file_to_delete2 (nexttry, fid)",
	"CREATE INDEX IF NOT EXISTS file_to_queue_type_nexttry_fid ON file_to_queue (type, nexttry, fid)",
}
