package mogstored

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	// The original's conf/mogstored.conf, with comments and spacing.
	cfg, err := ParseConfig(strings.NewReader(`
# storage node
maxconns = 10000
httplisten = 0.0.0.0:7500
mgmtlisten=0.0.0.0:7501   # trailing comment
   docroot   =   /var/mogdata
`))
	if err != nil {
		t.Fatal(err)
	}
	def := DefaultConfig()
	if !reflect.DeepEqual(cfg, def) {
		t.Errorf("original sample parsed to %+v, want the defaults %+v", cfg, def)
	}

	cfg, err = ParseConfig(strings.NewReader(`httplisten = 10.0.0.5:8500
mgmtlisten = 8501
docroot = /data/mog root
maxconns = 50
iostat = 0
daemonize = 1
pidfile = /run/mogstored.pid
server = perlbal
serverbin = /usr/sbin/whatever
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPListen != "10.0.0.5:8500" || cfg.MgmtListen != "0.0.0.0:8501" || cfg.DocRoot != "/data/mog root" ||
		cfg.MaxConns != 50 || !cfg.NoIOStat || cfg.UsageInterval != 10*time.Second {
		t.Errorf("parsed %+v", cfg)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"docroot = /x\nbogus = 1\n", `line 2: unknown config setting "bogus"`},
		{"docroot /x\n", "line 1: unknown config syntax"},
		{"docroot =\n", "line 1: unknown config syntax"},
		{"SERVER max_connections = 10\n", "old Perlbal syntax"},
		{"CREATE SERVICE mogstored\n", "old Perlbal syntax"},
		{"maxconns = lots\n", `maxconns "lots"`},
		{"maxconns = 0\n", `maxconns "0"`},
		{"maxconns = -5\n", `maxconns "-5"`},
		{"httplisten = nowhere\n", `httplisten "nowhere"`},
		{"mgmtlisten = 1.2.3.4:99999\n", `mgmtlisten "1.2.3.4:99999"`},
		{"iostat = false-ish\n", "iostat"},
		{"daemonize = maybe\n", "daemonize"},
		{"server = lighttpd\n", "only the built-in HTTP server"},
	} {
		_, err := ParseConfig(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseConfig(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for _, c := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.DocRoot = "" }, "docroot is empty"},
		{func(c *Config) { c.HTTPListen = "localhost" }, "httplisten"},
		{func(c *Config) { c.MgmtListen = "1.2.3.4:x" }, "mgmtlisten"},
		{func(c *Config) { c.MgmtListen = c.HTTPListen }, "both"},
		{func(c *Config) { c.MaxConns = -1 }, "maxconns"},
		{func(c *Config) { c.UsageInterval = -time.Second }, "usage interval"},
		{func(c *Config) { c.ShutdownTimeout = -time.Second }, "shutdown timeout"},
	} {
		cfg := DefaultConfig()
		c.mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate = %v, want %q", err, c.want)
		}
	}
	// Two ":0" listeners are fine: each gets its own port.
	cfg := DefaultConfig()
	cfg.HTTPListen, cfg.MgmtListen = "127.0.0.1:0", "127.0.0.1:0"
	if err := cfg.Validate(); err != nil {
		t.Errorf("two :0 listeners: %v", err)
	}
}

func TestNewFillsDefaults(t *testing.T) {
	s := New(Config{DocRoot: "/x"})
	c := s.Config()
	if c.HTTPListen != DefaultHTTPListen || c.MgmtListen != DefaultMgmtListen || c.MaxConns != DefaultMaxConns ||
		c.UsageInterval != DefaultUsageInterval || c.ShutdownTimeout != DefaultShutdownTimeout || c.Logger == nil {
		t.Errorf("New(Config{DocRoot}) = %+v", c)
	}
	if s.HTTPAddr() != "" || s.MgmtAddr() != "" {
		t.Error("addresses before Open")
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close before Open: %v", err)
	}
}
