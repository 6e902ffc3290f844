package postgres

import "strings"

// table is one CREATE TABLE of the schema.
type table struct {
	name     string
	unlogged bool
	columns  []string // "name TYPE …", one per column
	extra    []string // table constraints
	indexes  []string // CREATE INDEX statements
}

// tables is MogileFS schema 17 as its PostgreSQL store creates it, in
// dependency order, with these differences for new databases: fids and Unix
// times are BIGINT (MogileFS's INT runs out in 2038 and at 2^31 fids),
// device and host ids INT as MySQL's MEDIUMINT allows, and file.dkey uses the
// "C" collation so key listings in byte order can walk the unique index. A
// database that mogdbsetup created keeps its own column types: every
// statement is IF NOT EXISTS, and the index names are MogileFS's.
var tables = []table{
	{name: "domain", columns: []string{
		"dmid SMALLINT NOT NULL PRIMARY KEY",
		"namespace VARCHAR(255)",
	}, extra: []string{"UNIQUE (namespace)"}},
	{name: "class", columns: []string{
		"dmid SMALLINT NOT NULL",
		"classid SMALLINT NOT NULL",
		"classname VARCHAR(50)",
		"mindevcount SMALLINT NOT NULL",
		"hashtype SMALLINT",
		"replpolicy VARCHAR(255)",
	}, extra: []string{"PRIMARY KEY (dmid, classid)", "UNIQUE (dmid, classname)"}},
	{name: "file", columns: []string{
		"fid BIGINT NOT NULL PRIMARY KEY",
		"dmid SMALLINT NOT NULL",
		`dkey VARCHAR(255) COLLATE "C"`,
		"length BIGINT CHECK (length >= 0)",
		"classid SMALLINT NOT NULL",
		"devcount SMALLINT NOT NULL",
	}, extra: []string{"UNIQUE (dmid, dkey)"}, indexes: []string{
		"CREATE INDEX IF NOT EXISTS file_devcount ON file (dmid, classid, devcount)",
	}},
	{name: "tempfile", columns: []string{
		"fid BIGSERIAL NOT NULL PRIMARY KEY",
		"createtime BIGINT NOT NULL",
		"classid SMALLINT NOT NULL",
		"dmid SMALLINT NOT NULL",
		"dkey VARCHAR(255)",
		"devids VARCHAR(60)",
	}},
	{name: "file_to_delete", columns: []string{
		"fid BIGINT NOT NULL PRIMARY KEY",
	}},
	{name: "unreachable_fids", columns: []string{
		"fid BIGINT NOT NULL PRIMARY KEY",
		"lastupdate BIGINT NOT NULL",
	}, indexes: []string{
		"CREATE INDEX IF NOT EXISTS unreachable_fids_lastupdate ON unreachable_fids (lastupdate)",
	}},
	{name: "file_on", columns: []string{
		"fid BIGINT NOT NULL",
		"devid INT NOT NULL",
	}, extra: []string{"PRIMARY KEY (fid, devid)"}, indexes: []string{
		"CREATE INDEX IF NOT EXISTS file_on_devid ON file_on (devid)",
	}},
	{name: "file_on_corrupt", columns: []string{
		"fid BIGINT NOT NULL",
		"devid INT NOT NULL",
	}, extra: []string{"PRIMARY KEY (fid, devid)"}},
	{name: "host", columns: []string{
		"hostid INT NOT NULL PRIMARY KEY CHECK (hostid >= 0)",
		"status VARCHAR(8) CHECK (status IN ('alive', 'dead', 'down', 'readonly'))",
		"http_port INT DEFAULT 7500 CHECK (http_port >= 0 AND http_port < 65536)",
		"http_get_port INT CHECK (http_get_port >= 0 AND http_get_port < 65536)",
		"hostname VARCHAR(40)",
		"hostip VARCHAR(15)",
		"altip VARCHAR(15)",
		"altmask VARCHAR(18)",
	}, extra: []string{"UNIQUE (hostname)", "UNIQUE (hostip)", "UNIQUE (altip)"}},
	{name: "device", columns: []string{
		"devid INT NOT NULL PRIMARY KEY CHECK (devid >= 0)",
		"hostid INT NOT NULL",
		"status VARCHAR(8) CHECK (status IN ('alive', 'dead', 'down', 'readonly', 'drain'))",
		"weight INT DEFAULT 100",
		"mb_total BIGINT CHECK (mb_total >= 0)",
		"mb_used BIGINT CHECK (mb_used >= 0)",
		"mb_asof BIGINT CHECK (mb_asof >= 0)",
	}, indexes: []string{
		"CREATE INDEX IF NOT EXISTS device_status ON device (status)",
	}},
	{name: "server_settings", columns: []string{
		"field VARCHAR(50) PRIMARY KEY",
		"value TEXT",
	}},
	{name: "file_to_replicate", columns: []string{
		"fid BIGINT NOT NULL PRIMARY KEY",
		"nexttry BIGINT NOT NULL",
		"fromdevid INT",
		"failcount SMALLINT NOT NULL DEFAULT 0",
		"flags SMALLINT NOT NULL DEFAULT 0",
	}, indexes: []string{
		"CREATE INDEX IF NOT EXISTS file_to_replicate_nexttry ON file_to_replicate (nexttry)",
	}},
	{name: "file_to_delete_later", columns: []string{
		"fid BIGINT NOT NULL PRIMARY KEY",
		"delafter BIGINT NOT NULL",
	}, indexes: []string{
		"CREATE INDEX IF NOT EXISTS file_to_delete_later_delafter ON file_to_delete_later (delafter)",
	}},
	{name: "fsck_log", columns: []string{
		"logid BIGSERIAL NOT NULL PRIMARY KEY",
		"utime BIGINT NOT NULL",
		"fid BIGINT NULL",
		"evcode CHAR(4)",
		"devid INT",
	}, indexes: []string{
		"CREATE INDEX IF NOT EXISTS fsck_log_utime ON fsck_log (utime)",
	}},
	{name: "file_to_queue", columns: []string{
		"fid BIGINT NOT NULL",
		"devid INT",
		"type SMALLINT NOT NULL",
		"nexttry BIGINT NOT NULL",
		"failcount SMALLINT NOT NULL DEFAULT 0",
		"flags SMALLINT NOT NULL DEFAULT 0",
		"arg TEXT",
	}, extra: []string{"PRIMARY KEY (fid, type)"}, indexes: []string{
		"CREATE INDEX IF NOT EXISTS type_nexttry ON file_to_queue (type, nexttry)",
	}},
	{name: "file_to_delete2", columns: []string{
		"fid BIGINT NOT NULL PRIMARY KEY",
		"nexttry BIGINT NOT NULL",
		"failcount SMALLINT NOT NULL DEFAULT 0",
	}, indexes: []string{
		"CREATE INDEX IF NOT EXISTS file_to_delete2_nexttry ON file_to_delete2 (nexttry)",
	}},
	{name: "checksum", columns: []string{
		"fid BIGINT NOT NULL PRIMARY KEY",
		"hashtype SMALLINT NOT NULL",
		"checksum BYTEA NOT NULL",
	}},

	// Our lock tables; see the package doc (# Locks) and locks.go. UNLOGGED:
	// a server crash ends every session, hence every holder, so rows that
	// vanish with it (PostgreSQL truncates unlogged tables on crash
	// recovery) are exactly right, and writing them skips the WAL flush a
	// durable INSERT+DELETE pays per lock cycle.
}

// schema and tableColumns are derived from tables and lockTables once.
var (
	tableSchema, tableColumns = buildSchema(append(tables[:len(tables):len(tables)], lockTables...))
	schema                    = append(tableSchema[:len(tableSchema):len(tableSchema)], epochSchema)
	schema17, _               = buildSchema(tables)
	lockSchema, _             = buildSchema(lockTables)
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

func buildSchema(ts []table) ([]string, map[string][]string) {
	var stmts []string
	cols := map[string][]string{}
	for _, t := range ts {
		kind := "TABLE"
		if t.unlogged {
			kind = "UNLOGGED TABLE"
		}
		defs := append(append([]string(nil), t.columns...), t.extra...)
		stmts = append(stmts, "CREATE "+kind+" IF NOT EXISTS "+t.name+" (\n\t"+strings.Join(defs, ",\n\t")+"\n)")
		stmts = append(stmts, t.indexes...)
		for _, c := range t.columns {
			name, _, _ := strings.Cut(c, " ")
			cols[t.name] = append(cols[t.name], name)
		}
	}
	return stmts, cols
}
