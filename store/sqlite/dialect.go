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

var schema = sqlstore.DDL{
	// MogileFS's SQLite types are its MySQL ones, which SQLite reads by
	// affinity: the names are VARCHAR, because VARBINARY would give them
	// NUMERIC affinity and turn a key "10" into the number 10.
	Type: func(c sqlstore.Column) string {
		switch c.Kind {
		case sqlstore.KindSerialFid, sqlstore.KindSerialLog:
			return "INTEGER" // the rowid, as AUTOINCREMENT requires
		case sqlstore.KindStatus:
			return "TEXT"
		}
		return sqlstore.MogileFSType(c)
	},
	// MogileFS's SQLite schema has no devcount index on file.
	IndexName: func(table string, ix sqlstore.Index) string {
		switch {
		case table == "file" && ix.Name == "devcount":
			return ""
		case ix.Global != "":
			return ix.Global
		}
		return ix.Name
	},
	Serial: " AUTOINCREMENT",
}.Render(sqlstore.Schema17)

// Counter: UPDATE … RETURNING (SQLite 3.35) hands the new value back.
func (Dialect) Counter() sqlstore.Counter {
	return sqlstore.Counter{Next: "UPDATE gomogile_counter SET value = value + 1 WHERE name = ? RETURNING value"}
}

// ClaimLock: BEGIN IMMEDIATE already excludes every other writer.
func (Dialect) ClaimLock() string { return "" }
