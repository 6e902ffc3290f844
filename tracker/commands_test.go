package tracker_test

// The expected reply lines below are derived from the original tracker's
// source (lib/MogileFS/Worker/Query.pm: each cmd_* builds a hash that
// ok_line url-encodes with eurl, err_line sends "ERR <code> <eurl text>"),
// not recorded from a running Perl tracker, which we cannot run here. The
// original emitted hash keys in Perl's random order; gomogile fixes an
// order, and these tests pin it.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// cmd_create_domain, cmd_delete_domain, cmd_get_domains, cmd_create_class,
// cmd_update_class, cmd_delete_class.
func TestCommands_DomainsAndClasses(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	c := tt.dial()

	c.want("create_domain", "ERR no_domain No+domain+provided")
	c.want("create_domain domain=photos", "OK domain=photos")
	c.want("create_domain domain=photos", "ERR domain_exists That+domain+already+exists")
	c.want("create_domain domain=a%20b", "OK domain=a+b")
	c.want("delete_domain domain=a+b", "OK domain=a+b")
	c.want("delete_domain domain=nope", "ERR domain_not_found Domain+not+found")

	c.want("create_class domain=photos&class=thumb", "ERR invalid_mindevcount The+mindevcount+must+be+at+least+1")
	c.want("create_class domain=photos&mindevcount=2", "ERR no_class No+class+provided")
	c.want("create_class class=x&mindevcount=2", "ERR no_domain No+domain+provided")
	c.want("create_class domain=nope&class=thumb&mindevcount=2", "ERR domain_not_found Domain+not+found")
	c.want("create_class domain=photos&class=thumb&mindevcount=3&hashtype=SHA9", "ERR invalid_hashtype invalid_hashtype")
	c.want("create_class domain=photos&class=thumb&mindevcount=3&replpolicy=Bogus(1)",
		"ERR invalid_replpolicy Failed+to+load+replication+policy+class+MogileFS::ReplicationPolicy::Bogus")
	c.want("create_class domain=photos&class=thumb&mindevcount=3&hashtype=MD5",
		"OK class=thumb&mindevcount=3&domain=photos")
	c.want("create_class domain=photos&class=thumb&mindevcount=3", "ERR class_exists That+class+already+exists+in+that+domain")
	c.want("update_class domain=photos&class=big&mindevcount=1", "ERR class_not_found Class+not+found")
	c.want("update_class domain=photos&class=thumb&mindevcount=2&replpolicy=MultipleHosts(2)",
		"OK class=thumb&mindevcount=2&domain=photos")
	// Updating "default" that has no row creates it (cmd_create_class).
	c.want("update_class domain=photos&class=default&mindevcount=1", "OK class=default&mindevcount=1&domain=photos")

	c.want("get_domains",
		"OK domain1=photos"+
			"&domain1class1name=default&domain1class1mindevcount=1&domain1class1replpolicy=MultipleHosts%28%29&domain1class1hashtype=NONE"+
			"&domain1class2name=thumb&domain1class2mindevcount=2&domain1class2replpolicy=MultipleHosts%282%29&domain1class2hashtype=MD5"+
			"&domain1classes=2&domains=1")

	c.want("delete_class domain=photos&class=default", "ERR nodel_default_class Cannot+delete+the+default+class")
	c.want("delete_class domain=photos&class=nope", "ERR class_not_found Class+not+found")
	c.want("delete_domain domain=photos", "ERR domain_has_classes domain_has_classes")
	c.want("delete_class domain=photos&class=thumb", "OK domain=photos&class=thumb")
	c.want("create_domain domain=empty", "OK domain=empty")
	// The implicit default class carries default_mindevcount (2).
	c.want("get_domains",
		"OK domain1=photos"+
			"&domain1class1name=default&domain1class1mindevcount=1&domain1class1replpolicy=MultipleHosts%28%29&domain1class1hashtype=NONE"+
			"&domain1classes=1"+
			"&domain2=empty&domain2class1name=default&domain2class1mindevcount=2&domain2class1replpolicy=MultipleHosts%28%29&domain2class1hashtype=NONE"+
			"&domain2classes=1&domains=2")
}

