//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/gomogile/gomogile/tracker"
)

// daemonize re-executes this program in a new session with stdio on
// /dev/null and MOGILEFSD_DAEMONIZED=1 (so the child serves in the
// foreground of its own session), and waits for the child to report on a
// pipe that it listens with its store open — or why it could not (port
// taken, database refused, pidfile, --user). The parent then exits 0, or
// non-zero with the child's error, as mogstored -d does.
func daemonize(args []string, wait time.Duration) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("daemonize: %w", err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("daemonize: %w", err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("daemonize: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe, args...)
	// The child's descriptor 3 is the pipe's write end (ExtraFiles[0]).
	cmd.Env = append(os.Environ(), tracker.DaemonizedEnv+"=1", readyEnv+"=3")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close() // only the child holds it now: EOF means the child is gone
	if err != nil {
		return fmt.Errorf("daemonize: %w", err)
	}
	r.SetReadDeadline(time.Now().Add(wait))
	msg, rerr := io.ReadAll(io.LimitReader(r, 64<<10))
	if reason, ok := strings.CutPrefix(string(msg), readyOK); ok && reason == "" {
		return cmd.Process.Release()
	}
	cmd.Process.Kill()
	cmd.Wait()
	reason := strings.TrimSpace(strings.TrimPrefix(string(msg), readyError))
	switch {
	case reason != "":
	case errors.Is(rerr, os.ErrDeadlineExceeded):
		reason = fmt.Sprintf("it did not report ready within %v", wait)
	default:
		reason = "it exited without reporting why (" + cmd.ProcessState.String() + ")"
	}
	return fmt.Errorf("daemonize: the detached tracker did not start: %s", reason)
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
