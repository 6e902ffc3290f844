package tracker_test

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/tracker"
)

func TestDefaultConfig(t *testing.T) {
	c := tracker.DefaultConfig()
	if got := c.ListenAddrs(); !reflect.DeepEqual(got, []string{"0.0.0.0:7001"}) {
		t.Errorf("default listen %v; want [0.0.0.0:7001]", got)
	}
	// MogileFS::Config::load_config defaults.
	if c.QueryJobs != 20 || c.DeleteJobs != 1 || c.ReplicateJobs != 1 || c.FsckJobs != 1 || c.ReaperJobs != 1 ||
		!c.JobMaster || c.MinFreeSpace != 100 || c.MogstoredStreamPort != 7501 ||
		c.DefaultMinDevCount != 2 || c.NodeTimeout != 2*time.Second || c.ConnTimeout != 2*time.Second || c.ConnPoolSize != 20 {
		t.Errorf("defaults differ from the original: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

func TestParseConfig(t *testing.T) {
	in := `# mogilefsd.conf
db_dsn = DBI:mysql:mogilefs;host=db1
db_user = mogile
db_pass=
listen = 127.0.0.1:7001, 10.0.0.1
conf_port 7010
   query_jobs = 8
listener_jobs = 12
replicate_jobs = 3
node_timeout = 1.5
job_master = 0

no_schema_check = 0
`
	c, err := tracker.ParseConfig(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if c.DBDSN != "DBI:mysql:mogilefs;host=db1" || c.DBUser != "mogile" || !c.DBPassSet || c.DBPass != "" {
		t.Errorf("db keys: %+v", c)
	}
	if got := c.ListenAddrs(); !reflect.DeepEqual(got, []string{"127.0.0.1:7001", "10.0.0.1:7010"}) {
		t.Errorf("listen %v", got)
	}
	// listener_jobs, the old name, wins as in load_config.
	if c.QueryJobs != 12 || c.ReplicateJobs != 3 || c.NodeTimeout != 1500*time.Millisecond || c.JobMaster {
		t.Errorf("parsed %+v", c)
	}
	d, err := c.StoreDSN()
	if err != nil || d.Driver != "mysql" || d.Host != "db1" || d.User != "mogile" || d.Password != "" {
		t.Errorf("StoreDSN %+v, %v", d, err)
	}
}

func TestParseConfig_Errors(t *testing.T) {
	for in, want := range map[string]string{
		"db_dsn = x\nbogus_key = 1\n":    "config line 2: unknown key \"bogus_key\"",
		"\n\n=== nonsense\n":             "config line 3: malformed",
		"\nquery_jobs = many\n":          "config line 2: query_jobs: \"many\" is not an integer",
		"listen = 127.0.0.1:99999\n":     "bad port",
		"db_dsn = nodriver\n":            "db_dsn",
		"query_jobs = 0\n":               "query_jobs: must be at least 1",
		"plugins = FilePaths\n":          "plugins",
		"default_mindevcount = 0\n":      "default_mindevcount",
		"job_master = perhaps\n":         "not a boolean",
		"node_timeout = soon\n":          "not a number of seconds",
		"conf_port = 0\n":                "conf_port",
		"listen = bad host name!:7001\n": "bad host",
	} {
		c, err := tracker.ParseConfig(strings.NewReader(in))
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v; want it to mention %q", in, err, want)
		}
	}
}

// Precedence: flags > MOGILEFSD_* environment > file > defaults.
func TestMain_LoadConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "mogilefsd.conf")
	os.WriteFile(conf, []byte("db_dsn = sqlite:///file.db\ndb_user = fileuser\ndb_pass = filepass\nquery_jobs = 5\nreplicate_jobs = 4\nlisten = 127.0.0.1:7100\n"), 0o644)
	env := []string{"MOGILEFSD_DB_USER=envuser", "MOGILEFSD_QUERY_JOBS=6", "PATH=/bin"}
	m := &tracker.Main{Environ: env, Stderr: &bytes.Buffer{}}

	c, err := m.LoadConfig([]string{"--config", conf})
	if err != nil {
		t.Fatal(err)
	}
	if c.DBDSN != "sqlite:///file.db" || c.DBUser != "envuser" || c.DBPass != "filepass" || c.QueryJobs != 6 || c.ReplicateJobs != 4 {
		t.Errorf("file+env: %+v", c)
	}
	c, err = m.LoadConfig([]string{"-c", conf, "--dsn", "sqlite:///flag.db", "--dbuser", "flaguser", "--dbpass", "--workers", "7",
		"--listen", "127.0.0.1:7200", "-l", "127.0.0.2", "--no-job_master", "-d", "-d"})
	if err != nil {
		t.Fatal(err)
	}
	if c.DBDSN != "sqlite:///flag.db" || c.DBUser != "flaguser" || !c.DBPassSet || c.DBPass != "" || c.QueryJobs != 7 || c.JobMaster || c.Debug != 2 {
		t.Errorf("flags: %+v", c)
	}
	if got := c.ListenAddrs(); !reflect.DeepEqual(got, []string{"127.0.0.1:7200", "127.0.0.2:7001"}) {
		t.Errorf("flag listen: %v", got)
	}
	// --dbpass= and --dbpass with a value.
	c, err = m.LoadConfig([]string{"-s", "--dbpass=", "--dsn", "sqlite:///x.db"})
	if err != nil || !c.DBPassSet || c.DBPass != "" {
		t.Errorf("--dbpass=: %+v, %v", c, err)
	}
	plain := &tracker.Main{Environ: []string{}, Stderr: &bytes.Buffer{}}
	c, err = plain.LoadConfig([]string{"--skipconfig", "--dbpass", "s3cret", "--dsn", "postgres://u:old@h/db"})
	if err != nil || c.DBPass != "s3cret" {
		t.Fatalf("--dbpass value: %+v, %v", c, err)
	}
	d, _ := c.StoreDSN()
	if d.User != "u" || d.Password != "s3cret" {
		t.Errorf("db_pass not applied to DSN: %+v", d)
	}
	// --skipconfig ignores the file.
	c, err = m.LoadConfig([]string{"--skipconfig", "--config", conf})
	if err != nil || c.ReplicateJobs != 1 {
		t.Errorf("--skipconfig read the file: %+v, %v", c, err)
	}
	// Mistakes.
	if _, err := m.LoadConfig([]string{"--bogus"}); !errors.Is(err, tracker.ErrUsage) {
		t.Errorf("unknown flag: %v", err)
	}
	if _, err := m.LoadConfig([]string{"--config", filepath.Join(dir, "missing.conf")}); err == nil {
		t.Errorf("missing --config file accepted")
	}
	bad := &tracker.Main{Environ: []string{"MOGILEFSD_NO_SUCH_KEY=1"}, Stderr: &bytes.Buffer{}}
	if _, err := bad.LoadConfig([]string{"-s"}); err == nil || !strings.Contains(err.Error(), "MOGILEFSD_NO_SUCH_KEY") {
		t.Errorf("unknown env key: %v", err)
	}
}

func TestConfig_StoreDSNDefaults(t *testing.T) {
	c := tracker.DefaultConfig()
	c.DBDSN = "DBI:mysql:mogilefs"
	d, err := c.StoreDSN()
	if err != nil || d.User != "mogile" {
		t.Errorf("mysql without user: %+v, %v; want the original's default user mogile", d, err)
	}
	if want := c.QueryJobs + 1 + 1 + 1 + 1 + 2; d.MaxIdleConns != want || d.MaxOpenConns != 0 {
		t.Errorf("pool of a default tracker: idle %d, open %d; want %d (query_jobs + workers), no open limit",
			d.MaxIdleConns, d.MaxOpenConns, want)
	}
	c.QueryJobs = 50
	if d, err := c.StoreDSN(); err != nil || d.MaxIdleConns != 56 {
		t.Errorf("pool with query_jobs 50: idle %d, %v; want 56", d.MaxIdleConns, err)
	}
	c.DBDSN = "DBI:mysql:mogilefs;max_idle_conns=3"
	if d, err := c.StoreDSN(); err != nil || d.MaxIdleConns != 3 {
		t.Errorf("db_dsn with max_idle_conns=3: idle %d, %v; want the DSN's 3", d.MaxIdleConns, err)
	}
	c.DBDSN = "DBI:mysql:mogilefs;max_open_conns=10"
	if d, err := c.StoreDSN(); err != nil || d.MaxIdleConns != 10 || d.MaxOpenConns != 10 {
		t.Errorf("db_dsn with max_open_conns=10: idle %d, open %d, %v; want 10, 10", d.MaxIdleConns, d.MaxOpenConns, err)
	}
	c.DBDSN = ""
	dir := filepath.Join(t.TempDir(), "var", "lib", "mogilefs")
	defer tracker.SetDefaultDSNFunc(func() string { return tracker.DefaultDSNIn(dir) })()
	d, err = c.StoreDSN()
	if err != nil || d.Driver != "sqlite" || d.Database != filepath.Join(dir, "mogilefs.db") {
		t.Errorf("no db_dsn: %+v, %v; want embedded SQLite in %s", d, err, dir)
	}
	// An unwritable directory falls back to the working directory.
	blocker := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocker, nil, 0o644)
	wd, _ := os.Getwd()
	if got := tracker.DefaultDSNIn(filepath.Join(blocker, "sub")); got != "sqlite://"+filepath.Join(wd, "mogilefs.db") {
		t.Errorf("fallback DSN %q", got)
	}
}