// cmd_create_host, cmd_update_host, cmd_delete_host, cmd_get_hosts,
// cmd_create_device, cmd_get_devices, cmd_set_state, cmd_set_weight.
func TestCommands_HostsAndDevices(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	c := tt.dial()

	c.want("create_host", "ERR no_host No+host+provided")
	c.want("create_host host=h1", "ERR no_ip IP+required+to+create+host")
	c.want("create_host host=h1&ip=127.0.0.2", "ERR no_port Port+required+to+create+host")
	c.want("create_host host=h1&ip=127.0.0.2&port=7500&status=sleepy", "ERR unknown_state Invalid/unknown+state")
	c.want("create_host host=h1&ip=127.0.0.2&port=7500", "OK hostid=1&hostname=h1")
	c.want("create_host host=h1&ip=127.0.0.2&port=7500", "ERR host_exists That+host+already+exists")
	c.want("update_host host=h2&status=alive", "ERR host_not_found Host+not+found")
	c.want("update_host host=h1&status=alive&getport=7600&altip=10.0.0.2&altmask=10.0.0.0%2F8", "OK hostid=1&hostname=h1")
	c.want("get_hosts",
		"OK host1_hostid=1&host1_status=alive&host1_hostname=h1&host1_hostip=127.0.0.2&host1_http_port=7500"+
			"&host1_http_get_port=7600&host1_altip=10.0.0.2&host1_altmask=10.0.0.0/8&hosts=1")
	c.want("get_hosts hostid=9", "OK hosts=0")

	c.want("create_device devid=1&state=bogus&hostname=h1", "ERR invalid_state invalid_state")
	c.want("create_device devid=x&hostname=h1", "ERR invalid_devid invalid_devid")
	c.want("create_device devid=1", "ERR bad_args No+hostid/hostname+parameter")
	c.want("create_device devid=1&hostname=nope", "ERR unknown_host Host+not+found")
	c.want("create_device devid=1&hostid=7", "ERR unknown_hostid unknown_hostid")
	c.want("create_device devid=1&hostname=h1", "OK ")
	c.want("create_device devid=1&hostid=1", "ERR existing_devid existing_devid")
	c.want("create_device devid=2&hostid=1&state=down", "OK ")
	c.want("get_devices devid=2",
		"OK dev1_devid=2&dev1_hostid=1&dev1_status=down&dev1_weight=100&dev1_observed_state=&dev1_mb_total=&dev1_mb_used=&dev1_mb_free="+
			"&dev1_mb_asof=&dev1_utilization=&dev1_reject_bad_md5=&devices=1")

	c.want("set_state host=h1&device=2", "ERR bad_params Invalid+parameters+to+command%3B+please+see+documentation")
	c.want("set_state host=h1&device=9&state=dead", "ERR no_device Device+not+found")
	c.want("set_state host=h2&device=2&state=dead", "ERR host_mismatch The+device+specified+doesn%27t+belong+to+the+host+specified")
	c.want("set_state host=h1&device=2&state=dead", "OK ")
	c.want("set_state host=h1&device=2&state=alive", "ERR state_too_high Status+cannot+go+from+dead+to+alive%3B+must+use+down")
	c.want("set_weight host=h1&device=1&weight=-1", "ERR bad_params Invalid+parameters+to+command%3B+please+see+documentation")
	c.want("set_weight host=h1&device=1&weight=50", "OK ")
	c.want("get_devices devid=1",
		"OK dev1_devid=1&dev1_hostid=1&dev1_status=alive&dev1_weight=50&dev1_observed_state=&dev1_mb_total=&dev1_mb_used=&dev1_mb_free="+
			"&dev1_mb_asof=&dev1_utilization=&dev1_reject_bad_md5=&devices=1")

	c.want("delete_host host=nope", "ERR unknown_host Host+not+found")
	c.want("delete_host host=h1", "ERR host_not_empty Unable+to+delete+host%3B+it+contains+devices+still")
	c.want("create_host host=h3&ip=127.0.0.3&port=7500", "OK hostid=2&hostname=h3")
	c.want("delete_host host=h3", "OK ")
}

