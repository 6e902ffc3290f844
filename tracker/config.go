package tracker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/internal/logsetup"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
	"github.com/gomogile/gomogile/tracker/query"
)

// DefaultConfigPath is where mogilefsd looks for its configuration when
// --config is not given (MogileFS::Config's $DEFAULT_CONFIG). A missing
// default file is not an error; a missing --config file is.
const DefaultConfigPath = "/etc/mogilefs/mogilefsd.conf"

// DefaultSQLiteDir is where the embedded SQLite database lives when no
// db_dsn is configured at all. When that directory cannot be created or
// written, the database goes to ./mogilefs.db in the working directory
// instead (see DefaultDSN). The original defaulted to DBI:mysql:mogilefs;
// gomogile defaults to a database that needs no server.
const DefaultSQLiteDir = "/var/lib/mogilefs"

// Config is the tracker's configuration: the original mogilefsd.conf keys
// (same names, same defaults) plus a few of gomogile's own, marked below.
//
// Sources, highest precedence first: command-line flags, environment
// variables MOGILEFSD_<KEY> (the key upper-cased: MOGILEFSD_DB_DSN,
// MOGILEFSD_DB_USER, MOGILEFSD_DB_PASS, MOGILEFSD_LISTEN, …), the config
// file, defaults.
type Config struct {
	DBDSN  string // db_dsn; "" = embedded SQLite (DefaultDSN)
	DBUser string // db_user; overrides the DSN's user when set
	DBPass string // db_pass; overrides the DSN's password when DBPassSet
	// DBPassSet records that db_pass was given, even as "" (--dbpass with no
	// value), so an empty password can override one in the DSN.
	DBPassSet bool
	// LockDSN is lock_dsn: the outside lock service the tracker keeps its
	// named locks in (etcd://host1:2379,host2:2379/prefix, see package
	// store/etcd); "" = the database's own locks. Every tracker on one
	// database must name the same service and prefix.
	LockDSN string

	Listen   []string // listen: host[:port], comma-separated in the file
	ConfPort int      // conf_port: port for listen entries without one (7001)

	QueryJobs     int  // query_jobs (alias listener_jobs; --workers): concurrent requests (20)
	DeleteJobs    int  // delete_jobs (1)
	ReplicateJobs int  // replicate_jobs (1)
	FsckJobs      int  // fsck_jobs (1)
	ReaperJobs    int  // reaper_jobs: 1 runs the reaper, 0 none (1)
	JobMaster     bool // job_master (--no-job_master): run background workers (true)

	MinFreeSpace           int64 // min_free_space, MB a device keeps free (100)
	Debug                  int   // debug (-d, repeatable)
	PidFile                string
	MogstoredStreamPort    int           // mogstored_stream_port (7501)
	DefaultMinDevCount     int           // default_mindevcount (2)
	NodeTimeout            time.Duration // node_timeout, seconds (2)
	ConnTimeout            time.Duration // conn_timeout, seconds (2)
	ConnPoolSize           int           // conn_pool_size (20)
	RebalanceIgnoreMissing bool          // rebalance_ignore_missing
	ReplUseGetPort         bool          // repl_use_get_port
	User                   string        // user: drop privileges to this user (root only)
	Daemonize              bool          // daemonize (-D)
	Plugins                []string      // plugins: Perl plugins; refused when set (none exist in Go)

	// gomogile's own keys.

	// IdleTimeout closes a client connection silent this long between
	// requests (idle_timeout, seconds; 0 = never, the default: long-lived
	// Perl clients keep tracker connections open between requests, as the
	// original allowed). A partial request line is bounded by LineTimeout.
	IdleTimeout time.Duration
	// WriteTimeout bounds writing one reply (write_timeout, seconds); the
	// original closed slow writers after 120s.
	WriteTimeout time.Duration
	// ShutdownTimeout bounds how long Close waits for requests in flight
	// (shutdown_timeout, seconds).
	ShutdownTimeout time.Duration
	// MaxConns bounds open client connections (max_conns; 0 = no bound).
	MaxConns int
	// NamespaceCacheTTL is how long domains, classes, hosts and devices
	// are cached, by the query commands and the workers alike
	// (namespace_cache_ttl, seconds).
	NamespaceCacheTTL time.Duration
	// RequestTimeout bounds one request's work, database and storage
	// nodes included (request_timeout, seconds); sleep is capped by it.
	RequestTimeout time.Duration
	// SleepMax caps the sleep command (sleep_max, seconds; 0 = no cap, as
	// in the original; request_timeout does not bound sleep).
	SleepMax time.Duration

	// Protections against hostile clients (see the README's "Security").

	// AdminNetworks are the networks allowed to use the commands that
	// change the cluster's shape or its files' placement and the "!" admin
	// commands, and every other command (admin_networks: comma-separated
	// addresses or address/bits; empty = everyone, as in the original, or
	// ClientNetworks when that is set). The package doc lists each
	// command's category.
	AdminNetworks []netip.Prefix
	// ClientNetworks are the networks allowed to use an application's
	// commands (create_open, get_paths, delete, …) and the read-only ones
	// (client_networks, same form; empty = everyone). AdminNetworks may use
	// them too.
	ClientNetworks []netip.Prefix
	// LineTimeout bounds how long a request line may take to arrive once
	// its first byte has (line_timeout, seconds; 0 = no bound).
	LineTimeout time.Duration
	// MaxConnsPerIP bounds open client connections from one remote address
	// (max_conns_per_ip; 0 = no bound).
	MaxConnsPerIP int
	// MaxOpenUploadsPerIP bounds the uploads one remote address may have
	// open on this tracker, create_open without its create_close
	// (max_open_uploads_per_ip; 0 = no bound). See query/uploads.go.
	MaxOpenUploadsPerIP int
	// MaxOpenUploads bounds the open uploads of all this tracker's
	// clients together (max_open_uploads; 0 = no bound).
	MaxOpenUploads int
	// TempFileTTL is how long an upload may stay open before the reaper
	// removes its tempfile and queues its blobs for deletion (tempfile_ttl,
	// seconds; 3600, the original's). An abandoned upload's slot comes back
	// then.
	TempFileTTL time.Duration
	// LogLevel is debug, info, warn or error (log_level); "" = info, or
	// debug with -d.
	LogLevel string
	// LogFormat is text or json (log_format; "" = text).
	LogFormat string
	// LogFile is where the log goes (log_file; appended to). "" = stderr,
	// or syslog for a tracker detached with -D, as the original.
	LogFile string
	// StatusListen is the address of the HTTP status listener (metrics,
	// health, pprof and the status page; status_listen, e.g.
	// 127.0.0.1:7080). "" = none, the default.
	StatusListen string

	// Testing and FakeIOUtil are the original's test rig, which it read
	// from its environment: TESTING (any value Perl calls true) makes the
	// workers act as under its test suite, and with it T_FAKE_IO_DEV<N>
	// gives device N a fixed I/O utilisation. No config key sets them;
	// Main fills them from its Environ, so library code reads no
	// environment variable.
	Testing    bool
	FakeIOUtil map[int]string
}

