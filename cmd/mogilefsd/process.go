package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/gomogile/gomogile/tracker"
)

// run is mogilefsd: the configuration, then what concerns this process
// (detaching, the pidfile, dropping privileges), then the tracker.
func run(ctx context.Context, m *tracker.Main, args []string) (err error) {
	if ready := readyPipe(); ready != nil {
		// The detached child of -D: tell the waiting parent how the start
		// went — "ok" once the tracker listens with its store open, else
		// the error that ends run.
		reported := false
		report := func(msg string) {
			if !reported {
				reported = true
				fmt.Fprint(ready, msg)
				ready.Close()
			}
		}
		defer func() {
			if err != nil {
				report(readyError + err.Error())
			}
			report(readyError + "the tracker stopped before it was ready")
		}()
		prev := m.Ready
		m.Ready = func(t *tracker.Tracker) {
			if prev != nil {
				prev(t)
			}
			report(readyOK)
		}
	}
	cfg, err := m.LoadConfig(args)
	if err != nil {
		return err
	}
	if cfg.Daemonize {
		// Fail fast in the foreground: a database we cannot reach should
		// not become a silent background failure.
		if err := m.CheckDatabase(ctx, cfg); err != nil {
			return err
		}
		// The child opens the store (up to 30s) before it listens.
		return daemonize(args, daemonReadyWait)
	}
	out, closeLog, err := logOutput(cfg, os.Getenv(tracker.DaemonizedEnv) == "1", m.Stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	if m.Logger == nil {
		m.Logger = tracker.NewLogger(out, cfg)
	}
	// The database drivers log through slog.Default (store/mysql,
	// store/postgres): into the same log, in the same format.
	slog.SetDefault(m.Logger)
	if cfg.PidFile != "" {
		if err := os.WriteFile(cfg.PidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return fmt.Errorf("pidfile: %w", err)
		}
		defer os.Remove(cfg.PidFile)
	}
	if cfg.User != "" {
		if err := switchUser(cfg.User); err != nil {
			return err
		}
	}
	return m.Serve(ctx, cfg)
}

// The ready pipe between mogilefsd -D and its detached child: the child
// finds its end as the descriptor named by readyEnv and writes readyOK or
// readyError and the reason, then closes it.
const (
	readyEnv   = "GOMOGILE_MOGILEFSD_READY_FD"
	readyOK    = "ok"
	readyError = "error: "
	// daemonReadyWait bounds the parent's wait: the store's open timeout
	// (30s) with room for the rest of the start.
	daemonReadyWait = 45 * time.Second
)

// readyPipe is the child's end of the ready pipe, nil when this process is
// not a detached child. The variable is removed so that nothing this
// process starts inherits it.
func readyPipe() *os.File {
	v := os.Getenv(readyEnv)
	if v == "" {
		return nil
	}
	os.Unsetenv(readyEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	return os.NewFile(uintptr(fd), "ready-pipe")
}

// switchUser drops privileges to name (the original's --user). Only root
// can; anyone else gets an error unless already running as that user.
func switchUser(name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("user %q: %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if os.Getuid() == uid {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("--user %s: only root can switch user (running as uid %d)", name, os.Getuid())
	}
	return setUser(uid, gid)
}
