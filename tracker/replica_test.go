package tracker_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/store"
)

// TestReplicas_SlaveSettings: an operator's `mogadm slave add`, that is
// set_server_setting of slave_keys and slave_<key>, makes the tracker
// answer file_info, get_paths and list_keys from that MariaDB replica, as
// 2.73 does; the replica's own answer (a row changed there alone, which
// root may do despite read_only) shows where it came from.
func TestReplicas_SlaveSettings(t *testing.T) {
	if err := dbinstance.Available("mariadb"); err != nil {
		t.Skipf("private MariaDB: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	primary, err := dbinstance.StartMariaDBPrimary(ctx, dbinstance.MyOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { primary.Cleanup() })
	replica, err := primary.StartReplica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replica.Cleanup() })
	st := openStore(t, primary.DSN("test")+"?replica_max_lag=1s")
	tt := startTracker(t, testConfig(), st, nil)
	c := tt.dial()

	dom, err := st.CreateDomain(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	h, err := st.CreateHost(ctx, store.Host{Name: "h", IP: "127.0.0.1", HTTPPort: 7500, Status: store.HostAlive})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateDevice(ctx, store.Device{ID: 1, HostID: h.ID, Status: store.DeviceAlive, Weight: 100}); err != nil {
		t.Fatal(err)
	}
	fid, err := st.CreateTempFile(ctx, store.TempFile{DomainID: dom.ID, Key: "k", DevIDs: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CommitFile(ctx, store.Commit{Fid: fid, DomainID: dom.ID, Key: "k", Length: 5, DevIDs: []int{1}}); err != nil {
		t.Fatal(err)
	}

	c.want("set_server_setting key=slave_keys&value=r1", "OK ")
	slave := fmt.Sprintf("DBI:mysql:database=test;host=127.0.0.1;port=%d|root|", replica.Port())
	c.want("set_server_setting key=slave_r1&value="+url.QueryEscape(slave), "OK ")
	if err := replica.WaitCaughtUp(ctx, primary); err != nil {
		t.Fatal(err)
	}
	rdb, err := sql.Open("mysql", replica.DriverDSN("test"))
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if _, err := rdb.ExecContext(ctx, "UPDATE file SET length = 4242 WHERE fid = ?", fid); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := c.do("file_info domain=d&key=k")
		if strings.Contains(got, "length=4242") {
			break
		}
		if !strings.Contains(got, "length=5") || time.Now().After(deadline) {
			info, _ := st.Info(ctx)
			t.Fatalf("file_info: %s; want the replica's length=4242 within 30s (replicas %+v)", got, info.Replicas)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := c.do("list_keys domain=d&prefix=k"); !strings.Contains(got, "key_1=k") {
		t.Errorf("list_keys: %s", got)
	}
	if got := c.do("get_paths domain=d&key=k&noverify=1"); !strings.HasPrefix(got, "OK ") || !strings.Contains(got, "paths=1") {
		t.Errorf("get_paths: %s", got)
	}
	// What a client is told without a replica is the primary's: the
	// slave list removed, the Store drops it.
	c.want("set_server_setting key=slave_keys&value=", "OK ")
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(c.do("file_info domain=d&key=k"), "length=5") {
		if time.Now().After(deadline) {
			t.Fatal("file_info still the replica's 30s after the slave list was emptied")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
