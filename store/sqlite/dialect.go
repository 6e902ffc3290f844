package sqlite

import (
	"errors"
	"slices"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gomogile/gomogile/store/sqlstore"
)

// Dialect is SQLite's SQL for the shared layer. A backend of another module
// built on SQLite (NewConfig) sets BackendName to its own scheme.
type Dialect struct {
	// BackendName is what Name reports (Info.Driver); "" means "sqlite".
	BackendName string
}

var _ sqlstore.Dialect = Dialect{}

// Name is BackendName, or "sqlite".
func (d Dialect) Name() string {
	if d.BackendName != "" {
		return d.BackendName
	}
	return "sqlite"
}

func (Dialect) Rebind(query string) string { return query }
func (Dialect) UnixNow() string            { return "CAST(strftime('%s','now') AS INTEGER)" }

// ByteOrder: SQLite's BINARY collation is memcmp, which is what we want;
// naming it protects against a column declared with another collation.
func (Dialect) ByteOrder(col string) string { return col + " COLLATE BINARY" }

func (Dialect) Upsert(table string, cols, key []string, update string) string {
	var b strings.Builder
	b.WriteString(sqlstore.Insert(table, cols) + " ON CONFLICT (" + strings.Join(key, ", ") + ") DO ")
	if update == "" {
		b.WriteString("NOTHING")
	} else {
		b.WriteString("UPDATE SET " + update)
	}
	return b.String()
}

func (Dialect) Excluded(col string) string { return "excluded." + col }

// Least: SQLite's scalar min() with two arguments.
func (Dialect) Least(a, b string) string { return "min(" + a + ", " + b + ")" }

func (Dialect) VersionQuery() string { return "SELECT sqlite_version()" }

func (Dialect) Classify(err error) sqlstore.ErrorKind {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return sqlstore.ErrOther
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return sqlstore.ErrKindDuplicate
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return sqlstore.ErrKindRetry
	case sqlite3.SQLITE_FULL: // disk full (ENOSPC, a short write) or max_page_count reached
		return sqlstore.ErrKindNoSpace
	}
	return sqlstore.ErrOther
}

// Schema is MogileFS schema 17 as its SQLite store creates it (types,
// table and index names), with every upgrade column already present, so
// a database made by mogdbsetup --type=SQLite is left as it is; then
// sqlstore.DueIndexes.
func (Dialect) Schema() []string { return append(slices.Clip(schema), sqlstore.DueIndexes...) }

