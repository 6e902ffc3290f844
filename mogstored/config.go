package mogstored

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/internal/logsetup"
)

// Defaults, as in the Perl mogstored and its DiskUsage child.
const (
	DefaultDocRoot         = "/var/mogdata"
	DefaultHTTPListen      = "0.0.0.0:7500"
	DefaultMgmtListen      = "0.0.0.0:7501"
	DefaultMaxConns        = 10000
	DefaultUsageInterval   = 10 * time.Second
	DefaultShutdownTimeout = 10 * time.Second
)

// Config configures a Server. New replaces zero fields (other than DocRoot)
// with the defaults above.
type Config struct {
	// DocRoot is the directory holding the dev<N> device directories.
	DocRoot string
	// HTTPListen and MgmtListen are host:port; a bare port means 0.0.0.0 and
	// port 0 picks a free port.
	HTTPListen string
	MgmtListen string
	// MaxConns bounds concurrent HTTP connections; see the package doc.
	MaxConns int
	// UsageInterval is how often the usage files are rewritten.
	UsageInterval time.Duration
	// ShutdownTimeout bounds how long Close waits for requests in flight.
	ShutdownTimeout time.Duration
	// NoIOStat disables the "watch" command (the original's iostat = 0).
	NoIOStat bool
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger

	// Protections against hostile clients (see access.go and the README's
	// "Security"). Zero values take the defaults; a negative duration or
	// count turns that limit off.

	// WriteNetworks may PUT, DELETE and MKCOL (writenetworks; empty =
	// everyone, as the original).
	WriteNetworks []netip.Prefix
	// MgmtNetworks may use the management port's "shutdown" (mgmtnetworks;
	// empty = everyone, as the original).
	MgmtNetworks []netip.Prefix
	// BodyTimeout is the longest wait for the next byte of a PUT body,
	// and the longest a request's connection stays open after its arrival
	// while a body the node will not read keeps coming (bodytimeout,
	// seconds; default DefaultBodyTimeout).
	BodyTimeout time.Duration
	// MinBodyRate is the average rate, in bytes per second, a PUT body must
	// keep once BodyTimeout has passed since it started (minbodyrate;
	// default DefaultMinBodyRate).
	MinBodyRate int64
	// MaxConnsPerIP bounds open HTTP connections from one remote address
	// (maxconnsperip; 0 = no bound, the default); the excess gets 503.
	MaxConnsPerIP int
	// MgmtMaxConns bounds open management connections (mgmtmaxconns;
	// default DefaultMgmtMaxConns).
	MgmtMaxConns int
	// MgmtIdleTimeout closes a management connection that sends no command
	// for this long; a "watch" stream is not idle (mgmtidletimeout, seconds;
	// default DefaultMgmtIdleTimeout).
	MgmtIdleTimeout time.Duration

	// StatusListen is the address of the HTTP status listener (metrics,
	// health, pprof; statuslisten, e.g. 127.0.0.1:7580). "" = none.
	StatusListen string
}

// DefaultConfig returns the original mogstored's defaults.
func DefaultConfig() Config {
	return Config{
		DocRoot:         DefaultDocRoot,
		HTTPListen:      DefaultHTTPListen,
		MgmtListen:      DefaultMgmtListen,
		MaxConns:        DefaultMaxConns,
		UsageInterval:   DefaultUsageInterval,
		ShutdownTimeout: DefaultShutdownTimeout,
		BodyTimeout:     DefaultBodyTimeout,
		MinBodyRate:     DefaultMinBodyRate,
		MgmtMaxConns:    DefaultMgmtMaxConns,
		MgmtIdleTimeout: DefaultMgmtIdleTimeout,
	}
}

// withDefaults fills zero fields so that a Config built by hand behaves like
// one derived from DefaultConfig.
func (c Config) withDefaults() Config {
	if c.HTTPListen == "" {
		c.HTTPListen = DefaultHTTPListen
	}
	if c.MgmtListen == "" {
		c.MgmtListen = DefaultMgmtListen
	}
	c.HTTPListen = normalizeListen(c.HTTPListen)
	c.MgmtListen = normalizeListen(c.MgmtListen)
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.UsageInterval == 0 {
		c.UsageInterval = DefaultUsageInterval
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.BodyTimeout = limitDefault(c.BodyTimeout, DefaultBodyTimeout)
	c.MinBodyRate = limitDefault(c.MinBodyRate, DefaultMinBodyRate)
	c.MgmtMaxConns = limitDefault(c.MgmtMaxConns, DefaultMgmtMaxConns)
	c.MgmtIdleTimeout = limitDefault(c.MgmtIdleTimeout, DefaultMgmtIdleTimeout)
	return c
}

// normalizeListen turns a bare port into 0.0.0.0:port, as the original's
// Mogstored::HTTPServer::bind_ip does.
func normalizeListen(s string) string {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		return "0.0.0.0:" + s
	}
	return s
}

