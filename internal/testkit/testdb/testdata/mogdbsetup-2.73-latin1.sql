-- The schema MogileFS 2.73's mogdbsetup --type=MySQL leaves in a new
-- database on a server whose default character set is latin1 (MySQL 5.x):
-- the TABLE_* statements of MogileFS::Store with MogileFS::Store::MySQL's
-- filter (the first "fid INT" of each becomes BIGINT), ENGINE=InnoDB, then
-- the upgrade_* steps that still change something on fresh tables, then
-- the schema version. No CHARSET clause anywhere: every table takes the
-- database's default, which the test sets to latin1 (latin1_swedish_ci,
-- case-insensitive and PAD SPACE). Statements end with ";" at a line end.

CREATE TABLE domain (
    dmid         SMALLINT UNSIGNED NOT NULL PRIMARY KEY,
    namespace    VARCHAR(255),
    UNIQUE (namespace)
);
ALTER TABLE domain ENGINE=InnoDB;

CREATE TABLE class (
    dmid          SMALLINT UNSIGNED NOT NULL,
    classid       TINYINT UNSIGNED NOT NULL,
    PRIMARY KEY (dmid,classid),
    classname     VARCHAR(50),
    UNIQUE      (dmid,classname),
    mindevcount   TINYINT UNSIGNED NOT NULL,
    hashtype  TINYINT UNSIGNED
);
ALTER TABLE class ENGINE=InnoDB;

CREATE TABLE file (
    fid          BIGINT UNSIGNED NOT NULL,
    PRIMARY KEY  (fid),
    dmid          SMALLINT UNSIGNED NOT NULL,
    dkey           VARCHAR(255),
    UNIQUE dkey  (dmid, dkey),
    length        BIGINT UNSIGNED,
    classid       TINYINT UNSIGNED NOT NULL,
    devcount      TINYINT UNSIGNED NOT NULL,
    INDEX devcount (dmid,classid,devcount)
);
ALTER TABLE file ENGINE=InnoDB;

CREATE TABLE tempfile (
    fid          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    PRIMARY KEY  (fid),
    createtime   INT UNSIGNED NOT NULL,
    classid      TINYINT UNSIGNED NOT NULL,
    dmid          SMALLINT UNSIGNED NOT NULL,
    dkey           VARCHAR(255),
    devids       VARCHAR(60)
);
ALTER TABLE tempfile ENGINE=InnoDB;

CREATE TABLE file_to_delete (
    fid  BIGINT UNSIGNED NOT NULL,
    PRIMARY KEY (fid)
);
ALTER TABLE file_to_delete ENGINE=InnoDB;

CREATE TABLE unreachable_fids (
    fid        BIGINT UNSIGNED NOT NULL,
    lastupdate INT UNSIGNED NOT NULL,
    PRIMARY KEY (fid),
    INDEX (lastupdate)
);
ALTER TABLE unreachable_fids ENGINE=InnoDB;

CREATE TABLE file_on (
    fid          BIGINT UNSIGNED NOT NULL,
    devid        MEDIUMINT UNSIGNED NOT NULL,
    PRIMARY KEY (fid, devid),
    INDEX (devid)
);
ALTER TABLE file_on ENGINE=InnoDB;

CREATE TABLE file_on_corrupt (
    fid          BIGINT UNSIGNED NOT NULL,
    devid        MEDIUMINT UNSIGNED NOT NULL,
    PRIMARY KEY (fid, devid)
);
ALTER TABLE file_on_corrupt ENGINE=InnoDB;

CREATE TABLE host (
    hostid     MEDIUMINT UNSIGNED NOT NULL PRIMARY KEY,
    status     ENUM('alive','dead','down'),
    http_port  MEDIUMINT UNSIGNED DEFAULT 7500,
    http_get_port MEDIUMINT UNSIGNED,
    hostname   VARCHAR(40),
    hostip     VARCHAR(15),
    altip      VARCHAR(15),
    altmask    VARCHAR(18),
    UNIQUE     (hostname),
    UNIQUE     (hostip),
    UNIQUE     (altip)
);
ALTER TABLE host ENGINE=InnoDB;

