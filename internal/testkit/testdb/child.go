package testdb

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Child is the test binary run again as a helper process of a test — a
// lock holder to pause, a Store to crash —, its stdout read line by line.
// It ends when the test does: its stdin is closed, it gets a few seconds
// to exit (after a SIGCONT, should the test have stopped it), and is
// killed otherwise.
type Child struct {
	Cmd   *exec.Cmd
	Stdin io.WriteCloser
	lines chan string
}

// StartChild starts os.Args[0] with args (a -test.run selecting the
// helper, say) and env added to this process's environment; the child's
// stderr is this process's.
func StartChild(t testing.TB, args []string, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{Cmd: cmd, Stdin: stdin, lines: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		resume(cmd.Process)
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return c
}

// Next is the child's next line of output: "(exited)" once its stdout
// closed, "(nothing)" when none came within d.
func (c *Child) Next(d time.Duration) string {
	select {
	case l, ok := <-c.lines:
		if !ok {
			return "(exited)"
		}
		return l
	case <-time.After(d):
		return "(nothing)"
	}
}
