package postgres_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
)

// mogileSchema is the shape MogileFS's PostgreSQL store gives a schema 17
// database: 32-bit fids and times, SERIAL ids, SMALLINT devices and hosts,
// CHECKs for MySQL's ENUMs, the database's own collation on dkey, and its
// advisory-lock bookkeeping table "lock".
var mogileSchema = []string{
	`CREATE TABLE domain (dmid SMALLINT NOT NULL PRIMARY KEY, namespace VARCHAR(255), UNIQUE (namespace))`,
	`CREATE TABLE class (dmid SMALLINT NOT NULL, classid SMALLINT NOT NULL, PRIMARY KEY (dmid, classid),
		classname VARCHAR(50), UNIQUE (dmid, classname), mindevcount SMALLINT NOT NULL, hashtype SMALLINT,
		replpolicy VARCHAR(255))`,
	`CREATE TABLE file (fid INT NOT NULL PRIMARY KEY, dmid SMALLINT NOT NULL, dkey VARCHAR(255),
		UNIQUE (dmid, dkey), length BIGINT CHECK (length >= 0), classid SMALLINT NOT NULL, devcount SMALLINT NOT NULL)`,
	`CREATE INDEX file_devcount ON file (dmid, classid, devcount)`,
	`CREATE TABLE tempfile (fid SERIAL PRIMARY KEY, createtime INT NOT NULL, classid SMALLINT NOT NULL,
		dmid SMALLINT NOT NULL, dkey VARCHAR(255), devids VARCHAR(60))`,
	`CREATE TABLE file_to_delete (fid INT NOT NULL PRIMARY KEY)`,
	`CREATE TABLE unreachable_fids (fid INT NOT NULL PRIMARY KEY, lastupdate INT NOT NULL)`,
	`CREATE INDEX unreachable_fids_lastupdate ON unreachable_fids (lastupdate)`,
	`CREATE TABLE file_on (fid INT NOT NULL, devid SMALLINT NOT NULL, PRIMARY KEY (fid, devid))`,
	`CREATE INDEX file_on_devid ON file_on (devid)`,
	`CREATE TABLE file_on_corrupt (fid INT NOT NULL, devid SMALLINT NOT NULL, PRIMARY KEY (fid, devid))`,
	`CREATE TABLE host (hostid SMALLINT NOT NULL PRIMARY KEY CHECK (hostid >= 0),
		status VARCHAR(8) CHECK (status IN ('alive', 'dead', 'down', 'readonly')),
		http_port INT DEFAULT 7500 CHECK (http_port >= 0) CHECK (http_port < 65536),
		http_get_port INT CHECK (http_get_port >= 0) CHECK (http_get_port < 65536),
		hostname VARCHAR(40), UNIQUE (hostname), hostip VARCHAR(15), UNIQUE (hostip),
		altip VARCHAR(15), UNIQUE (altip), altmask VARCHAR(18))`,
	`CREATE TABLE device (devid SMALLINT NOT NULL PRIMARY KEY CHECK (devid >= 0), hostid SMALLINT NOT NULL,
		status VARCHAR(8) CHECK (status IN ('alive', 'dead', 'down', 'readonly', 'drain')), weight INT DEFAULT 100,
		mb_total INT CHECK (mb_total >= 0), mb_used INT CHECK (mb_used >= 0), mb_asof INT CHECK (mb_asof >= 0))`,
	`CREATE INDEX device_status ON device (status)`,
	`CREATE TABLE server_settings (field VARCHAR(50) PRIMARY KEY, value TEXT)`,
	`CREATE TABLE file_to_replicate (fid INT NOT NULL PRIMARY KEY, nexttry INT NOT NULL, fromdevid INT,
		failcount SMALLINT NOT NULL DEFAULT 0, flags SMALLINT NOT NULL DEFAULT 0)`,
	`CREATE INDEX file_to_replicate_nexttry ON file_to_replicate (nexttry)`,
	`CREATE TABLE file_to_delete_later (fid INT NOT NULL PRIMARY KEY, delafter INT NOT NULL)`,
	`CREATE INDEX file_to_delete_later_delafter ON file_to_delete_later (delafter)`,
	`CREATE TABLE fsck_log (logid SERIAL PRIMARY KEY, utime INT NOT NULL, fid INT NULL, evcode CHAR(4), devid SMALLINT)`,
	`CREATE INDEX fsck_log_utime ON fsck_log (utime)`,
	`CREATE TABLE file_to_queue (fid INT NOT NULL, devid INT, type SMALLINT NOT NULL, nexttry INT NOT NULL,
		failcount SMALLINT NOT NULL DEFAULT 0, flags SMALLINT NOT NULL DEFAULT 0, arg TEXT, PRIMARY KEY (fid, type))`,
	`CREATE INDEX type_nexttry ON file_to_queue (type, nexttry)`,
	`CREATE TABLE file_to_delete2 (fid INT NOT NULL PRIMARY KEY, nexttry INT NOT NULL, failcount SMALLINT NOT NULL DEFAULT 0)`,
	`CREATE INDEX file_to_delete2_nexttry ON file_to_delete2 (nexttry)`,
	`CREATE TABLE checksum (fid INT NOT NULL PRIMARY KEY, hashtype SMALLINT NOT NULL, checksum BYTEA NOT NULL)`,
	`CREATE TABLE lock (lockid INT NOT NULL PRIMARY KEY CHECK (lockid >= 0), hostname VARCHAR(255) NOT NULL,
		pid INT NOT NULL CHECK (pid >= 0), acquiredat INT NOT NULL CHECK (acquiredat >= 0))`,
	`INSERT INTO server_settings (field, value) VALUES ('schema_version', '17')`,
	`INSERT INTO domain VALUES (1, 'legacy')`,
	`INSERT INTO class VALUES (1, 0, 'default', 2, NULL, NULL)`,
	`INSERT INTO file VALUES (41, 1, 'old/b', 10, 0, 0), (42, 1, 'old/B', 20, 0, 0)`,
}