// cmd_noop, cmd_test, cmd_sleep, cmd_clear_cache, unknown commands, and
// callid handling (ok_line appends callid=…, err_line appends " <callid>").
func TestCommands_Misc(t *testing.T) {
	cfg := testConfig()
	cfg.SleepMax = 300 * time.Millisecond
	tt := startTracker(t, cfg, nil, nil)
	c := tt.dial()
	c.want("noop", "OK ")
	c.want("NOOP", "OK ")
	c.want("noop callid=42", "OK callid=42")
	c.want("test", "OK ")
	c.want("test crash=1&callid=x%20y", "ERR failure Operation+failed x+y")
	c.want("clear_cache", "OK ")
	c.want("frobnicate a=1", "ERR unknown_command Unknown+server+command")
	c.want("frobnicate callid=7", "ERR unknown_command Unknown+server+command 7")
	c.want("get_paths domain=nope&key=k&callid=9", "ERR unreg_domain Domain+name+invalid/not+found 9")
	// sleep is capped by sleep_max.
	start := time.Now()
	c.want("sleep duration=100", "OK ")
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Errorf("sleep duration=100 with sleep_max 300ms took %v", d)
	}
}

// cmd_set_server_setting, cmd_server_setting, cmd_server_settings.
func TestCommands_ServerSettings(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	c := tt.dial()
	c.want("set_server_setting value=1", "ERR bad_params Invalid+parameters+to+command%3B+please+see+documentation")
	c.want("set_server_setting key=schema_version&value=1", "ERR not_writable not_writable")
	c.want("set_server_setting key=memcache_ttl&value=abc", "ERR invalid_format Must+be+numeric")
	c.want("set_server_setting key=skip_mkcol&value=on", "OK ")
	c.want("server_setting key=skip_mkcol", "OK key=skip_mkcol&value=1")
	c.want("set_server_setting key=skip_mkcol&value=no", "OK ")
	c.want("server_setting key=skip_mkcol", "OK key=skip_mkcol&value=0")
	c.want("server_setting key=absent", "OK key=absent&value=")
	c.want("set_server_setting key=fsck_checksum&value=MD5", "OK ")
	// The slave list is kept as 2.73 keeps it: each change, a removal
	// too, bumps slave_version, which tells the Store to read it again.
	c.want("set_server_setting key=slave_x&value=", "OK ")
	c.want("server_setting key=slave_version", "OK key=slave_version&value=1")
	if tt.st.Capabilities().ReadReplicas {
		c.want("set_server_setting key=slave_keys&value=x", "OK ")
		c.want("set_server_setting key=slave_x&value=DBI:mysql:mogilefs;host=replica|mogile|secret", "OK ")
		c.want("server_setting key=slave_x", "OK key=slave_x&value=DBI:mysql:mogilefs;host=replica|mogile|secret")
		c.want("server_setting key=slave_version", "OK key=slave_version&value=3")
	} else if got := c.do("set_server_setting key=slave_keys&value=x"); !strings.HasPrefix(got, "ERR setting_refused ") {
		t.Errorf("slave list on a backend without replicas: %s; want setting_refused", got)
	}
	// Settings from the database directly: never cached.
	if err := tt.st.SetServerSetting(t.Context(), "fsck_host", "elsewhere"); err != nil {
		t.Fatal(err)
	}
	if err := tt.st.SetServerSetting(t.Context(), "memcache_servers", "m:11211"); err != nil {
		t.Fatal(err)
	}
	got := c.do("server_settings")
	all, err := tt.st.ServerSettings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := "OK "
	n := 0
	keys := sortedKeys(all)
	var parts []string
	for _, k := range keys {
		if strings.HasPrefix(k, "fsck_") && k != "fsck_checksum" {
			continue
		}
		n++
		parts = append(parts, fmt.Sprintf("key_count=%d&key_%d=%s&value_%d=%s", n, n, esc(k), n, esc(all[k])))
	}
	want += strings.Join(parts, "&")
	// key_count is set repeatedly in the loop; the reply keeps its first
	// position and last value.
	want = fixKeyCount(want, n)
	if got != want {
		t.Errorf("server_settings\n got: %s\nwant: %s", got, want)
	}
	if strings.Contains(got, "fsck_host") {
		t.Errorf("server_settings shows fsck_host, which the original hides: %s", got)
	}
	if !strings.Contains(got, "memcache_servers") || !strings.Contains(got, "schema_version") {
		t.Errorf("server_settings misses rows: %s", got)
	}
}

