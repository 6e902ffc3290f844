//go:build unix

package dbinstance

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
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

	killMu sync.Mutex
	gone   bool // kill found the process and its children gone
}

func startProc(a *account, logPath, name string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dbinstance: %w", err)
	}
	defer f.Close()
	if a != nil {
		// The server may open its log by name too (mariadbd's --log-error).
		if err := f.Chown(a.uid, a.gid); err != nil {
			return nil, fmt.Errorf("dbinstance: %w", err)
		}
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	setAccount(cmd, a, true)
	dieWithParent(cmd.SysProcAttr)
	p := &proc{cmd: cmd, log: logPath, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the thread that started the
		// child ends, and Go ends threads at will: hold this one until
		// the child is reaped.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("dbinstance: start %s: %w", filepath.Base(name), err)
	}
	return p, nil
}

// pid is the server process's id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

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
//
// Pids are reused (pid_max is often 32768), so nothing is signalled by
// number once the leader may have been reaped: the leader is signalled
// through os.Process, its group only while it is stopped and unreaped,
// and each child only if its start time still matches. A server that
// already exited on its own is not signalled at all (PostgreSQL's
// orphaned backends end by themselves when the postmaster dies).
func (p *proc) kill() error {
	p.killMu.Lock()
	defer p.killMu.Unlock()
	if p.gone {
		return nil
	}
	pid := p.cmd.Process.Pid
	var kids []procID
	if p.cmd.Process.Signal(syscall.SIGSTOP) == nil {
		kids = descendants(pid)
		syscall.Kill(-pid, syscall.SIGKILL) // the leader is unreaped: its group id is ours
		for _, k := range kids {
			k.kill()
		}
		p.cmd.Process.Kill()
	}
	<-p.exited
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := 0
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			left++ // a probe only: signal 0 harms no one
		}
		for _, k := range kids {
			if k.alive() {
				left++
			}
		}
		if left == 0 {
			p.gone = true
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dbinstance: %d processes of %s (pid %d) still alive 30s after SIGKILL", left, filepath.Base(p.cmd.Path), pid)
		}
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

// errPlatform is why this system cannot run private servers (none here).
var errPlatform error
