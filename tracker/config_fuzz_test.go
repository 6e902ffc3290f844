package tracker_test

import (
	"strings"
	"testing"

	"github.com/gomogile/gomogile/tracker"
)

// FuzzParseConfig: no config file, however broken, panics the parser or
// the validator, and an accepted file's values come back on a second parse
// of the same file.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"db_dsn = DBI:mysql:mogilefs;host=127.0.0.1\ndb_user = mogile\nlisten = 127.0.0.1:7001, [::1]\n",
		"query_jobs 20\nnode_timeout = 2.5\njob_master = 0\n# comment\n",
		"admin_networks = 127.0.0.0/8, ::1\nline_timeout = 30\nmax_conns_per_ip = 200\nidle_timeout = 0\n",
		"db_pass =\n", "plugins = a,b\n", "x", "conf_port = 99999999999999999999\n", "line_timeout = -1\n",
		"admin_networks = 10.0.0.0/33\n", "sleep_max = 1e308\n", "client_networks = 10.0.2.0/24, ::1\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, file string) {
		cfg, err := tracker.ParseConfig(strings.NewReader(file))
		if err != nil {
			return
		}
		_ = cfg.Validate()
		_ = cfg.ListenAddrs()
		again, err := tracker.ParseConfig(strings.NewReader(file))
		if err != nil {
			t.Fatalf("second parse of an accepted file failed: %v", err)
		}
		if again.DBDSN != cfg.DBDSN || again.QueryJobs != cfg.QueryJobs || len(again.AdminNetworks) != len(cfg.AdminNetworks) ||
			len(again.ClientNetworks) != len(cfg.ClientNetworks) {
			t.Fatalf("two parses of one file differ: %+v vs %+v", cfg, again)
		}
	})
}
