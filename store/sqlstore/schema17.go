package sqlstore

import (
	"fmt"
	"strings"
)

// MogileFS schema 17, described once.
//
// MogileFS wrote its schema three times, once per database family, and the
// three differ where the databases do (types, serial columns, where index
// names live) and in a few choices of its own. Schema17 is the one
// description of the tables: each column by what it holds (a Kind), each
// key and index by its columns. A backend renders it with a [DDL] that says
// only what differs in its database: the type of each Kind, the names of
// indexes, where they are declared. CREATE … IF NOT EXISTS throughout, so a
// database that MogileFS's mogdbsetup made keeps its own column types.

// Kind is what a column of schema 17 holds, which decides its type in each
// database: the MySQL type of each is MogileFS's.
type Kind int

const (
	KindFid       Kind = iota + 1 // a file id (BIGINT UNSIGNED)
	KindSerialFid                 // tempfile's fid, handed out by the database
	KindSerialLog                 // fsck_log's logid, handed out by the database (INT UNSIGNED)
	KindDomain                    // a domain id (SMALLINT UNSIGNED)
	KindTiny                      // a class id, count, hash type, queue type (TINYINT UNSIGNED)
	KindFlags                     // a queue row's flags (SMALLINT UNSIGNED)
	KindID                        // a host or device id (MEDIUMINT UNSIGNED)
	KindDevRef                    // a device id in a queue row (INT UNSIGNED)
	KindPort                      // a TCP port (MEDIUMINT UNSIGNED)
	KindWeight                    // a device's weight (MEDIUMINT)
	KindTime                      // Unix seconds (INT UNSIGNED)
	KindMB                        // a size in MB (INT UNSIGNED)
	KindLength                    // a file's length in bytes (BIGINT UNSIGNED)
	KindKey                       // a name compared byte for byte, Size bytes (VARBINARY)
	KindText                      // text of up to Size characters (VARCHAR)
	KindLongText                  // text without a limit (TEXT)
	KindStatus                    // one of Values (ENUM)
	KindEvcode                    // an fsck event code (CHAR(4))
	KindDigest                    // a checksum's bytes (VARBINARY(64))
)

// Column is one column of a [Table].
type Column struct {
	Name    string
	Kind    Kind
	Size    int      // KindKey and KindText: the length
	Values  []string // KindStatus: the states
	NotNull bool
	Default string // an SQL literal; "" for none
	// Checked columns hold values from outside (a client's length, an
	// operator's ids, a monitor's sizes): a database whose type cannot
	// refuse a negative or too large value (PostgreSQL has no unsigned
	// types) checks them.
	Checked bool
	// Listed is file.dkey, listed in byte order: a database whose ordering
	// follows a locale declares the column with a bytewise collation, so
	// that Dialect.ByteOrder still walks the (dmid, dkey) index.
	Listed bool
}

// Index is a key or index of a [Table].
type Index struct {
	// Name is MogileFS's name for it, which MySQL keeps per table; "" for
	// a UNIQUE constraint MogileFS left unnamed.
	Name string
	// Global is the name MogileFS gave it where index names are one
	// namespace per database (SQLite, PostgreSQL) and Name would collide;
	// "" when the DDL's own rule applies.
	Global  string
	Columns []string
}

// Table is one table of schema 17.
type Table struct {
	Name    string
	Columns []Column
	Key     []string // the primary key
	Unique  []Index  // UNIQUE constraints
	Indexes []Index  // plain indexes
}

// DDL is how a database writes the tables of [Schema17]: what differs.
type DDL struct {
	// Type is a column's type.
	Type func(Column) string
	// Check is the CHECK constraint of a column, "" for none; nil for a
	// database that checks nothing beyond the type.
	Check func(Column) string
	// IndexName is the name of an index of table, "" to leave it out; nil
	// for MySQL's rule: indexes are declared inside CREATE TABLE under
	// their Name.
	IndexName func(table string, ix Index) string
	// Serial follows PRIMARY KEY on a serial column ("AUTO_INCREMENT").
	Serial string
	// Options follow a CREATE TABLE's closing parenthesis ("ENGINE=InnoDB").
	Options string
}

