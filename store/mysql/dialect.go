package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"slices"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/gomogile/gomogile/store/sqlstore"
)

// Server error numbers the dialect and the locks act on. Client-library
// numbers (2006, 2013) never come from the Go driver, which reports a
// broken connection as ErrInvalidConn or driver.ErrBadConn, but they are
// recognised in case a proxy in between relays them.
const (
	erDupKey           = 1022
	erDupEntry         = 1062
	erDupEntryWithKey  = 1586
	erLockWaitTimeout  = 1205
	erLockDeadlock     = 1213
	erServerShutdown   = 1053
	erConnectionKilled = 1927 // MariaDB: the session was killed mid-query
	erClientInactivity = 4031 // MySQL 8.0.24+: closed for wait_timeout
	erUserLockDeadlock = 3058 // MySQL 8: GET_LOCK would deadlock
	crServerGone       = 2006
	crServerLost       = 2013
	erDupFieldName     = 1060 // ALTER TABLE ADD COLUMN of a column already there
	erRecordFileFull   = 1114 // "The table is full": InnoDB's tablespace cannot grow (disk full, a size cap)
	erDiskFull         = 1021 // "Disk full; waiting for someone to free some space"
)

// Dialect is MySQL's and MariaDB's SQL for the shared layer, exported so
// that a backend for a MySQL-like database (TiDB, Vitess) can build on it:
// embed it and override the methods whose SQL differs. Build it with
// NewDialect, which looks at the database's column types; the zero value
// treats every name column as needing a byte-order cast.
type Dialect struct {
	// BackendName is what Name reports (Info.Driver); "" means "mysql".
	BackendName string
	// bytewise names the columns (by bare name) that already compare and
	// sort by bytes in this database, so ByteOrder can leave them alone.
	bytewise map[string]bool
	// keyCharset is the character set of file.dkey ("" before the table
	// exists); latin1 makes Open talk latin1 (see rawBytesCollation).
	keyCharset string
	// galera is set on a Galera node: fenced writes then check their
	// fences by writing the fence row (Fencing).
	galera bool
	// database is the canonical name the lock backend derives its lock
	// keys from (serverLockName), and so Fencing its fence rows' keys.
	database string
}

var (
	_ sqlstore.Dialect  = Dialect{}
	_ sqlstore.Collated = Dialect{}
)

// NewDialect returns the Dialect for the database db is connected to:
// ByteOrder leaves alone the name columns that already compare by bytes
// there (VARBINARY, as Schema17 creates them; a mogdbsetup database's
// VARCHAR columns get a cast), and Collated reports the others.
func NewDialect(ctx context.Context, db *sql.DB) (Dialect, error) {
	bytewise, charset, err := bytewiseColumns(ctx, db)
	if err != nil {
		return Dialect{}, err
	}
	return Dialect{bytewise: bytewise, keyCharset: charset}, nil
}

// bytewiseColumns reports which name columns the shared layer orders or
// compares by bytes (by bare name: dkey of file and tempfile, namespace,
// classname, field) are VARBINARY in the database ctx's pool is on,
// counting tables still to be created (by schema, as VARBINARY) as such. A
// mogdbsetup database's VARCHAR columns are not. It also returns file.dkey's
// character set.
func bytewiseColumns(ctx context.Context, db *sql.DB) (map[string]bool, string, error) {
	rows, err := db.QueryContext(ctx, `SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, COALESCE(CHARACTER_SET_NAME, '') FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND (TABLE_NAME, COLUMN_NAME) IN
		(('file', 'dkey'), ('tempfile', 'dkey'), ('domain', 'namespace'), ('class', 'classname'), ('server_settings', 'field'))`)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	out := map[string]bool{"dkey": true, "namespace": true, "classname": true, "field": true}
	var keyCharset string
	for rows.Next() {
		var table, col, typ, charset string
		if err := rows.Scan(&table, &col, &typ, &charset); err != nil {
			return nil, "", err
		}
		out[col] = out[col] && strings.EqualFold(typ, "varbinary")
		if table == "file" {
			keyCharset = strings.ToLower(charset)
		}
	}
	return out, keyCharset, rows.Err()
}

