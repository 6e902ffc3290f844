//go:build unix

package mogstored

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// daemonize re-executes this binary with the same arguments in a new session
// with its standard streams on /dev/null (what Perlbal::daemonize did by
// forking; Go cannot fork safely). The child reports on a pipe whether it
// bound its listeners, so start-up errors still reach the operator. The
// working directory is kept so relative paths mean the same in the child.
func (m *Main) daemonize(ctx context.Context, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("mogstored: daemonize: finding own binary: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("mogstored: daemonize: %w", err)
	}
	defer r.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		w.Close()
		return fmt.Errorf("mogstored: daemonize: %w", err)
	}
	defer devnull.Close()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), daemonReadyEnv+"=3")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("mogstored: daemonize: starting %s: %w", exe, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	r.SetReadDeadline(deadline)
	msg, _ := io.ReadAll(io.LimitReader(r, 4096))
	if rest, ok := strings.CutPrefix(string(msg), "ok"); ok {
		pid := cmd.Process.Pid
		cmd.Process.Release()
		fmt.Fprintf(m.Stdout, "mogstored running in the background, pid %d\n", pid)
		if note := strings.TrimSpace(rest); note != "" {
			fmt.Fprintf(m.Stderr, "mogstored: warning: %s\n", note)
		}
		return nil
	}
	cmd.Process.Kill()
	cmd.Wait()
	reason := strings.TrimSpace(strings.TrimPrefix(string(msg), "error: "))
	if reason == "" {
		reason = "it exited or did not answer in time"
	}
	return fmt.Errorf("mogstored: daemon did not start: %s", reason)
}
