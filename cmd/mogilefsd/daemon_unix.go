//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/gomogile/gomogile/tracker"
)

// daemonize re-executes this program in a new session with stdio on
// /dev/null and MOGILEFSD_DAEMONIZED=1 (so the child stays in the
// foreground of its own session), then returns nil so the parent exits 0.
// Logs of the detached tracker are lost unless stderr is redirected by a
// wrapper; prefer a service manager, which needs no --daemonize.
func daemonize(args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("daemonize: %w", err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("daemonize: %w", err)
	}
	defer null.Close()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), tracker.DaemonizedEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("daemonize: %w", err)
	}
	return cmd.Process.Release()
}

func setUser(uid, gid int) error {
	if err := syscall.Setgroups([]int{gid}); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	return nil
}
