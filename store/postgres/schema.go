package postgres

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomogile/gomogile/store/sqlstore"
)

// ddl writes MogileFS schema 17 (sqlstore.Schema17) as its PostgreSQL
// store creates it, with these differences for new databases: fids and Unix
// times are BIGINT (MogileFS's INT runs out in 2038 and at 2^31 fids),
// device and host ids INT as MySQL's MEDIUMINT allows, the values that come
// from outside are checked where MySQL's unsigned types would refuse them,
// and file.dkey uses the "C" collation so key listings in byte order can
// walk the unique index. A database that mogdbsetup created keeps its own
// column types: every statement is IF NOT EXISTS, and the index names are
// MogileFS's (the table's name, an underscore and MySQL's name, where
// MogileFS gave no other).
var ddl = sqlstore.DDL{
	Type: func(c sqlstore.Column) string {
		switch c.Kind {
		case sqlstore.KindFid, sqlstore.KindTime, sqlstore.KindMB, sqlstore.KindLength:
			return "BIGINT"
		case sqlstore.KindSerialFid, sqlstore.KindSerialLog:
			return "BIGSERIAL"
		case sqlstore.KindDomain, sqlstore.KindTiny, sqlstore.KindFlags:
			return "SMALLINT"
		case sqlstore.KindID, sqlstore.KindDevRef, sqlstore.KindPort, sqlstore.KindWeight:
			return "INT"
		case sqlstore.KindKey, sqlstore.KindText:
			if c.Listed {
				return fmt.Sprintf(`VARCHAR(%d) COLLATE "C"`, c.Size)
			}
			return fmt.Sprintf("VARCHAR(%d)", c.Size)
		case sqlstore.KindStatus:
			return "VARCHAR(8)"
		case sqlstore.KindEvcode:
			return "CHAR(4)"
		case sqlstore.KindDigest:
			return "BYTEA"
		}
		return "TEXT"
	},
	Check: func(c sqlstore.Column) string {
		switch {
		case c.Kind == sqlstore.KindStatus:
			return "CHECK (" + c.Name + " IN ('" + strings.Join(c.Values, "', '") + "'))"
		case c.Kind == sqlstore.KindPort:
			return "CHECK (" + c.Name + " >= 0 AND " + c.Name + " < 65536)"
		case c.Checked:
			return "CHECK (" + c.Name + " >= 0)"
		}
		return ""
	},
	IndexName: func(table string, ix sqlstore.Index) string {
		if ix.Global != "" {
			return ix.Global
		}
		return table + "_" + ix.Name
	},
}

var (
	schema17 = ddl.Render(sqlstore.Schema17)
	schema   = append(append(slices.Clip(schema17), lockSchema...), epochSchema)
)

// Schema17 returns MogileFS schema 17 in PostgreSQL DDL (the tables named
// by sqlstore.Schema17Tables, with their indexes), idempotent statements in
// dependency order. A PostgreSQL-like backend returns it from its
// Dialect.Schema, followed by whatever its own locks need.
func Schema17() []string { return append([]string(nil), schema17...) }

// LockSchema returns the DDL of the lease-lock tables (LockTables) that
// this package's locks use: the owner and lock tables and the lock epoch.
func LockSchema() []string { return append(append([]string(nil), lockSchema...), epochSchema) }

// LockTables names the tables of LockSchema, for a harness that empties a
// database: emptied together they read as a crash of the server (no lock is
// granted for a lease), unless the epoch row is set back to -infinity.
var LockTables = []string{ownerTable, lockTable, epochTable}