var schema = []string{
	`CREATE TABLE IF NOT EXISTS domain (
	dmid      SMALLINT UNSIGNED NOT NULL PRIMARY KEY,
	namespace VARCHAR(255),
	UNIQUE (namespace)
)`,
	`CREATE TABLE IF NOT EXISTS class (
	dmid        SMALLINT UNSIGNED NOT NULL,
	classid     TINYINT UNSIGNED NOT NULL,
	classname   VARCHAR(50),
	mindevcount TINYINT UNSIGNED NOT NULL,
	replpolicy  VARCHAR(255),
	hashtype    TINYINT UNSIGNED,
	UNIQUE (dmid, classid),
	UNIQUE (dmid, classname)
)`,
	`CREATE TABLE IF NOT EXISTS file (
	fid      INT UNSIGNED NOT NULL PRIMARY KEY,
	dmid     SMALLINT UNSIGNED NOT NULL,
	dkey     VARCHAR(255),
	length   BIGINT UNSIGNED,
	classid  TINYINT UNSIGNED NOT NULL,
	devcount TINYINT UNSIGNED NOT NULL,
	UNIQUE (dmid, dkey)
)`,
	`CREATE TABLE IF NOT EXISTS tempfile (
	fid        INTEGER PRIMARY KEY AUTOINCREMENT,
	createtime INT UNSIGNED NOT NULL,
	classid    TINYINT UNSIGNED NOT NULL,
	dmid       SMALLINT UNSIGNED NOT NULL,
	dkey       VARCHAR(255),
	devids     VARCHAR(60)
)`,
	`CREATE TABLE IF NOT EXISTS file_to_delete (
	fid INT UNSIGNED NOT NULL,
	PRIMARY KEY (fid)
)`,
	`CREATE TABLE IF NOT EXISTS unreachable_fids (
	fid        INT UNSIGNED NOT NULL,
	lastupdate INT UNSIGNED NOT NULL,
	PRIMARY KEY (fid)
)`,
	`CREATE INDEX IF NOT EXISTS lastupdate ON unreachable_fids (lastupdate)`,
	`CREATE TABLE IF NOT EXISTS file_on (
	fid   INT UNSIGNED NOT NULL,
	devid MEDIUMINT UNSIGNED NOT NULL,
	PRIMARY KEY (fid, devid)
)`,
	`CREATE INDEX IF NOT EXISTS devid ON file_on (devid)`,
	`CREATE TABLE IF NOT EXISTS file_on_corrupt (
	fid   INT UNSIGNED NOT NULL,
	devid MEDIUMINT UNSIGNED NOT NULL,
	PRIMARY KEY (fid, devid)
)`,
	`CREATE TABLE IF NOT EXISTS host (
	hostid        MEDIUMINT UNSIGNED NOT NULL PRIMARY KEY,
	status        TEXT,
	http_port     MEDIUMINT UNSIGNED DEFAULT 7500,
	http_get_port MEDIUMINT UNSIGNED,
	hostname      VARCHAR(40),
	hostip        VARCHAR(15),
	altip         VARCHAR(15),
	altmask       VARCHAR(18),
	UNIQUE (hostname),
	UNIQUE (hostip),
	UNIQUE (altip)
)`,
	`CREATE TABLE IF NOT EXISTS device (
	devid    MEDIUMINT UNSIGNED NOT NULL,
	hostid   MEDIUMINT UNSIGNED NOT NULL,
	status   TEXT,
	weight   MEDIUMINT DEFAULT 100,
	mb_total INT UNSIGNED,
	mb_used  INT UNSIGNED,
	mb_asof  INT UNSIGNED,
	PRIMARY KEY (devid)
)`,
	`CREATE INDEX IF NOT EXISTS status ON device (status)`,
	`CREATE TABLE IF NOT EXISTS server_settings (
	field VARCHAR(50) PRIMARY KEY,
	value TEXT
)`,
	`CREATE TABLE IF NOT EXISTS file_to_replicate (
	fid       INT UNSIGNED NOT NULL PRIMARY KEY,
	nexttry   INT UNSIGNED NOT NULL,
	fromdevid INT UNSIGNED,
	failcount TINYINT UNSIGNED NOT NULL DEFAULT 0,
	flags     SMALLINT UNSIGNED NOT NULL DEFAULT 0
)`,
	`CREATE INDEX IF NOT EXISTS nexttry ON file_to_replicate (nexttry)`,
	`CREATE TABLE IF NOT EXISTS file_to_delete_later (
	fid      INT UNSIGNED NOT NULL PRIMARY KEY,
	delafter INT UNSIGNED NOT NULL
)`,
	`CREATE INDEX IF NOT EXISTS delafter ON file_to_delete_later (delafter)`,
	`CREATE TABLE IF NOT EXISTS fsck_log (
	logid  INTEGER PRIMARY KEY AUTOINCREMENT,
	utime  INT UNSIGNED NOT NULL,
	fid    INT UNSIGNED NULL,
	evcode CHAR(4),
	devid  MEDIUMINT UNSIGNED
)`,
	`CREATE INDEX IF NOT EXISTS utime ON fsck_log (utime)`,
	`CREATE TABLE IF NOT EXISTS file_to_queue (
	fid       INT UNSIGNED NOT NULL,
	devid     INT UNSIGNED,
	type      TINYINT UNSIGNED NOT NULL,
	nexttry   INT UNSIGNED NOT NULL,
	failcount TINYINT UNSIGNED NOT NULL DEFAULT 0,
	flags     SMALLINT UNSIGNED NOT NULL DEFAULT 0,
	arg       TEXT,
	PRIMARY KEY (fid, type)
)`,
	`CREATE INDEX IF NOT EXISTS type_nexttry ON file_to_queue (type, nexttry)`,
	`CREATE TABLE IF NOT EXISTS file_to_delete2 (
	fid       INT UNSIGNED NOT NULL PRIMARY KEY,
	nexttry   INT UNSIGNED NOT NULL,
	failcount TINYINT UNSIGNED NOT NULL DEFAULT 0
)`,
	`CREATE INDEX IF NOT EXISTS file_to_delete2_nexttry ON file_to_delete2 (nexttry)`,
	`CREATE TABLE IF NOT EXISTS checksum (
	fid      INT UNSIGNED NOT NULL PRIMARY KEY,
	hashtype TINYINT UNSIGNED NOT NULL,
	checksum VARBINARY(64) NOT NULL
)`,
}

// Fencing: names are BLOBs, compared byte for byte, and SQLite
// has had RETURNING since 3.35; BEGIN IMMEDIATE already excludes every other
// writer, so the fence check needs no row lock.
func (Dialect) Fencing() sqlstore.Fencing {
	return sqlstore.Fencing{
		Schema: `CREATE TABLE IF NOT EXISTS gomogile_fence (
	name  BLOB NOT NULL PRIMARY KEY,
	token BIGINT NOT NULL
)`,
		Bump: `INSERT INTO gomogile_fence (name, token) VALUES (?, 1)
	ON CONFLICT (name) DO UPDATE SET token = token + 1 RETURNING token`,
		ServiceSchema: `CREATE TABLE IF NOT EXISTS gomogile_lock_fence (
	name  BLOB NOT NULL PRIMARY KEY,
	token BIGINT NOT NULL
)`,
		Raise: `INSERT INTO gomogile_lock_fence (name, token) VALUES (?, ?)
	ON CONFLICT (name) DO UPDATE SET token = MAX(token, excluded.token)`,
	}
}

// Counter: UPDATE … RETURNING (SQLite 3.35) hands the new value back.
func (Dialect) Counter() sqlstore.Counter {
	return sqlstore.Counter{Next: "UPDATE gomogile_counter SET value = value + 1 WHERE name = ? RETURNING value"}
}

// ClaimLock: BEGIN IMMEDIATE already excludes every other writer.
func (Dialect) ClaimLock() string { return "" }