// cmd_fsck_* and cmd_rebalance_*: driven through server settings.
func TestCommands_FsckAndRebalance(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, &trackerOptsHost)
	c := tt.dial()
	ctx := t.Context()
	c.want("fsck_reset", "OK ")
	c.want("fsck_start", "OK ")
	c.want("fsck_start", "ERR fsck_running fsck+is+already+running")
	c.want("rebalance_start", "ERR fsck_running fsck+running%3B+cannot+run+rebalance+at+same+time")
	if v, _ := tt.st.ServerSetting(ctx, "fsck_host"); v != "testhost" {
		t.Errorf("fsck_host = %q; want testhost", v)
	}
	got := c.do("fsck_status")
	if !strings.HasPrefix(got, "OK running=1&host=testhost&max_fid_checked=0&policy_only=0&end_fid=0&start_time=") ||
		!strings.Contains(got, "&max_logid=0&queue_length=0") {
		t.Errorf("fsck_status: %s", got)
	}
	c.want("fsck_stop", "OK ")
	if _, err := tt.st.ServerSetting(ctx, "fsck_host"); err == nil {
		t.Errorf("fsck_host still set after fsck_stop")
	}
	c.want("fsck_getlog", "OK row_count=0")
	c.want("fsck_clearlog", "OK ")

	c.want("rebalance_status", "ERR no_rebal_state No+available+rebalance+status")
	c.want("rebalance_start", "ERR no_rebal_policy No+rebalance+policy+available")
	c.want("rebalance_stop", "ERR rebal_not_started Rebalance+not+running")
	c.want("rebalance_set_policy policy=bogus_key=1", "ERR bad_rebal_pol Invalid+setting+bogus_key")
	c.want("rebalance_set_policy policy=from_devices=1%20to_hosts=2", "OK ")
	c.want("rebalance_test", "OK sdevs=&ddevs=")
	got = c.do("rebalance_start")
	if !strings.HasPrefix(got, "OK state=bytes_queued%3D0+completed_devs%3D+") {
		t.Errorf("rebalance_start: %s", got)
	}
	// queue_length, gomogile's own, follows the state: no moves queued yet.
	if got := c.do("rebalance_status"); !strings.HasPrefix(got, "OK state=bytes_queued%3D0+") || !strings.HasSuffix(got, "&queue_length=0&nonempty_devs=") {
		t.Errorf("rebalance_status: %s", got)
	}
	c.want("rebalance_reset", "ERR rebal_running rebalance+is+running")
	c.want("rebalance_stop", "OK ")
	if v, _ := tt.st.ServerSetting(ctx, "rebal_signal"); v != "stop" {
		t.Errorf("rebal_signal = %q; want stop", v)
	}
}

// rebalance_status names the run's completed source devices that still
// hold files: a move that failed leaves the queue like one that worked.
func TestCommands_RebalanceStatusNonemptyDevs(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, &trackerOptsHost)
	c := tt.dial()
	ctx := t.Context()
	if err := tt.st.SetServerSetting(ctx, "rebal_state", "completed_devs=1,2,3 source_devs=4 time_finished=0"); err != nil {
		t.Fatal(err)
	}
	for _, devid := range []int{2, 4} {
		if _, err := tt.st.AddFileOn(ctx, 7, devid); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tt.st.AddFileOn(ctx, 8, 3); err != nil {
		t.Fatal(err)
	}
	c.want("rebalance_status", "OK state=completed_devs%3D1,2,3+source_devs%3D4+time_finished%3D0&queue_length=0&nonempty_devs=2,3")
}