// TestOpen_MogileFSDatabase: a database as MogileFS left it opens as it is,
// keeps its rows and column types, and works.
func TestOpen_MogileFSDatabase(t *testing.T) {
	dsn := testdb.Postgres(t)
	for _, q := range mogileSchema {
		adminExec(t, dsn, q)
	}
	s := open(t, dsn)
	ctx := t.Context()
	if v, err := s.ServerSetting(ctx, "schema_version"); err != nil || v != "17" {
		t.Fatalf("schema_version = %q, %v; want 17", v, err)
	}
	if f, err := s.FileByKey(ctx, 1, "old/B"); err != nil || f.Fid != 42 {
		t.Fatalf("FileByKey(old/B) = %+v, %v; want fid 42", f, err)
	}
	keys, err := s.ListKeys(ctx, 1, "old/", "", 10)
	if err != nil || !slices.Equal(keys, []string{"old/B", "old/b"}) {
		t.Fatalf("ListKeys = %q, %v; want [old/B old/b] in byte order", keys, err)
	}
	h, err := s.CreateHost(ctx, store.Host{Name: "sto1", Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateDevice(ctx, store.Device{ID: 7, HostID: h.ID, Status: store.DeviceAlive, Weight: 100}); err != nil {
		t.Fatal(err)
	}
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: 1, Key: "new", DevIDs: []int{7}})
	if err != nil {
		t.Fatal(err)
	}
	if fid <= 42 {
		t.Errorf("new fid %d; want above the largest existing fid 42", fid)
	}
	if _, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: 1, Key: "new", Length: 3, DevIDs: []int{7}}); err != nil {
		t.Fatal(err)
	}
	if f, err := s.FileByKey(ctx, 1, "new"); err != nil || f.DevCount != 1 {
		t.Errorf("FileByKey(new) = %+v, %v; want devcount 1", f, err)
	}
	if err := s.SetDeviceState(ctx, 7, store.DeviceDrain); err != nil {
		t.Errorf("SetDeviceState(drain): %v", err)
	}
	l, err := s.Lock(ctx, "legacy", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// MogileFS's own tables kept their types.
	conn, err := adminConn(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var typ string
	if err := conn.QueryRow(ctx, "SELECT data_type FROM information_schema.columns WHERE table_name = 'file' AND column_name = 'fid'").Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if typ != "integer" {
		t.Errorf("file.fid is %s after Open; want MogileFS's integer left alone", typ)
	}
	if _, err := s.File(ctx, 41); errors.Is(err, store.ErrNotFound) {
		t.Errorf("MogileFS's file 41 vanished")
	}
}