// The default upload limits are far above what ordinary clients hold open:
// a MogileFS::Client process has one open upload per file it is writing,
// so even a host (or a NAT gateway) running hundreds of parallel uploads,
// each as long as its file takes, stays under 1,000; 10,000 open uploads
// are about 2 MB of tempfile rows per tracker.
const (
	DefaultMaxOpenUploadsPerIP = 1000
	DefaultMaxOpenUploads      = 10000
)

// DefaultConfig returns the defaults of MogileFS::Config::load_config (and
// ours for gomogile's own keys).
func DefaultConfig() Config {
	return Config{
		ConfPort:            7001,
		QueryJobs:           20,
		DeleteJobs:          1,
		ReplicateJobs:       1,
		FsckJobs:            1,
		ReaperJobs:          1,
		JobMaster:           true,
		MinFreeSpace:        100,
		MogstoredStreamPort: 7501,
		DefaultMinDevCount:  2,
		NodeTimeout:         2 * time.Second,
		ConnTimeout:         2 * time.Second,
		ConnPoolSize:        20,
		LineTimeout:         30 * time.Second,
		WriteTimeout:        120 * time.Second,
		ShutdownTimeout:     10 * time.Second,
		MaxConns:            10000,
		NamespaceCacheTTL:   3 * time.Second,
		SleepMax:            0,
		RequestTimeout:      30 * time.Second,
		MaxOpenUploadsPerIP: DefaultMaxOpenUploadsPerIP,
		MaxOpenUploads:      DefaultMaxOpenUploads,
		TempFileTTL:         time.Hour,
	}
}