// Validate reports the first problem with c, naming the setting.
func (c Config) Validate() error {
	if c.DocRoot == "" {
		return errors.New("mogstored: docroot is empty")
	}
	for _, l := range []struct{ name, addr string }{{"httplisten", c.HTTPListen}, {"mgmtlisten", c.MgmtListen}, {"statuslisten", c.StatusListen}} {
		if err := validateListen(l.addr); err != nil {
			return fmt.Errorf("mogstored: %s %q: %w", l.name, l.addr, err)
		}
	}
	if c.HTTPListen == c.MgmtListen && !strings.HasSuffix(c.HTTPListen, ":0") {
		return fmt.Errorf("mogstored: httplisten and mgmtlisten are both %q", c.HTTPListen)
	}
	if c.MaxConns < 0 {
		return fmt.Errorf("mogstored: maxconns %d is negative", c.MaxConns)
	}
	if c.UsageInterval < 0 {
		return fmt.Errorf("mogstored: usage interval %v is negative", c.UsageInterval)
	}
	if c.ShutdownTimeout < 0 {
		return fmt.Errorf("mogstored: shutdown timeout %v is negative", c.ShutdownTimeout)
	}
	return nil
}

func validateListen(addr string) error {
	if addr == "" {
		return nil // New fills the default
	}
	_, port, err := net.SplitHostPort(normalizeListen(addr))
	if err != nil {
		return fmt.Errorf("want host:port: %w", err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number in 0-65535", port)
	}
	return nil
}

// fileOptions are the config-file keys that steer the process rather than
// the server (daemonize, pidfile); Main uses them, ParseConfig accepts them.
type fileOptions struct {
	daemonize    bool
	daemonizeSet bool
	pidFile      string
	pidFileSet   bool
	// The log's level, format and file (log_level, log_format, log_file):
	// Main's, as the process's output is not the Server's business.
	logLevel, logFormat, logFile string
}

// configLine is the original's load_config_file syntax: "key = value", with
// everything after '#' a comment.
var configLine = regexp.MustCompile(`^\s*(\w+)\s*=\s*(.+?)\s*$`)

// ParseConfig reads a mogstored.conf: lines of "key = value" whose keys are
// the command-line option names (httplisten, mgmtlisten, docroot, maxconns,
// iostat, daemonize, pidfile, server, serverbin, config). Settings absent from
// the file keep DefaultConfig's values. Unknown keys, the pre-1.x Perlbal
// syntax and malformed values are errors naming the line.
func ParseConfig(r io.Reader) (Config, error) {
	cfg, _, err := parseConfig(r, DefaultConfig())
	return cfg, err
}

func parseConfig(r io.Reader, cfg Config) (Config, fileOptions, error) {
	var fo fileOptions
	sc := bufio.NewScanner(r)
	lineno := 0
	for sc.Scan() {
		lineno++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		upper := strings.ToUpper(line)
		if strings.Contains(upper, "SERVER MAX_CONNECT") || strings.Contains(upper, "CREATE SERVICE") {
			return cfg, fo, fmt.Errorf("mogstored: config line %d: old Perlbal syntax; the format is lines of <key> = <value> with keys named like the command-line options", lineno)
		}
		m := configLine.FindStringSubmatch(line)
		if m == nil {
			return cfg, fo, fmt.Errorf("mogstored: config line %d: unknown config syntax %q, want key = value", lineno, strings.TrimSpace(line))
		}
		if err := applySetting(&cfg, &fo, m[1], m[2]); err != nil {
			return cfg, fo, fmt.Errorf("mogstored: config line %d: %w", lineno, err)
		}
	}
	if err := sc.Err(); err != nil {
		return cfg, fo, fmt.Errorf("mogstored: reading config: %w", err)
	}
	return cfg, fo, nil
}

func applySetting(cfg *Config, fo *fileOptions, key, val string) error {
	switch key {
	case "httplisten":
		if err := validateListen(val); err != nil {
			return fmt.Errorf("httplisten %q: %w", val, err)
		}
		cfg.HTTPListen = normalizeListen(val)
	case "mgmtlisten":
		if err := validateListen(val); err != nil {
			return fmt.Errorf("mgmtlisten %q: %w", val, err)
		}
		cfg.MgmtListen = normalizeListen(val)
	case "docroot":
		cfg.DocRoot = val
	case "maxconns":
		n, err := strconv.Atoi(val)
		if err != nil || n <= 0 {
			return fmt.Errorf("maxconns %q: want a positive integer", val)
		}
		cfg.MaxConns = n
	case "iostat":
		b, err := parseBool(val)
		if err != nil {
			return fmt.Errorf("iostat: %w", err)
		}
		cfg.NoIOStat = !b
	case "daemonize":
		b, err := parseBool(val)
		if err != nil {
			return fmt.Errorf("daemonize: %w", err)
		}
		fo.daemonize, fo.daemonizeSet = b, true
	case "pidfile":
		fo.pidFile, fo.pidFileSet = val, true
	case "server":
		// The original could front lighttpd, apache or nginx; we are our
		// own HTTP server, so only the default (Perlbal) makes sense.
		if val != "perlbal" {
			return fmt.Errorf("server %q: only the built-in HTTP server (perlbal) is supported", val)
		}
	case "serverbin", "config", "s":
		// serverbin only mattered for external servers; config and
		// s(kipconfig) are accepted by the original's parser and have no
		// effect once the file is being read.
	case "writenetworks", "mgmtnetworks":
		nets, err := ParseNetworks(val)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if key == "writenetworks" {
			cfg.WriteNetworks = nets
		} else {
			cfg.MgmtNetworks = nets
		}
	case "bodytimeout", "mgmtidletimeout":
		x, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return fmt.Errorf("%s %q: want a number of seconds", key, val)
		}
		d := time.Duration(x * float64(time.Second))
		if x == 0 {
			d = -1 // "0" means none, as the tracker's timeouts
		}
		if key == "bodytimeout" {
			cfg.BodyTimeout = d
		} else {
			cfg.MgmtIdleTimeout = d
		}
	case "statuslisten":
		if err := validateListen(val); err != nil {
			return fmt.Errorf("statuslisten %q: %w", val, err)
		}
		cfg.StatusListen = normalizeListen(val)
	case "maxconnsperip":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return fmt.Errorf("maxconnsperip %q: want a number, 0 for none", val)
		}
		cfg.MaxConnsPerIP = n
	case "minbodyrate", "mgmtmaxconns":
		n, err := strconv.ParseInt(val, 10, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("%s %q: want a number, 0 for none", key, val)
		}
		if n == 0 {
			n = -1
		}
		if key == "minbodyrate" {
			cfg.MinBodyRate = n
		} else {
			cfg.MgmtMaxConns = int(n)
		}
	case "log_level", "log_format":
		v := strings.ToLower(val)
		allowed := logsetup.Levels
		if key == "log_format" {
			allowed = logsetup.Formats
		}
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("%s %q: want one of %s", key, val, strings.Join(allowed, ", "))
		}
		if key == "log_level" {
			fo.logLevel = v
		} else {
			fo.logFormat = v
		}
	case "log_file":
		fo.logFile = val
	default:
		return fmt.Errorf("unknown config setting %q", key)
	}
	return nil
}

// limitDefault is v, or def when v is zero (a Config built by hand).
func limitDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// limitKeys are the settings that take a value on the command line too
// (--key=value), beside the original's options: the protections, the
// status listener and the log's.
var limitKeys = []string{"writenetworks", "mgmtnetworks", "bodytimeout", "minbodyrate", "maxconnsperip", "mgmtmaxconns", "mgmtidletimeout", "statuslisten",
	"log_level", "log_format", "log_file"}

// parseBool accepts the spellings an operator is likely to use; the Perl
// parser treated anything but "0" as true, which made "false" mean true, so we
// refuse what we cannot read instead.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (use 1 or 0)", s)
}
