package mogstored

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gomogile/gomogile/internal/buildinfo"
	"github.com/gomogile/gomogile/internal/logsetup"
)

// DefaultConfigFile is read when it exists and no --config is given, as the
// original did.
const DefaultConfigFile = "/etc/mogilefs/mogstored.conf"

// daemonReadyEnv tells a re-executed daemon child which descriptor to report
// its start-up result on.
const daemonReadyEnv = "GOMOGILE_MOGSTORED_READY_FD"

// Main is the mogstored command: flags, config file, daemonizing, and
// running a Server until ctx ends or a "shutdown" arrives. cmd/mogstored
// wires it to the process; tests call Run directly.
type Main struct {
	Stdout, Stderr io.Writer
	// DefaultConfigFile is read when present and no --config is given.
	DefaultConfigFile string
	// Started, when set, is called with the server once it serves.
	Started func(*Server)

	// Filled by ParseFlags.
	Config     Config
	ConfigFile string // the file that was read, "" if none
	Daemonize  bool
	PIDFile    string
	// LogLevel, LogFormat and LogFile are log_level (debug, info, warn,
	// error; "" = info), log_format (text, json; "" = text) and log_file
	// ("" = stderr, or syslog once detached with --daemonize), as the
	// tracker's. They apply when Config.Logger is nil.
	LogLevel, LogFormat, LogFile string
}

// NewMain returns a Main writing to the process's stdout and stderr.
func NewMain() *Main {
	return &Main{Stdout: os.Stdout, Stderr: os.Stderr, DefaultConfigFile: DefaultConfigFile}
}

const usageText = `Usage: mogstored [OPTS]

OPTS:
 --daemonize  -d        Daemonize (re-executes itself detached, in a new session)
 --config=<file>        Set config file (default is /etc/mogilefs/mogstored.conf)
 --skipconfig -s        Don't read a config file
 --httplisten=<ip:port> IP/Port HTTP server listens on (default 0.0.0.0:7500)
 --mgmtlisten=<ip:port> IP/Port management/sidechannel listens on (default 0.0.0.0:7501)
 --docroot=<path>       Docroot above device mount points (default /var/mogdata)
 --maxconns=<number>    Number of simultaneous HTTP clients to serve (default 10000)
 --iostat=<bool>        Serve "watch" on the management port (default true)
 --statuslisten=<ip:port> HTTP /metrics, /healthz, /readyz, /debug/pprof/ (default off; e.g. 127.0.0.1:7580)
 --pidfile=<file>       Write the process id here
 --server=perlbal       Accepted for compatibility; only the built-in server exists
 --serverbin=<path>     Accepted for compatibility; ignored
 --version              Print the version and exit
 --help       -h        Print this help and exit

Protections (see the README's "Security"; 0 turns a limit off):
 --writenetworks=<nets> Networks allowed to PUT/DELETE/MKCOL (default everyone)
 --mgmtnetworks=<nets>  Networks allowed to "shutdown" on the management port (default everyone)
 --bodytimeout=<secs>   Longest wait for the next byte of a PUT body (default 30)
 --minbodyrate=<B/s>    Average rate a PUT body keeps after bodytimeout (default 1024)
 --maxconnsperip=<n>    Open HTTP connections from one address (default 0, none)
 --mgmtmaxconns=<n>     Open management connections (default 1000)
 --mgmtidletimeout=<s>  Close a management connection silent this long (default 600)

Logging:
 --log_level=<level>    debug, info, warn or error (default info)
 --log_format=<format>  text or json (default text)
 --log_file=<path>      Append the log here (default stderr; syslog, tagged
                        mogstored, once detached with --daemonize)

Short flags may be bundled (-sd). Config file lines are "key = value" with
the same keys (httplisten, mgmtlisten, docroot, maxconns, iostat, daemonize,
pidfile, server, statuslisten, and the protection and logging keys above);
command-line flags override
the file. mogstored reads no
environment variables.
`

// valuedFlags names fs's flags that take a value, which Unbundle must not
// split when they are a flag's value.
func valuedFlags(fs *flag.FlagSet) map[string]bool {
	valued := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
			valued[f.Name] = true
		}
	})
	return valued
}

