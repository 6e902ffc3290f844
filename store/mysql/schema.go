package mysql

// schema is MogileFS schema 17 in MySQL DDL, one idempotent statement per
// table. Tables and columns are MogileFS's, so mogdbsetup's databases and
// ours are interchangeable, with three deliberate differences that change
// no column a MogileFS tool reads:
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
var schema = []string{
	`CREATE TABLE IF NOT EXISTS domain (
	dmid      SMALLINT UNSIGNED NOT NULL PRIMARY KEY,
	namespace VARBINARY(255),
	UNIQUE (namespace)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS class (
	dmid        SMALLINT UNSIGNED NOT NULL,
	classid     TINYINT UNSIGNED NOT NULL,
	PRIMARY KEY (dmid, classid),
	classname   VARBINARY(50),
	UNIQUE      (dmid, classname),
	mindevcount TINYINT UNSIGNED NOT NULL,
	replpolicy  VARCHAR(255),
	hashtype    TINYINT UNSIGNED
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS file (
	fid      BIGINT UNSIGNED NOT NULL,
	PRIMARY KEY (fid),
	dmid     SMALLINT UNSIGNED NOT NULL,
	dkey     VARBINARY(255),
	UNIQUE dkey (dmid, dkey),
	length   BIGINT UNSIGNED,
	classid  TINYINT UNSIGNED NOT NULL,
	devcount TINYINT UNSIGNED NOT NULL,
	INDEX devcount (dmid, classid, devcount)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS tempfile (
	fid        BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
	PRIMARY KEY (fid),
	createtime INT UNSIGNED NOT NULL,
	classid    TINYINT UNSIGNED NOT NULL,
	dmid       SMALLINT UNSIGNED NOT NULL,
	dkey       VARBINARY(255),
	devids     VARCHAR(60)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS file_to_delete (
	fid BIGINT UNSIGNED NOT NULL,
	PRIMARY KEY (fid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS unreachable_fids (
	fid        BIGINT UNSIGNED NOT NULL,
	lastupdate INT UNSIGNED NOT NULL,
	PRIMARY KEY (fid),
	INDEX (lastupdate)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS file_on (
	fid   BIGINT UNSIGNED NOT NULL,
	devid MEDIUMINT UNSIGNED NOT NULL,
	PRIMARY KEY (fid, devid),
	INDEX (devid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS file_on_corrupt (
	fid   BIGINT UNSIGNED NOT NULL,
	devid MEDIUMINT UNSIGNED NOT NULL,
	PRIMARY KEY (fid, devid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS host (
	hostid        MEDIUMINT UNSIGNED NOT NULL PRIMARY KEY,
	status        ENUM('alive', 'dead', 'down', 'readonly'),
	http_port     MEDIUMINT UNSIGNED DEFAULT 7500,
	http_get_port MEDIUMINT UNSIGNED,
	hostname      VARCHAR(40),
	hostip        VARCHAR(15),
	altip         VARCHAR(15),
	altmask       VARCHAR(18),
	UNIQUE (hostname),
	UNIQUE (hostip),
	UNIQUE (altip)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS device (
	devid    MEDIUMINT UNSIGNED NOT NULL,
	hostid   MEDIUMINT UNSIGNED NOT NULL,
	status   ENUM('alive', 'dead', 'down', 'readonly', 'drain'),
	weight   MEDIUMINT DEFAULT 100,
	mb_total INT UNSIGNED,
	mb_used  INT UNSIGNED,
	mb_asof  INT UNSIGNED,
	PRIMARY KEY (devid),
	INDEX (status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS server_settings (
	field VARBINARY(50) PRIMARY KEY,
	value TEXT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS file_to_replicate (
	fid       BIGINT UNSIGNED NOT NULL PRIMARY KEY,
	nexttry   INT UNSIGNED NOT NULL,
	INDEX (nexttry),
	fromdevid INT UNSIGNED,
	failcount TINYINT UNSIGNED NOT NULL DEFAULT 0,
	flags     SMALLINT UNSIGNED NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS file_to_delete_later (
	fid      BIGINT UNSIGNED NOT NULL PRIMARY KEY,
	delafter INT UNSIGNED NOT NULL,
	INDEX (delafter)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS fsck_log (
	logid  INT UNSIGNED NOT NULL AUTO_INCREMENT,
	PRIMARY KEY (logid),
	utime  INT UNSIGNED NOT NULL,
	fid    BIGINT UNSIGNED NULL,
	evcode CHAR(4),
	devid  MEDIUMINT UNSIGNED,
	INDEX (utime)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS file_to_queue (
	fid       BIGINT UNSIGNED NOT NULL,
	devid     INT UNSIGNED,
	type      TINYINT UNSIGNED NOT NULL,
	nexttry   INT UNSIGNED NOT NULL,
	failcount TINYINT UNSIGNED NOT NULL DEFAULT 0,
	flags     SMALLINT UNSIGNED NOT NULL DEFAULT 0,
	arg       TEXT,
	PRIMARY KEY (fid, type),
	INDEX type_nexttry (type, nexttry)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS file_to_delete2 (
	fid       BIGINT UNSIGNED NOT NULL PRIMARY KEY,
	nexttry   INT UNSIGNED NOT NULL,
	failcount TINYINT UNSIGNED NOT NULL DEFAULT 0,
	INDEX nexttry (nexttry)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

	`CREATE TABLE IF NOT EXISTS checksum (
	fid      BIGINT UNSIGNED NOT NULL PRIMARY KEY,
	hashtype TINYINT UNSIGNED NOT NULL,
	checksum VARBINARY(64) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
}

// Schema17 returns MogileFS schema 17 in MySQL DDL (the tables named by
// sqlstore.Schema17Tables), idempotent statements in dependency order; it
// is what Dialect.Schema returns, as MySQL's locks need no table.
func Schema17() []string { return append([]string(nil), schema...) }