// rawBytesCollation is the connection collation under which keys pass to
// and from the tables unchanged, as MogileFS's DBD::mysql connection
// (without mysql_enable_utf8, on a latin1 server) passed them: a latin1
// table holds whatever bytes the Perl tracker sent, UTF-8 included, and a
// utf8mb4 connection would convert them (losing every character latin1
// lacks on the way in, and turning each stored byte into a character on
// the way out). Comparisons still use each column's own collation, which
// outranks a connection's. "" for any other character set: utf8mb4.
func (d Dialect) rawBytesCollation() string {
	if d.keyCharset == "latin1" {
		return "latin1_swedish_ci"
	}
	return ""
}

// Name is BackendName, or "mysql".
func (d Dialect) Name() string { return cmp.Or(d.BackendName, "mysql") }

// Rebind is the identity: the driver takes '?' placeholders.
func (Dialect) Rebind(query string) string { return query }

func (Dialect) UnixNow() string { return "UNIX_TIMESTAMP()" }

// ByteOrder casts to a binary string, so a database made by mogdbsetup with
// a case-insensitive collation still compares and sorts keys by bytes
// (BINARY col would do the same but is deprecated since MySQL 8.0.27).
// The VARBINARY columns of our own schema are left bare: they already
// compare by bytes, and a cast would keep the server from using their
// index for ranges and order, scanning and sorting a whole domain's keys
// for each page of list_keys.
func (d Dialect) ByteOrder(col string) string {
	bare := col
	if i := strings.LastIndexByte(col, '.'); i >= 0 {
		bare = col[i+1:]
	}
	if d.bytewise[strings.Trim(bare, "`")] {
		return col
	}
	return "CAST(" + col + " AS BINARY)"
}

// Collated reports the name columns that compare by a collation of their
// own: a mogdbsetup database's VARCHAR columns (case-insensitive and PAD
// SPACE with the usual collations). Lookups of such a name then match
// what the table's unique key treats as the same name, as MogileFS's
// "dkey = ?" did, so an upload of "a" replaces the file "A" instead of
// colliding with it on every retry.
func (d Dialect) Collated(col string) bool { return !d.bytewise[col] }

// Upsert uses ON DUPLICATE KEY UPDATE. Two MySQL rules the caller must
// know: the clause fires on a conflict over any unique key of the table,
// not only over key; and assignments run left to right, so a bare column
// named after it was assigned reads the new value. "Do nothing" assigns the
// first key column to itself rather than using INSERT IGNORE, which would
// also turn errors other than the conflict (bad values, missing parents)
// into warnings.
func (Dialect) Upsert(table string, cols, key []string, update string) string {
	k := cmp.Or(slices.Concat(key, cols)...) // key[0], or cols[0] without a key
	return sqlstore.Insert(table, cols) + " ON DUPLICATE KEY UPDATE " + cmp.Or(update, k+" = "+k)
}

// Excluded uses VALUES(col): MariaDB lacks the row-alias form MySQL 8.0.19
// introduced, and MySQL 8 still accepts VALUES() (with a deprecation note).
func (Dialect) Excluded(col string) string { return "VALUES(" + col + ")" }

func (Dialect) Least(a, b string) string { return "LEAST(" + a + ", " + b + ")" }

// Schema is Schema17. It needs no sqlstore.DueIndexes: an InnoDB secondary
// index ends with the primary key, so the (nexttry) and (type, nexttry)
// indexes already serve Lease's ORDER BY nexttry, fid.
func (Dialect) Schema() []string { return schema }

func (d Dialect) VersionQuery() string {
	if d.galera {
		// Info, the start-up log and the status page say where the
		// metadata lives: "10.11.6-MariaDB (Galera, 3 nodes)", the size
		// as the node sees it now.
		return "SELECT CONCAT(VERSION(), ' (Galera, ', COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE'), '?'), ' nodes)')"
	}
	return "SELECT VERSION()"
}

