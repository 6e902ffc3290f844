package tracker_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/tracker"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// originalKeys are the keys MogileFS 2.73's MogileFS::Config::load_config
// reads from mogilefsd.conf (choose_value, plus listen and plugins).
var originalKeys = []string{
	"daemonize", "db_dsn", "db_user", "db_pass", "conf_port", "listen", "listener_jobs", "query_jobs",
	"delete_jobs", "replicate_jobs", "fsck_jobs", "reaper_jobs", "job_master", "monitor_jobs",
	"min_free_space", "max_disk_age", "max_handles", "debug", "pidfile", "mogstored_stream_port",
	"default_mindevcount", "node_timeout", "conn_timeout", "conn_pool_size", "rebalance_ignore_missing",
	"repl_use_get_port", "local_network", "no_schema_check", "plugins", "user",
}

// keyCase is one config line and what must come of it: check looks at the
// tracker's config and the options its workers get; a refused line must
// fail with ErrRefused (or a Validate error) whose text contains refusal.
type keyCase struct {
	line    string
	check   func(c tracker.Config, o jobs.Options) bool
	refusal string
}

func honoured(line string, check func(c tracker.Config, o jobs.Options) bool) keyCase {
	return keyCase{line: line, check: check}
}

func refusedWith(line, why string) keyCase { return keyCase{line: line, refusal: why} }

