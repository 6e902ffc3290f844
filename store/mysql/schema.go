package mysql

import (
	"fmt"

	"github.com/gomogile/gomogile/store/sqlstore"
)

// schema is MogileFS schema 17 (sqlstore.Schema17) in MySQL DDL, one
// idempotent statement per table. Tables and columns are MogileFS's, so
// mogdbsetup's databases and ours are interchangeable, with three
// deliberate differences that change no column a MogileFS tool reads:
//
//   - every fid is BIGINT UNSIGNED, as mogdbsetup makes it for installations
//     that outgrow INT;
//   - the names that must compare byte for byte (file.dkey, tempfile.dkey,
//     domain.namespace, class.classname, server_settings.field) are
//     VARBINARY of MogileFS's length, so "A" and "a", or "a" and "a ", are
//     different keys. utf8mb4_bin would not do: it is a PAD SPACE collation
//     and treats trailing spaces as absent;
//   - the statuses include every state schema 17 knows (readonly, drain).
//
// CREATE TABLE IF NOT EXISTS leaves an existing table alone, so a database
// made by mogdbsetup keeps its column types and collations.
var schema = sqlstore.DDL{Type: columnType, Options: "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4", Serial: " AUTO_INCREMENT"}.Render(sqlstore.Schema17)

// columnType is MogileFS's MySQL type of each kind of column, with the
// differences above.
func columnType(c sqlstore.Column) string {
	switch c.Kind {
	case sqlstore.KindFid, sqlstore.KindSerialFid:
		return "BIGINT UNSIGNED"
	case sqlstore.KindKey:
		return fmt.Sprintf("VARBINARY(%d)", c.Size)
	}
	return sqlstore.MogileFSType(c)
}

// Schema17 returns MogileFS schema 17 in MySQL DDL (the tables named by
// sqlstore.Schema17Tables), idempotent statements in dependency order; it
// is what Dialect.Schema returns, as MySQL's locks need no table.
func Schema17() []string { return append([]string(nil), schema...) }