// Render writes tables as idempotent DDL statements in their order, each
// table's indexes after it.
func (d DDL) Render(tables []Table) []string {
	var stmts []string
	for _, t := range tables {
		var defs, after []string
		for _, c := range t.Columns {
			def := c.Name + " " + d.Type(c)
			if c.NotNull {
				def += " NOT NULL"
			}
			if c.Default != "" {
				def += " DEFAULT " + c.Default
			}
			if len(t.Key) == 1 && t.Key[0] == c.Name {
				def += " PRIMARY KEY"
				if c.Kind == KindSerialFid || c.Kind == KindSerialLog {
					def += d.Serial
				}
			}
			if d.Check != nil {
				if ck := d.Check(c); ck != "" {
					def += " " + ck
				}
			}
			defs = append(defs, def)
		}
		if len(t.Key) > 1 {
			defs = append(defs, "PRIMARY KEY ("+strings.Join(t.Key, ", ")+")")
		}
		for _, u := range t.Unique {
			name := ""
			if d.IndexName == nil && u.Name != "" {
				name = u.Name + " "
			}
			defs = append(defs, "UNIQUE "+name+"("+strings.Join(u.Columns, ", ")+")")
		}
		for _, ix := range t.Indexes {
			cols := "(" + strings.Join(ix.Columns, ", ") + ")"
			if d.IndexName == nil {
				defs = append(defs, "INDEX "+ix.Name+" "+cols)
			} else if name := d.IndexName(t.Name, ix); name != "" {
				after = append(after, "CREATE INDEX IF NOT EXISTS "+name+" ON "+t.Name+" "+cols)
			}
		}
		create := "CREATE TABLE IF NOT EXISTS " + t.Name + " (\n\t" + strings.Join(defs, ",\n\t") + "\n)"
		if d.Options != "" {
			create += " " + d.Options
		}
		stmts = append(append(stmts, create), after...)
	}
	return stmts
}