// Every key the original reads is either honoured — its value reaches the
// tracker and, where they use it, the workers — or refused at start with
// a message saying why and what to use instead. None is accepted and then
// ignored.
func TestConfig_EveryOriginalKey(t *testing.T) {
	cases := map[string][]keyCase{
		"daemonize":      {honoured("daemonize = 1", func(c tracker.Config, _ jobs.Options) bool { return c.Daemonize })},
		"db_dsn":         {honoured("db_dsn = DBI:Pg:dbname=mogile;host=db1", func(c tracker.Config, _ jobs.Options) bool { return c.DBDSN == "DBI:Pg:dbname=mogile;host=db1" })},
		"db_user":        {honoured("db_user = u1", func(c tracker.Config, _ jobs.Options) bool { d, _ := c.StoreDSN(); return d.User == "u1" })},
		"db_pass":        {honoured("db_pass = p1", func(c tracker.Config, _ jobs.Options) bool { d, _ := c.StoreDSN(); return d.Password == "p1" })},
		"conf_port":      {honoured("conf_port = 7010", func(c tracker.Config, _ jobs.Options) bool { return c.ListenAddrs()[0] == "0.0.0.0:7010" })},
		"listen":         {honoured("listen = 127.0.0.1:7100", func(c tracker.Config, _ jobs.Options) bool { return c.ListenAddrs()[0] == "127.0.0.1:7100" })},
		"listener_jobs":  {honoured("listener_jobs = 9", func(c tracker.Config, _ jobs.Options) bool { return c.QueryJobs == 9 })},
		"query_jobs":     {honoured("query_jobs = 8", func(c tracker.Config, _ jobs.Options) bool { return c.QueryJobs == 8 })},
		"delete_jobs":    {honoured("delete_jobs = 2", func(_ tracker.Config, o jobs.Options) bool { return o.DeleteWorkers == 2 })},
		"replicate_jobs": {honoured("replicate_jobs = 3", func(_ tracker.Config, o jobs.Options) bool { return o.ReplicateWorkers == 3 })},
		"fsck_jobs":      {honoured("fsck_jobs = 4", func(_ tracker.Config, o jobs.Options) bool { return o.FsckWorkers == 4 })},
		"reaper_jobs": {
			honoured("reaper_jobs = 0", func(_ tracker.Config, o jobs.Options) bool { return o.NoReaper }),
			honoured("reaper_jobs = 1", func(_ tracker.Config, o jobs.Options) bool { return !o.NoReaper }),
			refusedWith("reaper_jobs = 2", "use 1 (or 0 for none)"),
		},
		"job_master": {honoured("job_master = 0", func(_ tracker.Config, o jobs.Options) bool { return o.NoJobMaster })},
		"monitor_jobs": {
			honoured("monitor_jobs = 1", func(tracker.Config, jobs.Options) bool { return true }),
			refusedWith("monitor_jobs = 2", "exactly one monitor"),
		},
		"min_free_space": {honoured("min_free_space = 500", func(c tracker.Config, o jobs.Options) bool {
			return c.MinFreeSpace == 500 && o.Settings.MinFreeMB == 500
		})},
		"max_disk_age": {refusedWith("max_disk_age = 5", "nothing uses it")},
		"max_handles": {
			honoured("max_handles = 0", func(tracker.Config, jobs.Options) bool { return true }),
			refusedWith("max_handles = 100", "ulimit -n"),
		},
		"debug":   {honoured("debug = 1", func(c tracker.Config, _ jobs.Options) bool { return c.Debug == 1 })},
		"pidfile": {honoured("pidfile = /run/m.pid", func(c tracker.Config, _ jobs.Options) bool { return c.PidFile == "/run/m.pid" })},
		"mogstored_stream_port": {
			honoured("mogstored_stream_port = 7600", func(_ tracker.Config, o jobs.Options) bool { return o.StreamPort == 7600 }),
			honoured("mogstored_stream_port = 0", func(_ tracker.Config, o jobs.Options) bool { return o.StreamPort == 0 }),
		},
		"default_mindevcount": {honoured("default_mindevcount = 3", func(c tracker.Config, o jobs.Options) bool {
			return c.DefaultMinDevCount == 3 && o.Settings.DefaultMinDevCount == 3
		})},
		"node_timeout": {honoured("node_timeout = 3", func(c tracker.Config, o jobs.Options) bool {
			return c.NodeTimeout == 3*time.Second && o.Nodes.NodeTimeout == 3*time.Second
		})},
		"conn_timeout": {honoured("conn_timeout = 4", func(c tracker.Config, o jobs.Options) bool {
			return c.ConnTimeout == 4*time.Second && o.Nodes.ConnTimeout == 4*time.Second
		})},
		"conn_pool_size": {honoured("conn_pool_size = 5", func(c tracker.Config, o jobs.Options) bool {
			return c.ConnPoolSize == 5 && o.Nodes.PoolSize == 5
		})},
		"rebalance_ignore_missing": {honoured("rebalance_ignore_missing = 1", func(_ tracker.Config, o jobs.Options) bool { return o.RebalanceIgnoreMissing })},
		"repl_use_get_port":        {honoured("repl_use_get_port = 1", func(_ tracker.Config, o jobs.Options) bool { return o.ReplUseGetPort })},
		"local_network": {
			honoured("local_network =", func(tracker.Config, jobs.Options) bool { return true }),
			refusedWith("local_network = 10.0.0.0/8", "altip/altmask"),
		},
		"no_schema_check": {
			honoured("no_schema_check = 0", func(tracker.Config, jobs.Options) bool { return true }),
			refusedWith("no_schema_check = 1", "always checks the schema"),
		},
		"plugins": {refusedWith("plugins = FilePaths", "cannot be loaded")},
		"user":    {honoured("user = nobody", func(c tracker.Config, _ jobs.Options) bool { return c.User == "nobody" })},
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	// The table's lines read "//   - key, key: outcome".
	inTable := map[string]bool{}
	for _, l := range strings.Split(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(l, "//   - "); ok {
			keys, _, _ := strings.Cut(rest, ":")
			for _, k := range strings.Split(keys, ", ") {
				inTable[k] = true
			}
		}
	}
	known := map[string]bool{}
	for _, k := range tracker.ConfigKeys() {
		known[k] = true
	}
	for _, key := range originalKeys {
		if !known[key] {
			t.Errorf("%s: not a known key (an unknown key is an error, but the original's keys must each have a documented outcome)", key)
		}
		if !inTable[key] {
			t.Errorf("%s: missing from the key table in the package doc", key)
		}
		kcs, ok := cases[key]
		if !ok {
			t.Errorf("%s: no test case", key)
			continue
		}
		for _, kc := range kcs {
			c, err := tracker.ParseConfig(strings.NewReader(kc.line + "\n"))
			if err == nil {
				err = c.Validate()
			}
			if kc.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), kc.refusal) || !strings.Contains(err.Error(), "refused") {
					t.Errorf("%q: %v; want it refused, saying %q", kc.line, err, kc.refusal)
				}
				continue
			}
			if err != nil {
				t.Errorf("%q: %v; want it honoured", kc.line, err)
				continue
			}
			if !kc.check(c, tracker.JobsOptions(c)) {
				t.Errorf("%q: accepted but the value did not reach where it is used", kc.line)
			}
		}
	}
	// cache_ttl is not the original's, but a memcache TTL of an hour must
	// not silently become an hour-long namespace cache.
	if _, err := tracker.ParseConfig(strings.NewReader("cache_ttl = 3600\n")); !errors.Is(err, tracker.ErrRefused) || !strings.Contains(err.Error(), "namespace_cache_ttl") {
		t.Errorf("cache_ttl: %v; want it refused, naming namespace_cache_ttl", err)
	}
	// Refusals hold on the command line too.
	m := &tracker.Main{Environ: []string{}, Stderr: &strings.Builder{}}
	for _, args := range [][]string{{"-s", "--no_schema_check"}, {"-s", "--max_disk_age", "5"}, {"-s", "--local_network", "10.0.0.0/8"}} {
		if _, err := m.LoadConfig(args); !errors.Is(err, tracker.ErrRefused) && (err == nil || !strings.Contains(err.Error(), "refused")) {
			t.Errorf("%q: %v; want it refused", args, err)
		}
	}
}