CREATE TABLE device (
    devid   MEDIUMINT UNSIGNED NOT NULL,
    hostid     MEDIUMINT UNSIGNED NOT NULL,
    status  ENUM('alive','dead','down'),
    weight  MEDIUMINT DEFAULT 100,
    mb_total   INT UNSIGNED,
    mb_used    INT UNSIGNED,
    mb_asof    INT UNSIGNED,
    PRIMARY KEY (devid),
    INDEX   (status)
);
ALTER TABLE device ENGINE=InnoDB;

CREATE TABLE server_settings (
    field   VARCHAR(50) PRIMARY KEY,
    value   TEXT
);
ALTER TABLE server_settings ENGINE=InnoDB;

CREATE TABLE file_to_replicate (
    fid        BIGINT UNSIGNED NOT NULL PRIMARY KEY,
    nexttry    INT UNSIGNED NOT NULL,
    INDEX (nexttry),
    fromdevid  INT UNSIGNED,
    failcount  TINYINT UNSIGNED NOT NULL DEFAULT 0,
    flags      SMALLINT UNSIGNED NOT NULL DEFAULT 0
);
ALTER TABLE file_to_replicate ENGINE=InnoDB;

CREATE TABLE file_to_delete_later (
    fid  BIGINT UNSIGNED NOT NULL PRIMARY KEY,
    delafter INT UNSIGNED NOT NULL,
    INDEX (delafter)
);
ALTER TABLE file_to_delete_later ENGINE=InnoDB;

CREATE TABLE fsck_log (
    logid  INT UNSIGNED NOT NULL AUTO_INCREMENT,
    PRIMARY KEY (logid),
    utime  INT UNSIGNED NOT NULL,
    fid    BIGINT UNSIGNED NULL,
    evcode CHAR(4),
    devid  MEDIUMINT UNSIGNED,
    INDEX(utime)
);
ALTER TABLE fsck_log ENGINE=InnoDB;

CREATE TABLE file_to_queue (
    fid       BIGINT UNSIGNED NOT NULL,
    devid     INT UNSIGNED,
    type      TINYINT UNSIGNED NOT NULL,
    nexttry   INT UNSIGNED NOT NULL,
    failcount TINYINT UNSIGNED NOT NULL default '0',
    flags     SMALLINT UNSIGNED NOT NULL default '0',
    arg       TEXT,
    PRIMARY KEY (fid, type),
    INDEX type_nexttry (type,nexttry)
);
ALTER TABLE file_to_queue ENGINE=InnoDB;

CREATE TABLE file_to_delete2 (
    fid BIGINT UNSIGNED NOT NULL PRIMARY KEY,
    nexttry INT UNSIGNED NOT NULL,
    failcount TINYINT UNSIGNED NOT NULL default '0',
    INDEX nexttry (nexttry)
);
ALTER TABLE file_to_delete2 ENGINE=InnoDB;

CREATE TABLE checksum (
    fid BIGINT UNSIGNED NOT NULL PRIMARY KEY,
    hashtype TINYINT UNSIGNED NOT NULL,
    checksum VARBINARY(64) NOT NULL
);
ALTER TABLE checksum ENGINE=InnoDB;

-- upgrade_add_device_readonly, upgrade_add_device_drain
ALTER TABLE device MODIFY COLUMN status ENUM('alive', 'dead', 'down', 'readonly');
ALTER TABLE device MODIFY COLUMN status ENUM('alive', 'dead', 'down', 'readonly', 'drain');
-- upgrade_add_class_replpolicy
ALTER TABLE class ADD COLUMN replpolicy VARCHAR(255);
-- upgrade_add_host_readonly
ALTER TABLE host MODIFY COLUMN status ENUM('alive', 'dead', 'down', 'readonly');
-- set_schema_vesion
REPLACE INTO server_settings (field, value) VALUES ('schema_version', '17');