// Schema17 is MogileFS schema 17, in dependency order.
var Schema17 = []Table{
	{Name: "domain", Key: []string{"dmid"}, Columns: []Column{
		{Name: "dmid", Kind: KindDomain, NotNull: true},
		{Name: "namespace", Kind: KindKey, Size: 255},
	}, Unique: []Index{{Columns: []string{"namespace"}}}},
	{Name: "class", Key: []string{"dmid", "classid"}, Columns: []Column{
		{Name: "dmid", Kind: KindDomain, NotNull: true},
		{Name: "classid", Kind: KindTiny, NotNull: true},
		{Name: "classname", Kind: KindKey, Size: 50},
		{Name: "mindevcount", Kind: KindTiny, NotNull: true},
		{Name: "replpolicy", Kind: KindText, Size: 255},
		{Name: "hashtype", Kind: KindTiny},
	}, Unique: []Index{{Columns: []string{"dmid", "classname"}}}},
	{Name: "file", Key: []string{"fid"}, Columns: []Column{
		{Name: "fid", Kind: KindFid, NotNull: true},
		{Name: "dmid", Kind: KindDomain, NotNull: true},
		{Name: "dkey", Kind: KindKey, Size: 255, Listed: true},
		{Name: "length", Kind: KindLength, Checked: true},
		{Name: "classid", Kind: KindTiny, NotNull: true},
		{Name: "devcount", Kind: KindTiny, NotNull: true},
	}, Unique: []Index{{Name: "dkey", Columns: []string{"dmid", "dkey"}}},
		Indexes: []Index{{Name: "devcount", Columns: []string{"dmid", "classid", "devcount"}}}},
	{Name: "tempfile", Key: []string{"fid"}, Columns: []Column{
		{Name: "fid", Kind: KindSerialFid},
		{Name: "createtime", Kind: KindTime, NotNull: true},
		{Name: "classid", Kind: KindTiny, NotNull: true},
		{Name: "dmid", Kind: KindDomain, NotNull: true},
		{Name: "dkey", Kind: KindKey, Size: 255},
		{Name: "devids", Kind: KindText, Size: 60},
	}},
	{Name: "file_to_delete", Key: []string{"fid"}, Columns: []Column{
		{Name: "fid", Kind: KindFid, NotNull: true},
	}},
	{Name: "unreachable_fids", Key: []string{"fid"}, Columns: []Column{
		{Name: "fid", Kind: KindFid, NotNull: true},
		{Name: "lastupdate", Kind: KindTime, NotNull: true},
	}, Indexes: []Index{{Name: "lastupdate", Columns: []string{"lastupdate"}}}},
	{Name: "file_on", Key: []string{"fid", "devid"}, Columns: []Column{
		{Name: "fid", Kind: KindFid, NotNull: true},
		{Name: "devid", Kind: KindID, NotNull: true},
	}, Indexes: []Index{{Name: "devid", Columns: []string{"devid"}}}},
	{Name: "file_on_corrupt", Key: []string{"fid", "devid"}, Columns: []Column{
		{Name: "fid", Kind: KindFid, NotNull: true},
		{Name: "devid", Kind: KindID, NotNull: true},
	}},
	{Name: "host", Key: []string{"hostid"}, Columns: []Column{
		{Name: "hostid", Kind: KindID, NotNull: true, Checked: true},
		{Name: "status", Kind: KindStatus, Values: []string{"alive", "dead", "down", "readonly"}},
		{Name: "http_port", Kind: KindPort, Default: "7500", Checked: true},
		{Name: "http_get_port", Kind: KindPort, Checked: true},
		{Name: "hostname", Kind: KindText, Size: 40},
		{Name: "hostip", Kind: KindText, Size: 15},
		{Name: "altip", Kind: KindText, Size: 15},
		{Name: "altmask", Kind: KindText, Size: 18},
	}, Unique: []Index{{Columns: []string{"hostname"}}, {Columns: []string{"hostip"}}, {Columns: []string{"altip"}}}},
	{Name: "device", Key: []string{"devid"}, Columns: []Column{
		{Name: "devid", Kind: KindID, NotNull: true, Checked: true},
		{Name: "hostid", Kind: KindID, NotNull: true},
		{Name: "status", Kind: KindStatus, Values: []string{"alive", "dead", "down", "readonly", "drain"}},
		{Name: "weight", Kind: KindWeight, Default: "100"},
		{Name: "mb_total", Kind: KindMB, Checked: true},
		{Name: "mb_used", Kind: KindMB, Checked: true},
		{Name: "mb_asof", Kind: KindMB, Checked: true},
	}, Indexes: []Index{{Name: "status", Columns: []string{"status"}}}},
	{Name: "server_settings", Key: []string{"field"}, Columns: []Column{
		{Name: "field", Kind: KindKey, Size: 50},
		{Name: "value", Kind: KindLongText},
	}},
	{Name: "file_to_replicate", Key: []string{"fid"}, Columns: []Column{
		{Name: "fid", Kind: KindFid, NotNull: true},
		{Name: "nexttry", Kind: KindTime, NotNull: true},
		{Name: "fromdevid", Kind: KindDevRef},
		{Name: "failcount", Kind: KindTiny, NotNull: true, Default: "0"},
		{Name: "flags", Kind: KindFlags, NotNull: true, Default: "0"},
	}, Indexes: []Index{{Name: "nexttry", Columns: []string{"nexttry"}}}},
	{Name: "file_to_delete_later", Key: []string{"fid"}, Columns: []Column{
		{Name: "fid", Kind: KindFid, NotNull: true},
		{Name: "delafter", Kind: KindTime, NotNull: true},
	}, Indexes: []Index{{Name: "delafter", Columns: []string{"delafter"}}}},
	{Name: "fsck_log", Key: []string{"logid"}, Columns: []Column{
		{Name: "logid", Kind: KindSerialLog},
		{Name: "utime", Kind: KindTime, NotNull: true},
		{Name: "fid", Kind: KindFid},
		{Name: "evcode", Kind: KindEvcode},
		{Name: "devid", Kind: KindID},
	}, Indexes: []Index{{Name: "utime", Columns: []string{"utime"}}}},
	{Name: "file_to_queue", Key: []string{"fid", "type"}, Columns: []Column{
		{Name: "fid", Kind: KindFid, NotNull: true},
		{Name: "devid", Kind: KindDevRef},
		{Name: "type", Kind: KindTiny, NotNull: true},
		{Name: "nexttry", Kind: KindTime, NotNull: true},
		{Name: "failcount", Kind: KindTiny, NotNull: true, Default: "0"},
		{Name: "flags", Kind: KindFlags, NotNull: true, Default: "0"},
		{Name: "arg", Kind: KindLongText},
	}, Indexes: []Index{{Name: "type_nexttry", Global: "type_nexttry", Columns: []string{"type", "nexttry"}}}},
	{Name: "file_to_delete2", Key: []string{"fid"}, Columns: []Column{
		{Name: "fid", Kind: KindFid, NotNull: true},
		{Name: "nexttry", Kind: KindTime, NotNull: true},
		{Name: "failcount", Kind: KindTiny, NotNull: true, Default: "0"},
	}, Indexes: []Index{{Name: "nexttry", Global: "file_to_delete2_nexttry", Columns: []string{"nexttry"}}}},
	{Name: "checksum", Key: []string{"fid"}, Columns: []Column{
		{Name: "fid", Kind: KindFid, NotNull: true},
		{Name: "hashtype", Kind: KindTiny, NotNull: true},
		{Name: "checksum", Kind: KindDigest, NotNull: true},
	}},
}

// MogileFSType is the type MogileFS's own MySQL schema gives a column of
// c's kind, which its SQLite schema names too (SQLite reads it by
// affinity): a backend of either family starts from it and changes what
// it must.
func MogileFSType(c Column) string {
	switch c.Kind {
	case KindLength:
		return "BIGINT UNSIGNED"
	case KindFid, KindSerialFid, KindSerialLog, KindDevRef, KindTime, KindMB:
		return "INT UNSIGNED"
	case KindDomain, KindFlags:
		return "SMALLINT UNSIGNED"
	case KindTiny:
		return "TINYINT UNSIGNED"
	case KindID, KindPort:
		return "MEDIUMINT UNSIGNED"
	case KindWeight:
		return "MEDIUMINT"
	case KindKey, KindText:
		return fmt.Sprintf("VARCHAR(%d)", c.Size)
	case KindStatus:
		return "ENUM('" + strings.Join(c.Values, "', '") + "')"
	case KindEvcode:
		return "CHAR(4)"
	case KindDigest:
		return "VARBINARY(64)"
	}
	return "TEXT"
}
