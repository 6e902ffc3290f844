CREATE TABLE IF NOT EXISTS domain (
	dmid SMALLINT NOT NULL PRIMARY KEY,
	namespace VARCHAR(255),
	UNIQUE (namespace)
);

CREATE TABLE IF NOT EXISTS class (
	dmid SMALLINT NOT NULL,
	classid SMALLINT NOT NULL,
	classname VARCHAR(50),
	mindevcount SMALLINT NOT NULL,
	hashtype SMALLINT,
	replpolicy VARCHAR(255),
	PRIMARY KEY (dmid, classid),
	UNIQUE (dmid, classname)
);

CREATE TABLE IF NOT EXISTS file (
	fid BIGINT NOT NULL PRIMARY KEY,
	dmid SMALLINT NOT NULL,
	dkey VARCHAR(255) COLLATE "C",
	length BIGINT CHECK (length >= 0),
	classid SMALLINT NOT NULL,
	devcount SMALLINT NOT NULL,
	UNIQUE (dmid, dkey)
);

CREATE INDEX IF NOT EXISTS file_devcount ON file (dmid, classid, devcount);

CREATE TABLE IF NOT EXISTS tempfile (
	fid BIGSERIAL NOT NULL PRIMARY KEY,
	createtime BIGINT NOT NULL,
	classid SMALLINT NOT NULL,
	dmid SMALLINT NOT NULL,
	dkey VARCHAR(255),
	devids VARCHAR(60)
);

CREATE TABLE IF NOT EXISTS file_to_delete (
	fid BIGINT NOT NULL PRIMARY KEY
);

CREATE TABLE IF NOT EXISTS unreachable_fids (
	fid BIGINT NOT NULL PRIMARY KEY,
	lastupdate BIGINT NOT NULL
);

CREATE INDEX IF NOT EXISTS unreachable_fids_lastupdate ON unreachable_fids (lastupdate);

CREATE TABLE IF NOT EXISTS file_on (
	fid BIGINT NOT NULL,
	devid INT NOT NULL,
	PRIMARY KEY (fid, devid)
);

CREATE INDEX IF NOT EXISTS file_on_devid ON file_on (devid);

CREATE TABLE IF NOT EXISTS file_on_corrupt (
	fid BIGINT NOT NULL,
	devid INT NOT NULL,
	PRIMARY KEY (fid, devid)
);

CREATE TABLE IF NOT EXISTS host (
	hostid INT NOT NULL PRIMARY KEY CHECK (hostid >= 0),
	status VARCHAR(8) CHECK (status IN ('alive', 'dead', 'down', 'readonly')),
	http_port INT DEFAULT 7500 CHECK (http_port >= 0 AND http_port < 65536),
	http_get_port INT CHECK (http_get_port >= 0 AND http_get_port < 65536),
	hostname VARCHAR(40),
	hostip VARCHAR(15),
	altip VARCHAR(15),
	altmask VARCHAR(18),
	UNIQUE (hostname),
	UNIQUE (hostip),
	UNIQUE (altip)
);

CREATE TABLE IF NOT EXISTS device (
	devid INT NOT NULL PRIMARY KEY CHECK (devid >= 0),
	hostid INT NOT NULL,
	status VARCHAR(8) CHECK (status IN ('alive', 'dead', 'down', 'readonly', 'drain')),
	weight INT DEFAULT 100,
	mb_total BIGINT CHECK (mb_total >= 0),
	mb_used BIGINT CHECK (mb_used >= 0),
	mb_asof BIGINT CHECK (mb_asof >= 0)
);

CREATE INDEX IF NOT EXISTS device_status ON device (status);

CREATE TABLE IF NOT EXISTS server_settings (
	field VARCHAR(50) PRIMARY KEY,
	value TEXT
);

CREATE TABLE IF NOT EXISTS file_to_replicate (
	fid BIGINT NOT NULL PRIMARY KEY,
	nexttry BIGINT NOT NULL,
	fromdevid INT,
	failcount SMALLINT NOT NULL DEFAULT 0,
	flags SMALLINT NOT NULL DEFAULT 0
);

CREATE INDEX IF NOT EXISTS file_to_replicate_nexttry ON file_to_replicate (nexttry);

CREATE TABLE IF NOT EXISTS file_to_delete_later (
	fid BIGINT NOT NULL PRIMARY KEY,
	delafter BIGINT NOT NULL
);

CREATE INDEX IF NOT EXISTS file_to_delete_later_delafter ON file_to_delete_later (delafter);

CREATE TABLE IF NOT EXISTS fsck_log (
	logid BIGSERIAL NOT NULL PRIMARY KEY,
	utime BIGINT NOT NULL,
	fid BIGINT NULL,
	evcode CHAR(4),
	devid INT
);

CREATE INDEX IF NOT EXISTS fsck_log_utime ON fsck_log (utime);

CREATE TABLE IF NOT EXISTS file_to_queue (
	fid BIGINT NOT NULL,
	devid INT,
	type SMALLINT NOT NULL,
	nexttry BIGINT NOT NULL,
	failcount SMALLINT NOT NULL DEFAULT 0,
	flags SMALLINT NOT NULL DEFAULT 0,
	arg TEXT,
	PRIMARY KEY (fid, type)
);

CREATE INDEX IF NOT EXISTS type_nexttry ON file_to_queue (type, nexttry);

CREATE TABLE IF NOT EXISTS file_to_delete2 (
	fid BIGINT NOT NULL PRIMARY KEY,
	nexttry BIGINT NOT NULL,
	failcount SMALLINT NOT NULL DEFAULT 0
);

CREATE INDEX IF NOT EXISTS file_to_delete2_nexttry ON file_to_delete2 (nexttry);

CREATE TABLE IF NOT EXISTS checksum (
	fid BIGINT NOT NULL PRIMARY KEY,
	hashtype SMALLINT NOT NULL,
	checksum BYTEA NOT NULL
);