// ListenAddrs returns the listen addresses with conf_port added where an
// entry has no port; with none configured, 0.0.0.0:conf_port.
func (c Config) ListenAddrs() []string {
	in := c.Listen
	if len(in) == 0 {
		in = []string{"0.0.0.0"}
	}
	out := make([]string, 0, len(in))
	for _, l := range in {
		if _, _, err := net.SplitHostPort(l); err == nil {
			out = append(out, l)
		} else {
			out = append(out, net.JoinHostPort(strings.Trim(l, "[]"), strconv.Itoa(c.ConfPort)))
		}
	}
	return out
}

// Validate reports every invalid setting at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{key}, a...)...))
	}
	if c.DBDSN != "" {
		if _, err := store.ParseDSN(c.DBDSN); err != nil {
			bad("db_dsn", "%v", err)
		}
	}
	if c.LockDSN != "" {
		if _, err := store.ParseLockDSN(c.LockDSN); err != nil {
			bad("lock_dsn", "%v", err)
		}
	}
	if c.ConfPort <= 0 || c.ConfPort > 65535 {
		bad("conf_port", "%d is not a TCP port", c.ConfPort)
	}
	for _, a := range c.ListenAddrs() {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			bad("listen", "%q: %v", a, err)
			continue
		}
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			bad("listen", "%q: bad port", a)
		}
		if host != "" && net.ParseIP(host) == nil && !validHostname(host) {
			bad("listen", "%q: bad host", a)
		}
	}
	if c.StatusListen != "" {
		if _, port, err := net.SplitHostPort(c.StatusListen); err != nil {
			bad("status_listen", "%q: %v", c.StatusListen, err)
		} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			bad("status_listen", "%q: bad port", c.StatusListen)
		}
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"query_jobs", c.QueryJobs}, {"conn_pool_size", c.ConnPoolSize}} {
		if n.v < 1 {
			bad(n.key, "must be at least 1, have %d", n.v)
		}
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"delete_jobs", c.DeleteJobs}, {"replicate_jobs", c.ReplicateJobs}, {"fsck_jobs", c.FsckJobs},
		{"reaper_jobs", c.ReaperJobs}, {"max_conns", c.MaxConns},
		{"max_open_uploads_per_ip", c.MaxOpenUploadsPerIP}, {"max_open_uploads", c.MaxOpenUploads}} {
		if n.v < 0 {
			bad(n.key, "must not be negative, have %d", n.v)
		}
	}
	if c.ReaperJobs > 1 {
		bad("reaper_jobs", "%d refused: gomogile runs one reaper per tracker, and more would only race for the same rows; use 1 (or 0 for none)", c.ReaperJobs)
	}
	if c.QueryJobs > 500 {
		bad("query_jobs", "at most 500, have %d", c.QueryJobs)
	}
	if c.MinFreeSpace < 0 {
		bad("min_free_space", "must not be negative")
	}
	if c.DefaultMinDevCount < 1 {
		bad("default_mindevcount", "must be at least 1")
	}
	if c.MogstoredStreamPort < 0 || c.MogstoredStreamPort > 65535 {
		bad("mogstored_stream_port", "%d is not a TCP port", c.MogstoredStreamPort)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"node_timeout", c.NodeTimeout}, {"conn_timeout", c.ConnTimeout}, {"write_timeout", c.WriteTimeout},
		{"shutdown_timeout", c.ShutdownTimeout}, {"namespace_cache_ttl", c.NamespaceCacheTTL},
		{"request_timeout", c.RequestTimeout}, {"tempfile_ttl", c.TempFileTTL}} {
		if d.v <= 0 {
			bad(d.key, "must be positive")
		}
	}
	if c.IdleTimeout < 0 || c.SleepMax < 0 || c.LineTimeout < 0 || c.MaxConnsPerIP < 0 {
		bad("idle_timeout/sleep_max/line_timeout/max_conns_per_ip", "must not be negative")
	}
	if len(c.Plugins) > 0 {
		bad("plugins", "%q refused: Perl plugins cannot be loaded by gomogile; remove the setting (what a plugin did needs a change to gomogile itself)", c.Plugins)
	}
	return errors.Join(errs...)
}

var hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)

func validHostname(h string) bool { return len(h) <= 253 && hostnameRE.MatchString(h) }

// configLine is the original's file grammar, "key = value" or "key value",
// extended to accept an empty value after '=' (the original refused
// "db_pass =", leaving no way to write an empty password).
var configLine = regexp.MustCompile(`^\s*([\w.]+)(?:\s*=\s*(.*?)|\s+(.+?))\s*$`)

// ParseConfig reads a mogilefsd.conf onto the defaults. Errors name the
// line. Unknown keys are errors, unlike in the original, so a typo is not
// silently ignored.
func ParseConfig(r io.Reader) (Config, error) {
	c := DefaultConfig()
	err := c.applyFile(r)
	return c, err
}

// FileValues reads a config file into key/value pairs (last one wins),
// checking syntax and key names.
func FileValues(r io.Reader) (map[string]string, error) {
	vals := map[string]string{}
	scratch := DefaultConfig() // to check each value where its line is known
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		m := configLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("config line %d: malformed: %q (want \"key = value\")", n, line)
		}
		k, v := m[1], m[2]
		if m[3] != "" {
			v = m[3]
		}
		if _, ok := configKeys[k]; !ok {
			return nil, fmt.Errorf("config line %d: unknown key %q (known: %s)", n, k, strings.Join(ConfigKeys(), ", "))
		}
		if err := scratch.Set(k, v); err != nil {
			return nil, fmt.Errorf("config line %d: %w", n, err)
		}
		vals[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config line %d: %w", n+1, err)
	}
	return vals, nil
}

func (c *Config) applyFile(r io.Reader) error {
	vals, err := FileValues(r)
	if err != nil {
		return err
	}
	return c.applyValues(vals, "config")
}

// applyValues sets keys in a stable order; listener_jobs wins over
// query_jobs as in load_config.
func (c *Config) applyValues(vals map[string]string, source string) error {
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		if k == "listener_jobs" {
			continue
		}
		if err := c.Set(k, vals[k]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", source, err))
		}
	}
	if v, ok := vals["listener_jobs"]; ok {
		if err := c.Set("listener_jobs", v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", source, err))
		}
	}
	return errors.Join(errs...)
}

type keySetter func(c *Config, v string) error

func intKey(f func(*Config) *int) keySetter {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		*f(c) = n
		return nil
	}
}

func secondsKey(f func(*Config) *time.Duration) keySetter {
	return func(c *Config, v string) error {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return fmt.Errorf("%q is not a number of seconds", v)
		}
		*f(c) = time.Duration(x * float64(time.Second))
		return nil
	}
}

// parseBool accepts Perl's notion of truth for config values: "", "0" are
// false, as are the usual words; numbers other than 0 are true.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "off", "no", "n", "f":
		return false, nil
	case "1", "true", "on", "yes", "y", "t":
		return true, nil
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		return n != 0, nil
	}
	return false, fmt.Errorf("%q is not a boolean", v)
}

func boolKey(f func(*Config) *bool) keySetter {
	return func(c *Config, v string) error {
		b, err := parseBool(v)
		if err != nil {
			return err
		}
		*f(c) = b
		return nil
	}
}