// ParseFlags reads args and the config file into m. Flags override the file.
// (The Perl mogstored loaded the file after the flags, so the file silently
// won; we let the command line win, which is what operators expect when they
// pass a flag.)
func (m *Main) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("mogstored", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	// --help prints the usage to stdout (it is not an error); a mistake
	// prints only the error.
	fs.Usage = func() {}
	var (
		configFile, httpListen, mgmtListen, docroot, pidFile, server, serverBin string
		maxConns                                                                int
		skip, daemonize, iostat                                                 bool
	)
	fs.StringVar(&configFile, "config", "", "config file")
	fs.BoolVar(&skip, "skipconfig", false, "don't read a config file")
	fs.BoolVar(&skip, "s", false, "don't read a config file")
	fs.BoolVar(&daemonize, "daemonize", false, "daemonize")
	fs.BoolVar(&daemonize, "d", false, "daemonize")
	fs.StringVar(&httpListen, "httplisten", "", "HTTP ip:port")
	fs.StringVar(&mgmtListen, "mgmtlisten", "", "management ip:port")
	fs.StringVar(&docroot, "docroot", "", "docroot")
	fs.IntVar(&maxConns, "maxconns", 0, "max HTTP connections")
	fs.BoolVar(&iostat, "iostat", true, "serve watch")
	fs.StringVar(&pidFile, "pidfile", "", "pid file")
	fs.StringVar(&server, "server", "perlbal", "HTTP server type")
	fs.StringVar(&serverBin, "serverbin", "", "ignored")
	limitFlags := map[string]*string{}
	for _, k := range limitKeys {
		limitFlags[k] = fs.String(k, "", k)
	}
	if err := fs.Parse(buildinfo.Unbundle(args, "ds", valuedFlags(fs))); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(m.Stdout, usageText)
			return err
		}
		return fmt.Errorf("mogstored: %w (mogstored --help lists the flags)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("mogstored: unexpected argument %q", fs.Arg(0))
	}
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	cfg := DefaultConfig()
	var fo fileOptions
	m.ConfigFile = ""
	if !skip {
		path := configFile
		if path == "" {
			if _, err := os.Stat(m.DefaultConfigFile); err == nil {
				path = m.DefaultConfigFile
			}
		}
		if path != "" {
			f, err := os.Open(path)
			if err != nil {
				return fmt.Errorf("mogstored: config file: %w", err)
			}
			cfg, fo, err = parseConfig(f, cfg)
			f.Close()
			if err != nil {
				return fmt.Errorf("%w (in %s)", err, path)
			}
			m.ConfigFile = path
		}
	}

	if set["httplisten"] {
		if err := validateListen(httpListen); err != nil || httpListen == "" {
			return fmt.Errorf("mogstored: --httplisten %q: want ip:port", httpListen)
		}
		cfg.HTTPListen = normalizeListen(httpListen)
	}
	if set["mgmtlisten"] {
		if err := validateListen(mgmtListen); err != nil || mgmtListen == "" {
			return fmt.Errorf("mogstored: --mgmtlisten %q: want ip:port", mgmtListen)
		}
		cfg.MgmtListen = normalizeListen(mgmtListen)
	}
	if set["docroot"] {
		cfg.DocRoot = docroot
	}
	for _, k := range limitKeys {
		if set[k] {
			if err := applySetting(&cfg, &fo, k, *limitFlags[k]); err != nil {
				return fmt.Errorf("mogstored: --%w", err)
			}
		}
	}
	if set["maxconns"] {
		if maxConns <= 0 {
			return fmt.Errorf("mogstored: --maxconns %d: want a positive number", maxConns)
		}
		cfg.MaxConns = maxConns
	}
	if set["iostat"] {
		cfg.NoIOStat = !iostat
	}
	if set["server"] && server != "perlbal" {
		return fmt.Errorf("mogstored: --server %q: only the built-in HTTP server (perlbal) is supported", server)
	}
	m.Daemonize = fo.daemonize
	if set["daemonize"] || set["d"] {
		m.Daemonize = daemonize
	}
	m.PIDFile = fo.pidFile
	if set["pidfile"] {
		m.PIDFile = pidFile
	}
	m.LogLevel, m.LogFormat, m.LogFile = fo.logLevel, fo.logFormat, fo.logFile
	if err := cfg.Validate(); err != nil {
		return err
	}
	m.Config = cfg
	return nil
}

// Run parses args, then serves until ctx is done or a "shutdown" command
// arrives, and closes gracefully. With --daemonize it starts a detached copy
// of itself, waits until that copy serves (or reports why it cannot) and
// returns.
func (m *Main) Run(ctx context.Context, args []string) (err error) {
	var ready *os.File
	if fd := os.Getenv(daemonReadyEnv); fd != "" {
		n, convErr := strconv.Atoi(fd)
		if convErr != nil {
			return fmt.Errorf("mogstored: %s=%q is not a descriptor", daemonReadyEnv, fd)
		}
		ready = os.NewFile(uintptr(n), "daemon-ready")
		os.Unsetenv(daemonReadyEnv)
		defer func() {
			if ready != nil { // still unreported: start-up failed
				fmt.Fprintf(ready, "error: %v\n", err)
				ready.Close()
			}
		}()
	}
	if err := m.ParseFlags(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if m.Daemonize && ready == nil {
		return m.daemonize(ctx, args)
	}
	cfg := m.Config
	var note string // a warning for the parent of a detached mogstored
	if cfg.Logger == nil {
		// Detached (ready is the daemon's pipe to its parent), stderr is
		// /dev/null: without log_file the log goes to syslog.
		out, closeLog, err := logsetup.Output(m.LogFile, ready != nil, "mogstored", m.Stderr)
		switch {
		case err != nil && ready != nil && m.LogFile == "":
			// No syslog to reach (a container, a minimal system). A
			// storage node that started detached before it logged
			// anything must not stop starting for it: its log is
			// discarded, as it always was, and the parent says so.
			out, closeLog = io.Discard, func() error { return nil }
			note = fmt.Sprintf("%v; the daemon's log is discarded", err)
		case err != nil:
			return fmt.Errorf("mogstored: %w", err)
		}
		defer closeLog()
		cfg.Logger = logsetup.New(out, m.LogLevel, m.LogFormat, false)
	}
	s := New(cfg)
	if err := s.Open(ctx); err != nil {
		return err
	}
	if m.PIDFile != "" {
		if err := os.WriteFile(m.PIDFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			s.Close()
			return fmt.Errorf("mogstored: pidfile: %w", err)
		}
		defer os.Remove(m.PIDFile)
	}
	if ready != nil {
		fmt.Fprintln(ready, strings.TrimSpace("ok "+note))
		ready.Close()
		ready = nil
	} else {
		fmt.Fprintln(m.Stdout, "Running.")
	}
	if m.Started != nil {
		m.Started(s)
	}
	select {
	case <-ctx.Done():
	case <-s.Done():
	}
	return s.Close()
}
