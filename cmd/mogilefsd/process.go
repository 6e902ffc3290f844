package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/gomogile/gomogile/tracker"
)

// run is mogilefsd: the configuration, then what concerns this process
// (detaching, the pidfile, dropping privileges), then the tracker.
func run(ctx context.Context, m *tracker.Main, args []string) error {
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
		return daemonize(args)
	}
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