// ErrRefused marks a setting gomogile will not run with: one the original
// reads but gomogile cannot honour, so that it is never accepted and then
// silently ignored.
var ErrRefused = errors.New("refused")

// refused is a key refused whatever its value.
func refused(why string) keySetter {
	return func(*Config, string) error { return fmt.Errorf("%w: %s", ErrRefused, why) }
}

// onlyInt, onlyFalse and onlyEmpty accept a key only with the value that
// describes what gomogile does anyway; any other value is refused.
func onlyInt(want int, why string) keySetter {
	return func(_ *Config, v string) error {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n == want {
			return nil
		}
		return fmt.Errorf("%w: %q: %s", ErrRefused, v, why)
	}
}

func onlyFalse(why string) keySetter {
	return func(_ *Config, v string) error {
		if b, err := parseBool(v); err == nil && !b {
			return nil
		}
		return fmt.Errorf("%w: %q: %s", ErrRefused, v, why)
	}
}

func onlyEmpty(why string) keySetter {
	return func(_ *Config, v string) error {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		return fmt.Errorf("%w: %q: %s", ErrRefused, v, why)
	}
}

func networksKey(f func(*Config) *[]netip.Prefix) keySetter {
	return func(c *Config, v string) error {
		nets, err := parseNetworks(v)
		*f(c) = nets
		return err
	}
}

