//go:build unix

package dbinstance

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// setAccount makes cmd run as a (when set) and, with group, in a process
// group of its own so Kill reaches every child.
func setAccount(cmd *exec.Cmd, a *account, group bool) {
	attr := &syscall.SysProcAttr{Setpgid: group}
	if a != nil {
		attr.Credential = &syscall.Credential{Uid: uint32(a.uid), Gid: uint32(a.gid)}
		cmd.Env = append(os.Environ(), "HOME="+os.TempDir(), "USER="+a.name, "LOGNAME="+a.name)
	}
	cmd.SysProcAttr = attr
}

// proc is a running server process and its process group.
type proc struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed when the process has been reaped
	err    error         // its exit status, after exited
}

func startProc(a *account, logPath, name string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dbinstance: %w", err)
	}
	defer f.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	setAccount(cmd, a, true)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dbinstance: start %s: %w", filepath.Base(name), err)
	}
	p := &proc{cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to the process, its process group and every
// descendant, and waits until none of them is left: a server's children
// hold its shared memory and port, and a restart must not find them.
// (PostgreSQL's backends are each a session of their own, so the group
// alone does not reach them.) The leader is stopped first so it cannot
// fork while its children are collected.
func (p *proc) kill() error {
	pid := p.cmd.Process.Pid
	if p.running() {
		syscall.Kill(pid, syscall.SIGSTOP)
	}
	kids := descendants(pid)
	for _, k := range kids {
		syscall.Kill(k, syscall.SIGKILL)
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	syscall.Kill(pid, syscall.SIGKILL)
	<-p.exited
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := 0
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			left++
		}
		for _, k := range kids {
			if alive(k) {
				left++
				syscall.Kill(k, syscall.SIGKILL)
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dbinstance: %d processes of %s (pid %d) still alive 30s after SIGKILL", left, filepath.Base(p.cmd.Path), pid)
		}
		syscall.Kill(-pid, syscall.SIGKILL)
		time.Sleep(10 * time.Millisecond)
	}
}

// stop sends sig to the leader and waits up to timeout for the group to
// end, then kills it.
func (p *proc) stop(sig syscall.Signal, timeout time.Duration) error {
	if !p.running() {
		return p.kill() // reap any child left behind
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.kill()
		return fmt.Errorf("dbinstance: %s did not stop within %v; killed", filepath.Base(p.cmd.Path), timeout)
	}
	return p.kill()
}

const (
	sigFast = syscall.SIGINT  // PostgreSQL: fast shutdown; PgBouncer: safe shutdown
	sigTerm = syscall.SIGTERM // MariaDB: normal shutdown
)