// lock_dsn, from the file or --lock_dsn, becomes the Store DSN's Locks; a
// lock_dsn that does not parse is refused at start, naming the key.
func TestConfig_LockDSN(t *testing.T) {
	c, err := tracker.ParseConfig(strings.NewReader("db_dsn = sqlite:///x.db\nlock_dsn = etcd://10.0.0.1:2379,10.0.0.2/locks?ttl=7\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.StoreDSN()
	if err != nil || d.Locks == nil || d.Locks.Driver != "etcd" || len(d.Locks.AllHosts()) != 2 || d.Locks.Path != "/locks" {
		t.Fatalf("StoreDSN with lock_dsn: %+v, %v; want Locks = the etcd DSN", d, err)
	}
	m := &tracker.Main{Stderr: &strings.Builder{}}
	c, err = m.LoadConfig([]string{"-s", "--dsn", "sqlite:///x.db", "--lock_dsn", "etcd://127.0.0.1:2379/p"})
	if err != nil || c.LockDSN != "etcd://127.0.0.1:2379/p" {
		t.Errorf("--lock_dsn: %q, %v", c.LockDSN, err)
	}
	c.LockDSN = "not a url"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "lock_dsn") {
		t.Errorf("Validate with lock_dsn %q = %v; want an error naming lock_dsn", c.LockDSN, err)
	}
	c.LockDSN = ""
	if d, err := c.StoreDSN(); err != nil || d.Locks != nil {
		t.Errorf("no lock_dsn: Locks %+v, %v; want the database's own", d.Locks, err)
	}
}

// admin_networks and client_networks are read alike: file, environment,
// flag, each winning over the one before.
func TestConfig_NetworkKeys(t *testing.T) {
	for _, key := range []string{"admin_networks", "client_networks"} {
		get := func(c tracker.Config) []netip.Prefix {
			if key == "admin_networks" {
				return c.AdminNetworks
			}
			return c.ClientNetworks
		}
		want := []netip.Prefix{netip.MustParsePrefix("10.0.2.0/24"), netip.MustParsePrefix("::1/128")}
		c, err := tracker.ParseConfig(strings.NewReader(key + " = 10.0.2.0/24, ::1\n"))
		if err != nil || !slices.Equal(get(c), want) {
			t.Errorf("file %s: %v, %v; want %v", key, get(c), err, want)
		}
		if _, err := tracker.ParseConfig(strings.NewReader(key + " = 10.0.0.0/33\n")); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("file %s = 10.0.0.0/33: %v; want an error naming the key", key, err)
		}
		env := "MOGILEFSD_" + strings.ToUpper(key) + "=10.0.2.0/24,::1"
		m := &tracker.Main{Environ: []string{env}, Stderr: &strings.Builder{}}
		c, err = m.LoadConfig([]string{"-s", "--dsn", "sqlite:///x.db"})
		if err != nil || !slices.Equal(get(c), want) {
			t.Errorf("%s: %v, %v; want %v", env, get(c), err, want)
		}
		c, err = m.LoadConfig([]string{"-s", "--dsn", "sqlite:///x.db", "--" + key, "127.0.0.1"})
		if err != nil || !slices.Equal(get(c), []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}) {
			t.Errorf("--%s 127.0.0.1 over %s: %v, %v; want the flag's", key, env, get(c), err)
		}
	}
}