// create_class refuses the policies the replicate worker cannot run (it
// retried such a class forever before), naming the ones it can, and
// accepts a Union of runnable ones.
func TestCommands_CreateClassRefusesPoliciesTheWorkerCannotRun(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	c := tt.dial()
	c.want("create_domain domain=d", "OK domain=d")
	for _, p := range []string{"MultipleNetworks(2)", "HostsPerNetwork(2)", "Union(MultipleHosts(),MultipleNetworks(2))"} {
		got := c.do("create_class domain=d&class=c&mindevcount=2&replpolicy=" + esc(p))
		if !strings.HasPrefix(got, "ERR invalid_replpolicy Failed+to+load+replication+policy+class+MogileFS::ReplicationPolicy::") ||
			!strings.Contains(got, "MultipleHosts%28N%29") {
			t.Errorf("replpolicy %s: %s; want invalid_replpolicy naming MultipleHosts(N)", p, got)
		}
	}
	c.want("update_class domain=d&class=default&mindevcount=2&replpolicy="+esc("MultipleHosts(2) junk"),
		"ERR invalid_replpolicy Failed+to+parse+policy+string:+junk")
	c.want("create_class domain=d&class=c&mindevcount=2&replpolicy=MultipleDevices(2)", "OK class=c&mindevcount=2&domain=d")
	c.want("create_class domain=d&class=u&mindevcount=2&replpolicy="+esc("Union(MultipleHosts(2), MultipleDevices(3))"), "OK class=u&mindevcount=2&domain=d")
}

// Server settings the original reads but gomogile cannot honour are
// refused by set_server_setting, saying why, rather than stored and
// ignored; deleting them and values that describe what gomogile does are
// accepted.
func TestCommands_ServerSettingsRefused(t *testing.T) {
	tt := startTracker(t, testConfig(), nil, nil)
	c := tt.dial()
	refused := []string{
		"key=memcache_servers&value=10.0.0.1:11211",
		"key=internal_queue_limit&value=500",
		"key=network_zones&value=one,two", "key=zone_one&value=10.0.0.0/8",
	}
	if !tt.st.Capabilities().ReadReplicas {
		refused = append(refused, "key=slave_keys&value=s1") // SQLite: no replicas
	}
	for _, kv := range refused {
		got := c.do("set_server_setting " + kv)
		if !strings.HasPrefix(got, "ERR setting_refused ") || !strings.Contains(got, "refused") {
			t.Errorf("set_server_setting %s: %s; want setting_refused", kv, got)
		}
	}
	if v, err := tt.st.ServerSetting(t.Context(), "memcache_servers"); err == nil {
		t.Errorf("refused memcache_servers stored as %q", v)
	}
	c.want("set_server_setting key=case_sensitive_list_keys&value=1", "OK ")
	c.want("set_server_setting key=memcache_servers&value=", "OK ")
	c.want("set_server_setting key=memcache_ttl&value=abc", "ERR invalid_format Must+be+numeric")
}

// Point 12 of issue 9: sleep sleeps as long as asked, as cmd_sleep does,
// not cut at request_timeout; a duration Perl reads as a fraction or a
// word ("0.5", "abc") is true, so it is not the default 10 s but sleep(0).
func TestCommands_SleepAsTheOriginal(t *testing.T) {
	cfg := testConfig()
	cfg.RequestTimeout = 300 * time.Millisecond
	tt := startTracker(t, cfg, nil, nil)
	c := tt.dial()
	start := time.Now()
	c.want("sleep duration=1", "OK ")
	if d := time.Since(start); d < time.Second {
		t.Errorf("sleep duration=1 with request_timeout 300ms returned after %v; want 1 s", d)
	}
	for _, arg := range []string{"abc", "0.5", "-3"} {
		start := time.Now()
		c.want("sleep duration="+arg, "OK ")
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("sleep duration=%s took %v; want sleep(0), not the default 10 s", arg, d)
		}
	}
}
