CREATE TABLE IF NOT EXISTS domain (
	dmid      SMALLINT UNSIGNED NOT NULL PRIMARY KEY,
	namespace VARCHAR(255),
	UNIQUE (namespace)
);

CREATE TABLE IF NOT EXISTS class (
	dmid        SMALLINT UNSIGNED NOT NULL,
	classid     TINYINT UNSIGNED NOT NULL,
	classname   VARCHAR(50),
	mindevcount TINYINT UNSIGNED NOT NULL,
	replpolicy  VARCHAR(255),
	hashtype    TINYINT UNSIGNED,
	UNIQUE (dmid, classid),
	UNIQUE (dmid, classname)
);

CREATE TABLE IF NOT EXISTS file (
	fid      INT UNSIGNED NOT NULL PRIMARY KEY,
	dmid     SMALLINT UNSIGNED NOT NULL,
	dkey     VARCHAR(255),
	length   BIGINT UNSIGNED,
	classid  TINYINT UNSIGNED NOT NULL,
	devcount TINYINT UNSIGNED NOT NULL,
	UNIQUE (dmid, dkey)
);

CREATE TABLE IF NOT EXISTS tempfile (
	fid        INTEGER PRIMARY KEY AUTOINCREMENT,
	createtime INT UNSIGNED NOT NULL,
	classid    TINYINT UNSIGNED NOT NULL,
	dmid       SMALLINT UNSIGNED NOT NULL,
	dkey       VARCHAR(255),
	devids     VARCHAR(60)
);

CREATE TABLE IF NOT EXISTS file_to_delete (
	fid INT UNSIGNED NOT NULL,
	PRIMARY KEY (fid)
);

CREATE TABLE IF NOT EXISTS unreachable_fids (
	fid        INT UNSIGNED NOT NULL,
	lastupdate INT UNSIGNED NOT NULL,
	PRIMARY KEY (fid)
);

CREATE INDEX IF NOT EXISTS lastupdate ON unreachable_fids (lastupdate);

CREATE TABLE IF NOT EXISTS file_on (
	fid   INT UNSIGNED NOT NULL,
	devid MEDIUMINT UNSIGNED NOT NULL,
	PRIMARY KEY (fid, devid)
);

CREATE INDEX IF NOT EXISTS devid ON file_on (devid);

CREATE TABLE IF NOT EXISTS file_on_corrupt (
	fid   INT UNSIGNED NOT NULL,
	devid MEDIUMINT UNSIGNED NOT NULL,
	PRIMARY KEY (fid, devid)
);

CREATE TABLE IF NOT EXISTS host (
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
);

CREATE TABLE IF NOT EXISTS device (
	devid    MEDIUMINT UNSIGNED NOT NULL,
	hostid   MEDIUMINT UNSIGNED NOT NULL,
	status   TEXT,
	weight   MEDIUMINT DEFAULT 100,
	mb_total INT UNSIGNED,
	mb_used  INT UNSIGNED,
	mb_asof  INT UNSIGNED,
	PRIMARY KEY (devid)
);

CREATE INDEX IF NOT EXISTS status ON device (status);

CREATE TABLE IF NOT EXISTS server_settings (
	field VARCHAR(50) PRIMARY KEY,
	value TEXT
);

CREATE TABLE IF NOT EXISTS file_to_replicate (
	fid       INT UNSIGNED NOT NULL PRIMARY KEY,
	nexttry   INT UNSIGNED NOT NULL,
	fromdevid INT UNSIGNED,
	failcount TINYINT UNSIGNED NOT NULL DEFAULT 0,
	flags     SMALLINT UNSIGNED NOT NULL DEFAULT 0
);

CREATE INDEX IF NOT EXISTS nexttry ON file_to_replicate (nexttry);

CREATE TABLE IF NOT EXISTS file_to_delete_later (
	fid      INT UNSIGNED NOT NULL PRIMARY KEY,
	delafter INT UNSIGNED NOT NULL
);

CREATE INDEX IF NOT EXISTS delafter ON file_to_delete_later (delafter);

CREATE TABLE IF NOT EXISTS fsck_log (
	logid  INTEGER PRIMARY KEY AUTOINCREMENT,
	utime  INT UNSIGNED NOT NULL,
	fid    INT UNSIGNED NULL,
	evcode CHAR(4),
	devid  MEDIUMINT UNSIGNED
);

CREATE INDEX IF NOT EXISTS utime ON fsck_log (utime);

CREATE TABLE IF NOT EXISTS file_to_queue (
	fid       INT UNSIGNED NOT NULL,
	devid     INT UNSIGNED,
	type      TINYINT UNSIGNED NOT NULL,
	nexttry   INT UNSIGNED NOT NULL,
	failcount TINYINT UNSIGNED NOT NULL DEFAULT 0,
	flags     SMALLINT UNSIGNED NOT NULL DEFAULT 0,
	arg       TEXT,
	PRIMARY KEY (fid, type)
);

CREATE INDEX IF NOT EXISTS type_nexttry ON file_to_queue (type, nexttry);

CREATE TABLE IF NOT EXISTS file_to_delete2 (
	fid       INT UNSIGNED NOT NULL PRIMARY KEY,
	nexttry   INT UNSIGNED NOT NULL,
	failcount TINYINT UNSIGNED NOT NULL DEFAULT 0
);

CREATE INDEX IF NOT EXISTS file_to_delete2_nexttry ON file_to_delete2 (nexttry);

CREATE TABLE IF NOT EXISTS checksum (
	fid      INT UNSIGNED NOT NULL PRIMARY KEY,
	hashtype TINYINT UNSIGNED NOT NULL,
	checksum VARBINARY(64) NOT NULL
);
