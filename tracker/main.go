package tracker

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/internal/buildinfo"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/storemetrics"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// ErrUsage marks command-line mistakes; mogilefsd exits 2 for them.
var ErrUsage = errors.New("usage")

// JobsFactory builds the jobs manager for a tracker from its config.
type JobsFactory func(st *store.Store, cfg Config, log *slog.Logger) (*jobs.Manager, error)

// Main is the library half of the mogilefsd command: flags, config file,
// environment (LoadConfig), then the store, the workers and the tracker
// until the context ends (Serve). Detaching (-D), --user and --pidfile
// change the whole process and are done by cmd/mogilefsd between the two.
//
// Flags are the original's (MogileFS::Config::load_config):
//
//	-c, --config FILE        config file (default /etc/mogilefs/mogilefsd.conf if readable)
//	-s, --skipconfig         read no config file
//	-d, --debug              more logging (repeatable)
//	-D, --daemonize          detach: re-exec in a new session, stdio to /dev/null
//	    --dsn DSN            db_dsn
//	    --dbuser USER        db_user
//	    --dbpass [PASS]      db_pass; may be empty ("--dbpass" or "--dbpass=")
//	    --user USER          run as USER (needs root; refused otherwise)
//	-p, --confport PORT      conf_port
//	-l, --listen ADDR        listen (repeatable, or comma-separated)
//	-w, --workers N          query_jobs
//	    --no-job_master      feed no fsck/rebalance/drain work from this tracker
//	    --pidfile FILE, --max_disk_age, --min_free_space, --default_mindevcount,
//	    --node_timeout, --conn_timeout, --conn_pool_size, --max_handles,
//	    --no_schema_check (refused), --repl_use_get_port, --local_network,
//	    --mogstored_stream_port
//	    --status_listen, --admin_networks, --client_networks   gomogile's keys
//	    --no_http, --workerport N   accepted and ignored, as the original did
//
// Precedence: flags, then MOGILEFSD_<KEY> environment variables, then the
// config file, then defaults.
type Main struct {
	Stdout, Stderr io.Writer
	// Environ is the environment; nil = os.Environ().
	Environ []string
	// NewJobs builds the background workers (NewJobs is the standard
	// one); nil runs none.
	NewJobs JobsFactory
	// Ready, when set, is called with the tracker once it listens (tests,
	// and the ready pipe of mogilefsd -D).
	Ready func(*Tracker)
	// Logger, when set, is Serve's logger; nil = NewLogger(Stderr, cfg).
	// mogilefsd sets it to send the log to log_file or syslog.
	Logger *slog.Logger
}

// flagKeys maps flag names to config keys.
var flagKeys = map[string]string{
	"dsn": "db_dsn", "dbuser": "db_user", "dbpass": "db_pass", "user": "user", "lock_dsn": "lock_dsn",
	"p": "conf_port", "confport": "conf_port", "w": "query_jobs", "workers": "query_jobs",
	"max_disk_age": "max_disk_age", "min_free_space": "min_free_space",
	"default_mindevcount": "default_mindevcount", "node_timeout": "node_timeout",
	"conn_timeout": "conn_timeout", "conn_pool_size": "conn_pool_size",
	"max_handles": "max_handles", "pidfile": "pidfile", "repl_use_get_port": "repl_use_get_port",
	"local_network": "local_network", "mogstored_stream_port": "mogstored_stream_port",
	"plugins": "plugins", "status_listen": "status_listen",
	"admin_networks": "admin_networks", "client_networks": "client_networks",
}

type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = append(*l, splitList(v)...)
	return nil
}

type countFlag int

func (c *countFlag) String() string   { return strconv.Itoa(int(*c)) }
func (c *countFlag) Set(string) error { *c++; return nil }
func (c *countFlag) IsBoolFlag() bool { return true }