func stringKey(f func(*Config) *string) keySetter {
	return func(c *Config, v string) error { *f(c) = v; return nil }
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// configKeys are the keys the file and MOGILEFSD_* variables accept.
var configKeys = map[string]keySetter{
	"db_dsn":   stringKey(func(c *Config) *string { return &c.DBDSN }),
	"db_user":  stringKey(func(c *Config) *string { return &c.DBUser }),
	"lock_dsn": stringKey(func(c *Config) *string { return &c.LockDSN }),
	"db_pass":  func(c *Config, v string) error { c.DBPass, c.DBPassSet = v, true; return nil },
	"listen": func(c *Config, v string) error {
		c.Listen = splitList(v)
		return nil
	},
	"conf_port":      intKey(func(c *Config) *int { return &c.ConfPort }),
	"query_jobs":     intKey(func(c *Config) *int { return &c.QueryJobs }),
	"listener_jobs":  intKey(func(c *Config) *int { return &c.QueryJobs }),
	"delete_jobs":    intKey(func(c *Config) *int { return &c.DeleteJobs }),
	"replicate_jobs": intKey(func(c *Config) *int { return &c.ReplicateJobs }),
	"fsck_jobs":      intKey(func(c *Config) *int { return &c.FsckJobs }),
	"reaper_jobs":    intKey(func(c *Config) *int { return &c.ReaperJobs }),
	"monitor_jobs":   onlyInt(1, "there is always exactly one monitor (MogileFS 2.73 reads monitor_jobs and ignores it too); remove the setting"),
	"job_master":     boolKey(func(c *Config) *bool { return &c.JobMaster }),
	"min_free_space": func(c *Config, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		c.MinFreeSpace = n
		return nil
	},
	"max_disk_age":             refused("MogileFS 2.73 reads it but nothing uses it, and gomogile has nothing it could mean; remove the setting"),
	"max_handles":              onlyInt(0, "it limits how often MogileFS reuses a database handle before reconnecting; gomogile's connection pool needs no such limit; remove it (for the open-file limit use ulimit -n or systemd's LimitNOFILE)"),
	"debug":                    intKey(func(c *Config) *int { return &c.Debug }),
	"pidfile":                  stringKey(func(c *Config) *string { return &c.PidFile }),
	"mogstored_stream_port":    intKey(func(c *Config) *int { return &c.MogstoredStreamPort }),
	"default_mindevcount":      intKey(func(c *Config) *int { return &c.DefaultMinDevCount }),
	"node_timeout":             secondsKey(func(c *Config) *time.Duration { return &c.NodeTimeout }),
	"conn_timeout":             secondsKey(func(c *Config) *time.Duration { return &c.ConnTimeout }),
	"conn_pool_size":           intKey(func(c *Config) *int { return &c.ConnPoolSize }),
	"rebalance_ignore_missing": boolKey(func(c *Config) *bool { return &c.RebalanceIgnoreMissing }),
	"repl_use_get_port":        boolKey(func(c *Config) *bool { return &c.ReplUseGetPort }),
	"local_network":            onlyEmpty("only the ZoneLocal Perl plugin reads it, and gomogile loads no plugins; give hosts an altip/altmask for clients of another network"),
	"no_schema_check":          onlyFalse("gomogile always checks the schema: it upgrades an older one and will not run on a newer one whose meaning it cannot know; remove the setting"),
	"user":                     stringKey(func(c *Config) *string { return &c.User }),
	"daemonize":                boolKey(func(c *Config) *bool { return &c.Daemonize }),
	"plugins": func(c *Config, v string) error {
		c.Plugins = append(c.Plugins, splitList(v)...)
		return nil
	},
	"idle_timeout":        secondsKey(func(c *Config) *time.Duration { return &c.IdleTimeout }),
	"write_timeout":       secondsKey(func(c *Config) *time.Duration { return &c.WriteTimeout }),
	"shutdown_timeout":    secondsKey(func(c *Config) *time.Duration { return &c.ShutdownTimeout }),
	"max_conns":           intKey(func(c *Config) *int { return &c.MaxConns }),
	"namespace_cache_ttl": secondsKey(func(c *Config) *time.Duration { return &c.NamespaceCacheTTL }),
	"request_timeout":     secondsKey(func(c *Config) *time.Duration { return &c.RequestTimeout }),
	"cache_ttl":           refused("it is not a MogileFS setting (the original's memcache_ttl is a server setting, often an hour, and gomogile uses no memcache); the namespace cache is namespace_cache_ttl"),
	"sleep_max":           secondsKey(func(c *Config) *time.Duration { return &c.SleepMax }),

	// Protections against hostile clients.
	"admin_networks":          networksKey(func(c *Config) *[]netip.Prefix { return &c.AdminNetworks }),
	"client_networks":         networksKey(func(c *Config) *[]netip.Prefix { return &c.ClientNetworks }),
	"line_timeout":            secondsKey(func(c *Config) *time.Duration { return &c.LineTimeout }),
	"max_conns_per_ip":        intKey(func(c *Config) *int { return &c.MaxConnsPerIP }),
	"max_open_uploads_per_ip": intKey(func(c *Config) *int { return &c.MaxOpenUploadsPerIP }),
	"max_open_uploads":        intKey(func(c *Config) *int { return &c.MaxOpenUploads }),
	"tempfile_ttl":            secondsKey(func(c *Config) *time.Duration { return &c.TempFileTTL }),
	"log_level":               oneOfKey(func(c *Config) *string { return &c.LogLevel }, logsetup.Levels...),
	"log_format":              oneOfKey(func(c *Config) *string { return &c.LogFormat }, logsetup.Formats...),
	"log_file":                stringKey(func(c *Config) *string { return &c.LogFile }),
	"status_listen":           stringKey(func(c *Config) *string { return &c.StatusListen }),
}

// ConfigKeys lists the accepted keys, sorted.
func ConfigKeys() []string {
	out := make([]string, 0, len(configKeys))
	for k := range configKeys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Set sets one key from its text form. Unknown keys are an error.
func (c *Config) Set(key, value string) error {
	f, ok := configKeys[key]
	if !ok {
		return fmt.Errorf("unknown key %q", key)
	}
	if err := f(c, value); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

// EnvPrefix prefixes the environment variables that override file values:
// MOGILEFSD_DB_DSN overrides db_dsn, and so on for every key.
const EnvPrefix = "MOGILEFSD_"

// EnvValues collects MOGILEFSD_* variables from environ ("K=V" strings).
// An unknown MOGILEFSD_ variable is an error, as an unknown file key is.
func EnvValues(environ []string) (map[string]string, error) {
	vals := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		key := strings.ToLower(strings.TrimPrefix(k, EnvPrefix))
		if key == "daemonized" { // our own re-exec marker, not a setting
			continue
		}
		if _, ok := configKeys[key]; !ok {
			return nil, fmt.Errorf("environment: %s: unknown key %q", k, key)
		}
		vals[key] = v
	}
	return vals, nil
}

// DefaultDSN picks the embedded SQLite database used when no db_dsn is
// configured: DefaultSQLiteDir/mogilefs.db when that directory exists or can
// be created and is writable, else mogilefs.db in the working directory.
func DefaultDSN() string { return defaultDSN(DefaultSQLiteDir) }

// defaultDSNFunc is DefaultDSN, replaceable by tests so they do not create
// DefaultSQLiteDir on the machine running them.
var defaultDSNFunc = DefaultDSN

func defaultDSN(dir string) string {
	if err := os.MkdirAll(dir, 0o750); err == nil {
		if f, err := os.CreateTemp(dir, ".probe-*"); err == nil {
			name := f.Name()
			f.Close()
			os.Remove(name)
			return "sqlite://" + filepath.Join(dir, "mogilefs.db")
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "sqlite:mogilefs.db"
	}
	return "sqlite://" + filepath.Join(wd, "mogilefs.db")
}

// StoreDSN parses db_dsn (or DefaultDSN) and applies db_user, db_pass and
// lock_dsn.
// A server backend without any user gets "mogile", the original's default
// db_user. Unless db_dsn sets max_idle_conns, the pool keeps DBConcurrency
// connections idle, so a busy tracker never opens a connection per call.
func (c Config) StoreDSN() (*store.DSN, error) {
	s := c.DBDSN
	if s == "" {
		s = defaultDSNFunc()
	}
	d, err := store.ParseDSN(s)
	if err != nil {
		return nil, fmt.Errorf("db_dsn: %w", err)
	}
	if c.DBUser != "" {
		d.User = c.DBUser
	}
	if c.DBPassSet {
		d.Password = c.DBPass
	}
	if d.User == "" && d.Driver != "sqlite" {
		d.User = "mogile"
	}
	if c.LockDSN != "" {
		l, err := store.ParseLockDSN(c.LockDSN)
		if err != nil {
			return nil, fmt.Errorf("lock_dsn: %w", err)
		}
		d.Locks = l
	}
	if d.MaxIdleConns == 0 {
		d.MaxIdleConns = c.DBConcurrency()
		if d.MaxOpenConns > 0 {
			d.MaxIdleConns = min(d.MaxIdleConns, d.MaxOpenConns)
		}
	}
	return d, nil
}

// DBConcurrency is how many Store calls the tracker runs at once at most
// in steady state: one per query job, one per delete, replicate, fsck and
// reaper job, and one for the monitor and one for the lock renewal or
// another background loop.
func (c Config) DBConcurrency() int {
	return c.QueryJobs + c.DeleteJobs + c.ReplicateJobs + c.FsckJobs + c.ReaperJobs + 2
}

// clusterSettings are the configuration values the cluster model decides
// by; the query commands and the workers (NewJobs) get the same value.
func (c Config) clusterSettings() cluster.Settings {
	return cluster.Settings{MinFreeMB: c.MinFreeSpace, DefaultMinDevCount: c.DefaultMinDevCount}
}

// nodeConfig configures the storage-node client, the tracker's and the
// workers' alike.
func (c Config) nodeConfig() cluster.NodeConfig {
	return cluster.NodeConfig{ConnTimeout: c.ConnTimeout, NodeTimeout: c.NodeTimeout, PoolSize: c.ConnPoolSize}
}

// queryConfig is what the query commands read of c.
func (c Config) queryConfig() query.Config {
	return query.Config{
		Cluster:             c.clusterSettings(),
		RequestTimeout:      c.RequestTimeout,
		SleepMax:            c.SleepMax,
		MaxOpenUploadsPerIP: c.MaxOpenUploadsPerIP,
		MaxOpenUploads:      c.MaxOpenUploads,
		TempFileTTL:         c.TempFileTTL,
	}
}
