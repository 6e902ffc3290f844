package client_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/gomogile/gomogile/client"
)

// Reply lines below follow the key layout of the cmd_* named beside each,
// in the scrambled order Perl's hash iteration produces.

// cmd_get_domains
const getDomainsReply = "OK domain2class1mindevcount=2&domain1=zdom&domain1classes=0&domains=2&domain2=testdom" +
	"&domain2classes=2&domain2class1name=default&domain2class1replpolicy=MultipleHosts%28%29&domain2class1hashtype=NONE" +
	"&domain2class2name=1copy&domain2class2mindevcount=1&domain2class2replpolicy=MultipleDevices%282%29&domain2class2hashtype=MD5"

func TestClient_GetDomains(t *testing.T) {
	p := startPeer(t, replies(map[string]string{"get_domains": getDomainsReply}))
	c := newClient(t, []string{p.Addr()}, nil)
	got, err := c.GetDomains(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []client.Domain{
		{Name: "testdom", Classes: []client.Class{
			{Name: "1copy", MinDevCount: 1, ReplPolicy: "MultipleDevices(2)", HashType: "MD5"},
			{Name: "default", MinDevCount: 2, ReplPolicy: "MultipleHosts()", HashType: "NONE"},
		}},
		{Name: "zdom"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GetDomains = %+v; want %+v", got, want)
	}
}

func TestClient_UpdateClass_KeepsMinDevCount(t *testing.T) {
	p := startPeer(t, replies(map[string]string{
		"get_domains": getDomainsReply,
		// cmd_update_class ends in cmd_clear_cache with these args.
		"update_class": "OK class=1copy&mindevcount=1&domain=testdom",
	}))
	c := newClient(t, []string{p.Addr()}, nil)
	if err := c.UpdateClass(t.Context(), "testdom", client.Class{Name: "1copy", HashType: "NONE"}); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 2 || reqs[0].Cmd != "get_domains" {
		t.Fatalf("requests = %v; want get_domains then update_class", reqs)
	}
	if want := "update_class class=1copy&domain=testdom&hashtype=NONE&mindevcount=1\r\n"; reqs[1].Raw != want {
		t.Fatalf("update_class line = %q; want %q", reqs[1].Raw, want)
	}
}

func TestClient_AdminRequestLines(t *testing.T) {
	p := startPeer(t, func(r request) answer {
		switch r.Cmd {
		case "create_host":
			return answer{Line: "OK hostid=3&hostname=" + r.Args.Get("host")}
		case "replicate_now":
			return answer{Line: "OK count=17"}
		}
		return answer{Line: "OK "}
	})
	c := newClient(t, []string{p.Addr()}, nil)
	ctx := t.Context()
	steps := []struct {
		call func(context.Context) error
		want string
	}{
		{func(ctx context.Context) error { return c.CreateDomain(ctx, "new dom") }, "create_domain domain=new+dom\r\n"},
		{func(ctx context.Context) error { return c.DeleteDomain(ctx, "old") }, "delete_domain domain=old\r\n"},
		{func(ctx context.Context) error {
			return c.CreateClass(ctx, "d", client.Class{Name: "c", MinDevCount: 3, ReplPolicy: "MultipleHosts(3)"})
		}, "create_class class=c&domain=d&mindevcount=3&replpolicy=MultipleHosts%283%29\r\n"},
		{func(ctx context.Context) error { return c.DeleteClass(ctx, "d", "c") }, "delete_class class=c&domain=d\r\n"},
		{func(ctx context.Context) error {
			id, err := c.CreateHost(ctx, client.Host{Name: "hostA", IP: "10.0.0.1", Port: 7500, Status: "alive"})
			if err == nil && id != 3 {
				t.Errorf("CreateHost id = %d; want 3", id)
			}
			return err
		}, "create_host host=hostA&ip=10.0.0.1&port=7500&status=alive\r\n"},
		{func(ctx context.Context) error { return c.UpdateHost(ctx, client.Host{Name: "hostA", GetPort: 7501}) },
			"update_host getport=7501&host=hostA\r\n"},
		{func(ctx context.Context) error { return c.DeleteHost(ctx, "hostA") }, "delete_host host=hostA\r\n"},
		{func(ctx context.Context) error {
			return c.CreateDevice(ctx, client.NewDevice{HostName: "hostA", DevID: 4})
		},
			"create_device devid=4&hostname=hostA\r\n"},
		{func(ctx context.Context) error {
			return c.CreateDevice(ctx, client.NewDevice{HostID: 2, DevID: 5, State: "down"})
		}, "create_device devid=5&hostid=2&state=down\r\n"},
		{func(ctx context.Context) error { return c.SetState(ctx, "hostA", 4, "drain") }, "set_state device=4&host=hostA&state=drain\r\n"},
		{func(ctx context.Context) error { return c.SetWeight(ctx, "hostA", 4, 50) }, "set_weight device=4&host=hostA&weight=50\r\n"},
		{func(ctx context.Context) error { return c.SetServerSetting(ctx, "enable_rebalance", "1") },
			"set_server_setting key=enable_rebalance&value=1\r\n"},
		{func(ctx context.Context) error {
			n, err := c.ReplicateNow(ctx)
			if err == nil && n != 17 {
				t.Errorf("ReplicateNow = %d; want 17", n)
			}
			return err
		}, "replicate_now \r\n"},
		{func(ctx context.Context) error { return c.FsckReset(ctx, true, 100) }, "fsck_reset policy_only=1&startpos=100\r\n"},
		{func(ctx context.Context) error { return c.FsckStart(ctx) }, "fsck_start \r\n"},
		{func(ctx context.Context) error { return c.FsckStop(ctx) }, "fsck_stop \r\n"},
		{func(ctx context.Context) error { return c.UpdateFileClass(ctx, "d", "k", "c") }, "updateclass class=c&domain=d&key=k\r\n"},
	}
	for i, s := range steps {
		if err := s.call(ctx); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		reqs := p.Requests()
		if got := reqs[len(reqs)-1].Raw; got != s.want {
			t.Errorf("step %d sent %q; want %q", i, got, s.want)
		}
	}
}

func TestClient_GetHostsDevices(t *testing.T) {
	p := startPeer(t, replies(map[string]string{
		// cmd_get_hosts: host fields hostid status hostname hostip
		// http_port http_get_port altip altmask; undef sent as empty.
		"get_hosts": "OK host2_hostid=2&host2_hostname=hostB&host2_hostip=10.0.0.2&host2_http_port=7500&host2_http_get_port=&host2_status=down&host2_altip=&host2_altmask=" +
			"&hosts=2&host1_hostid=1&host1_hostname=hostA&host1_hostip=10.0.0.1&host1_http_port=7500&host1_http_get_port=7501&host1_status=alive&host1_altip=192.168.0.1&host1_altmask=192.168.0.0%2F24",
		// cmd_get_devices: Device->fields plus mb_free.
		"get_devices": "OK devices=2&dev1_devid=3&dev1_hostid=1&dev1_status=alive&dev1_weight=100&dev1_mb_total=1000&dev1_mb_used=250&dev1_mb_free=750" +
			"&dev1_mb_asof=1700000000&dev1_observed_state=writeable&dev1_utilization=12.5&dev1_reject_bad_md5=1" +
			"&dev2_devid=1&dev2_hostid=2&dev2_status=dead&dev2_weight=&dev2_mb_total=&dev2_mb_used=&dev2_mb_free=&dev2_mb_asof=&dev2_observed_state=&dev2_utilization=&dev2_reject_bad_md5=",
	}))
	c := newClient(t, []string{p.Addr()}, nil)
	hosts, err := c.GetHosts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantHosts := []client.Host{
		{ID: 1, Name: "hostA", IP: "10.0.0.1", Port: 7500, GetPort: 7501, AltIP: "192.168.0.1", AltMask: "192.168.0.0/24", Status: "alive"},
		{ID: 2, Name: "hostB", IP: "10.0.0.2", Port: 7500, Status: "down"},
	}
	if !reflect.DeepEqual(hosts, wantHosts) {
		t.Fatalf("GetHosts = %+v; want %+v", hosts, wantHosts)
	}
	devs, err := c.GetDevices(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantDevs := []client.Device{
		{ID: 1, HostID: 2, Status: "dead"},
		{ID: 3, HostID: 1, Status: "alive", Weight: 100, ObservedState: "writeable", MBTotal: 1000, MBUsed: 250, MBFree: 750,
			MBAsOf: 1700000000, Utilization: 12.5, RejectBadMD5: true},
	}
	if !reflect.DeepEqual(devs, wantDevs) {
		t.Fatalf("GetDevices = %+v; want %+v", devs, wantDevs)
	}
}

func TestClient_Settings(t *testing.T) {
	p := startPeer(t, replies(map[string]string{
		// cmd_server_settings and cmd_server_setting.
		"server_settings": "OK key_count=2&key_1=schema_version&value_1=15&key_2=memcache_servers&value_2=10.0.0.1%3A11211",
		"server_setting":  "OK key=schema_version&value=15",
		"fsck_status":     "OK running=1&host=tracker1&max_fid_checked=100&policy_only=0&end_fid=200&start_time=1700000000&stop_time=0&current_time=1700000100&max_logid=7&queue_length=5&num_NOPA=2&num_REPL=3",
	}))
	c := newClient(t, []string{p.Addr()}, nil)
	ss, err := c.ServerSettings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"schema_version": "15", "memcache_servers": "10.0.0.1:11211"}; !reflect.DeepEqual(ss, want) {
		t.Fatalf("ServerSettings = %v; want %v", ss, want)
	}
	v, err := c.ServerSetting(t.Context(), "schema_version")
	if err != nil || v != "15" {
		t.Fatalf("ServerSetting = %q, %v; want 15", v, err)
	}
	st, err := c.FsckStatus(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := &client.FsckStatus{Running: true, Host: "tracker1", MaxFidChecked: 100, EndFid: 200, StartTime: 1700000000,
		CurrentTime: 1700000100, MaxLogID: 7, QueueLength: 5, Counts: map[string]int64{"NOPA": 2, "REPL": 3}}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("FsckStatus = %+v; want %+v", st, want)
	}
}

func TestClient_UpdateClass_Missing(t *testing.T) {
	p := startPeer(t, replies(map[string]string{"get_domains": getDomainsReply, "update_class": "OK "}))
	c := newClient(t, []string{p.Addr()}, nil)
	err := c.UpdateClass(t.Context(), "testdom", client.Class{Name: "nope", HashType: "MD5"})
	if !errors.Is(err, client.ErrClassNotFound) {
		t.Fatalf("UpdateClass error = %v; want ErrClassNotFound", err)
	}
	if n := countCmd(p.Requests(), "update_class"); n != 0 {
		t.Fatalf("tracker got %d update_class; want 0", n)
	}
}
