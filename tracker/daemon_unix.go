//go:build unix

package tracker

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
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
	cmd.Env = append(os.Environ(), EnvPrefix+"DAEMONIZED=1")
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

// raiseNoFile sets the open-file limit to n (the original's max_handles).
func raiseNoFile(n int) error {
	var lim syscall.Rlimit
	setRlim(&lim.Cur, n)
	setRlim(&lim.Max, n)
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &cur); err == nil && cur.Max > lim.Max {
		lim.Max = cur.Max // never lower the hard limit
	}
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

// setRlim stores n in an Rlimit field, which is a uint64 on Linux and
// Darwin but an int64 on FreeBSD.
func setRlim[T int64 | uint64](f *T, n int) { *f = T(n) }