// Classify sorts driver errors for the shared layer. A connection that
// was never made, or that go-sql-driver found dead before writing to it
// (driver.ErrBadConn), carried no statement: ErrKindUnsent; one lost
// after, ErrKindConnLost.
func (Dialect) Classify(err error) sqlstore.ErrorKind {
	switch {
	case err == nil:
		return sqlstore.ErrOther
	case sqlstore.NotSent(err):
		return sqlstore.ErrKindUnsent
	case sessionGone(err):
		return sqlstore.ErrKindConnLost
	}
	switch mysqlErrno(err) {
	case erDupKey, erDupEntry, erDupEntryWithKey:
		return sqlstore.ErrKindDuplicate
	case erLockDeadlock, erLockWaitTimeout:
		return sqlstore.ErrKindRetry
	case erRecordFileFull, erDiskFull:
		return sqlstore.ErrKindNoSpace
	}
	return sqlstore.ErrOther
}

// connLost reports errors meaning the session is gone or its state unknown.
func connLost(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, gomysql.ErrInvalidConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// sessionGone reports errors meaning the session is gone or its state
// unknown: a broken connection as the driver reports it (connLost), or a
// server's last words before it closes one (killed, shutting down, idle too
// long).
func sessionGone(err error) bool {
	switch mysqlErrno(err) {
	case erServerShutdown, erConnectionKilled, erClientInactivity, crServerGone, crServerLost:
		return true
	}
	return connLost(err)
}

// mysqlErrno returns the server error number in err, or 0.
func mysqlErrno(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// Counter: LAST_INSERT_ID(expr) hands the new value back in the OK packet,
// as for the fencing bump.
func (Dialect) Counter() sqlstore.Counter {
	return sqlstore.Counter{Next: "UPDATE gomogile_counter SET value = LAST_INSERT_ID(value + 1) WHERE name = ?", NextByInsertID: true}
}

// InsertWithNextFid implements sqlstore.FidInserter with one transaction
// in one query (sqlstore.Config.Batch): the counter's UPDATE, which leaves
// the new value in the session's LAST_INSERT_ID(); the INSERT under it,
// which inserts nothing unless that UPDATE changed a row (a missing counter
// row would leave an older value there); the read of both; COMMIT. One
// commit, so one log flush, where two autocommit statements took two.
func (Dialect) InsertWithNextFid(table string, cols, values []string) (string, bool) {
	return "START TRANSACTION; UPDATE gomogile_counter SET value = LAST_INSERT_ID(value + 1) WHERE name = ?; INSERT INTO " + table +
		" (fid, " + strings.Join(cols, ", ") + ") SELECT LAST_INSERT_ID(), " + strings.Join(values, ", ") +
		" FROM DUAL WHERE ROW_COUNT() = 1; SELECT LAST_INSERT_ID(), ROW_COUNT(); COMMIT", true
}

// IfOneRow implements sqlstore.RowChainer: ROW_COUNT() is the previous
// statement's count of changed rows, kept for second in a session
// variable; the Batch pool's sessions run nothing but the shared layer's
// SQL, which sets the variable before every use.
func (Dialect) IfOneRow(first string, second func(cond string) string) string {
	return first + "; SET @gomogile_rows = ROW_COUNT(); " + second("@gomogile_rows = 1") +
		"; SELECT @gomogile_rows, ROW_COUNT()"
}

// Counted implements sqlstore.RowChainer.
func (Dialect) Counted(stmt string) string { return stmt + "; SELECT ROW_COUNT()" }

// ClaimLock: a locking read (what every MySQL and MariaDB version knows;
// SKIP LOCKED needs MySQL 8 or MariaDB 10.6) reads the newest version of a
// row it waited for and re-checks that it is still due.
func (Dialect) ClaimLock() string { return " FOR UPDATE" }