// fixOptionalDbpass turns a bare "--dbpass" (Getopt's 'dbpass:s', value
// optional) into "--dbpass=" so Go's flag parser accepts it.
func fixOptionalDbpass(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "--dbpass" || a == "-dbpass" {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				out = append(out, "--dbpass=")
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// LoadConfig builds the configuration from args, the environment and the
// config file, and validates it. The command line wins over the
// environment, which wins over the file.
func (m *Main) LoadConfig(args []string) (Config, error) {
	cl, err := m.parseCmdLine(args)
	if err != nil {
		return Config{}, err
	}
	cfg := DefaultConfig()
	if err := cfg.applyConfigFile(cl.configFile()); err != nil {
		return Config{}, err
	}
	environ := m.Environ
	if environ == nil {
		environ = os.Environ()
	}
	env, err := EnvValues(environ)
	if err != nil {
		return Config{}, err
	}
	if err := cfg.applyValues(env, "environment"); err != nil {
		return Config{}, err
	}
	cfg.Testing, cfg.FakeIOUtil = testingEnv(environ)
	if err := cl.apply(&cfg); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if v := envLookup(environ, DaemonizedEnv); v == "1" {
		cfg.Daemonize = false // we are the detached child
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// cmdLine is mogilefsd's command line: the original's flags, and one
// --<key> per config key (flagKeys).
type cmdLine struct {
	fs                   *flag.FlagSet
	configPath           string
	skip, daemon, noHTTP bool
	schemaSkip           bool
	debug                countFlag
	listen, plugins      listFlag
	workerport           int
	jobMaster, noJM      bool
	strs                 map[string]*string
}

// parseCmdLine parses args; --help prints the usage and is flag.ErrHelp,
// a mistake is ErrUsage.
func (m *Main) parseCmdLine(args []string) (*cmdLine, error) {
	cl := &cmdLine{fs: flag.NewFlagSet("mogilefsd", flag.ContinueOnError), strs: map[string]*string{}}
	fs := cl.fs
	fs.SetOutput(m.stderr())
	// The usage text is printed below: to stdout for --help, which is not
	// an error, and not at all for a mistake (the error says what it was).
	fs.Usage = func() {}
	fs.StringVar(&cl.configPath, "config", "", "config file")
	fs.StringVar(&cl.configPath, "c", "", "config file (short)")
	fs.BoolVar(&cl.skip, "skipconfig", false, "read no config file")
	fs.BoolVar(&cl.skip, "s", false, "read no config file (short)")
	fs.Var(&cl.debug, "debug", "more logging (repeatable)")
	fs.Var(&cl.debug, "d", "more logging (short)")
	fs.BoolVar(&cl.daemon, "daemonize", false, "detach from the terminal")
	fs.BoolVar(&cl.daemon, "D", false, "detach (short)")
	fs.Var(&cl.listen, "listen", "listen address (repeatable)")
	fs.Var(&cl.listen, "l", "listen address (short)")
	fs.BoolVar(&cl.noHTTP, "no_http", false, "ignored (obsolete)")
	fs.IntVar(&cl.workerport, "workerport", 0, "ignored (obsolete)")
	fs.BoolVar(&cl.schemaSkip, "no_schema_check", false, "do not check the schema version")
	fs.BoolVar(&cl.jobMaster, "job_master", true, "run background jobs")
	fs.BoolVar(&cl.noJM, "no-job_master", false, "run no background jobs")
	fs.BoolVar(&cl.noJM, "nojob_master", false, "run no background jobs")
	for name := range flagKeys {
		if name == "plugins" {
			continue
		}
		cl.strs[name] = fs.String(name, "", "sets "+flagKeys[name])
	}
	fs.Var(&cl.plugins, "plugins", "Perl plugins (refused)")

	if err := fs.Parse(fixOptionalDbpass(unbundle(fs, args))); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			m.usage()
			return nil, flag.ErrHelp
		}
		return nil, fmt.Errorf("%w: %v (mogilefsd --help lists the flags)", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q", ErrUsage, fs.Args())
	}
	if cl.workerport != 0 {
		fmt.Fprintln(m.stderr(), "The command line option --workerport is no longer needed (and has no necessary replacement)")
	}
	return cl, nil
}

// configFile is the config file to read: --config, else the default
// one when it exists; "" with --skipconfig or none.
func (cl *cmdLine) configFile() string {
	if cl.skip {
		return ""
	}
	if cl.configPath == "" {
		if f, err := os.Open(DefaultConfigPath); err == nil {
			f.Close()
			return DefaultConfigPath
		}
	}
	return cl.configPath
}

// applyConfigFile applies the config file at path ("" = none).
func (c *Config) applyConfigFile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	vals, err := FileValues(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return c.applyValues(vals, path)
}

// apply sets in cfg what the command line gave.
func (cl *cmdLine) apply(cfg *Config) error {
	var errs []error
	cl.fs.Visit(func(f *flag.Flag) {
		set := func(k, v string) {
			if err := cfg.Set(k, v); err != nil {
				errs = append(errs, fmt.Errorf("flag --%s: %w", f.Name, err))
			}
		}
		switch f.Name {
		case "debug", "d":
			cfg.Debug = int(cl.debug)
		case "daemonize", "D":
			cfg.Daemonize = cl.daemon
		case "listen", "l":
			cfg.Listen = append([]string(nil), cl.listen...)
		case "no_schema_check":
			set("no_schema_check", strconv.FormatBool(cl.schemaSkip))
		case "job_master":
			cfg.JobMaster = cl.jobMaster
		case "no-job_master", "nojob_master":
			cfg.JobMaster = !cl.noJM
		case "plugins":
			cfg.Plugins = append(cfg.Plugins, cl.plugins...)
		default:
			if k, ok := flagKeys[f.Name]; ok {
				set(k, *cl.strs[f.Name])
			}
		}
	})
	return errors.Join(errs...)
}

func envLookup(environ []string, key string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// unbundle splits bundled boolean short flags ("-dd", "-sD"), which the
// original's Getopt::Long bundling accepted.
func unbundle(fs *flag.FlagSet, args []string) []string {
	valued := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
			valued[f.Name] = true
		}
	})
	return buildinfo.Unbundle(args, "dDs", valued)
}

// usageText is mogilefsd --help. It names every place a setting comes from.
const usageText = `Usage: mogilefsd [OPTIONS]

gomogile tracker, a drop-in for MogileFS's mogilefsd.

Options:
  -c, --config FILE     config file (default %s, read when it exists)
  -s, --skipconfig      read no config file
  -d, --debug           more logging (repeatable: -dd)
  -D, --daemonize       detach; the parent exits 0 once the tracker listens,
                        else non-zero with the child's error
      --dsn DSN         db_dsn: mysql://, postgres://, sqlite:// or DBI:...
      --dbuser USER     db_user
      --dbpass [PASS]   db_pass (may be empty)
      --lock_dsn DSN    lock_dsn: keep the named locks in an outside lock
                        service (etcd://host1:2379,host2:2379/prefix)
  -l, --listen ADDR     listen address (repeatable or comma-separated)
  -p, --confport PORT   conf_port, the port of a listen address without one
  -w, --workers N       query_jobs
      --user USER       run as USER (root only)
      --pidfile FILE    write the process id to FILE
      --no-job_master   feed no fsck/rebalance/drain work from this tracker
      --status_listen ADDR  HTTP status listener: /metrics, /healthz, /readyz,
                        /debug/pprof/ and the status page (e.g. 127.0.0.1:7080)
      --admin_networks NETS   who may change the cluster and use the "!"
                        commands (addresses or address/bits, comma-separated)
      --client_networks NETS  who may use an application's commands
      --version         print the version and exit
  -h, --help            print this help and exit
  Also --max_disk_age, --min_free_space, --default_mindevcount,
  --node_timeout, --conn_timeout, --conn_pool_size, --max_handles,
  --no_schema_check, --repl_use_get_port, --local_network,
  --mogstored_stream_port; --no_http and --workerport are accepted and ignored.

Every config key can also be set in the environment as MOGILEFSD_<KEY>, e.g.
MOGILEFSD_DB_DSN, MOGILEFSD_LISTEN, MOGILEFSD_LOG_LEVEL. Flags win over the
environment, which wins over the config file (lines of "key = value").

Logging: log_level (debug, info, warn, error), log_format (text, json),
log_file (appended to; default stderr, or syslog when detached with -D).

Config keys: %s
`

func (m *Main) usage() {
	out := m.Stdout
	if out == nil {
		out = os.Stdout
	}
	fmt.Fprintf(out, usageText, DefaultConfigPath, strings.Join(ConfigKeys(), ", "))
}

func (m *Main) stderr() io.Writer {
	if m.Stderr == nil {
		return os.Stderr
	}
	return m.Stderr
}

// DaemonizedEnv is set to 1 in the environment of a tracker that
// cmd/mogilefsd re-executed to detach (--daemonize): that process serves in
// the foreground of its own session.
const DaemonizedEnv = EnvPrefix + "DAEMONIZED"

// ErrProcess is Run's refusal of the settings that concern the process
// itself rather than the tracker: daemonize, user and pidfile. The
// mogilefsd command (cmd/mogilefsd) handles them and then calls Serve.
var ErrProcess = errors.New("daemonize, user and pidfile are handled by the mogilefsd command, not by tracker.Main.Run")

// Run loads the configuration from args and serves it until ctx ends (see
// Serve). A configuration asking to detach, switch user or write a pidfile
// is refused with ErrProcess: those change the whole process, which is the
// mogilefsd command's to do.
func (m *Main) Run(ctx context.Context, args []string) error {
	cfg, err := m.LoadConfig(args)
	if err != nil {
		return err
	}
	if cfg.Daemonize || cfg.User != "" || cfg.PidFile != "" {
		return ErrProcess
	}
	return m.Serve(ctx, cfg)
}

// CheckDatabase opens and closes cfg's database: cmd/mogilefsd calls it
// before detaching, so that a database it cannot reach fails in the
// foreground rather than in a silent background process.
func (m *Main) CheckDatabase(ctx context.Context, cfg Config) error {
	dsn, err := cfg.StoreDSN()
	if err != nil {
		return err
	}
	st, err := store.OpenDSN(ctx, dsn)
	if err != nil {
		return err
	}
	return st.Close()
}

// Serve runs the tracker configured by cfg until ctx ends or "!shutdown",
// then shuts it down gracefully. Errors at start (DSN, unreachable
// database, busy port) are returned before anything listens.
func (m *Main) Serve(ctx context.Context, cfg Config) error {
	log := m.Logger
	if log == nil {
		log = NewLogger(m.stderr(), cfg)
	}

	dsn, err := cfg.StoreDSN()
	if err != nil {
		return err
	}
	reg := NewRegistry()
	// Every store call of the commands and the workers is measured.
	metrics, err := storemetrics.New(reg)
	if err != nil {
		return err
	}
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	st, err := store.OpenDSN(openCtx, dsn, store.WithObserver(metrics))
	cancel()
	if err != nil {
		return err
	}
	defer st.Close()
	locks, server, plan := "database", "?", map[string]string(nil)
	if info, err := st.Info(ctx); err == nil {
		locks, server, plan = info.Locks, info.ServerVersion, info.Plan
	}
	log.Info("database open", "dsn", dsn.Redacted(), "server", server, "locks", locks, "plan", plan)
	if err := metrics.Watch(st); err != nil {
		return err
	}

	opts := &Options{Logger: log, Registry: reg}
	if m.NewJobs != nil {
		j, err := m.NewJobs(st, cfg, log)
		if err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
		opts.Jobs = j
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	opts.Shutdown = stop
	t, err := New(cfg, st, opts)
	if err != nil {
		return err
	}
	if err := t.Open(ctx); err != nil {
		return err
	}
	if m.Ready != nil {
		m.Ready(t)
	}
	<-runCtx.Done()
	log.Info("shutting down")
	return t.Close()
}
