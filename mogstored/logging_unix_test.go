//go:build unix

package mogstored

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gomogile/gomogile/internal/logsetup"
)

type fakeSyslog struct{ strings.Builder }

func (*fakeSyslog) Close() error { return nil }

// A daemonized mogstored (the detached copy --daemonize starts, whose
// stderr is /dev/null) logs to syslog tagged mogstored when no log_file is
// set, as the tracker does; it used to log to /dev/null.
func TestMainRun_DetachedLogsToSyslog(t *testing.T) {
	fake := &fakeSyslog{}
	var tag string
	prev := logsetup.OpenSyslog
	logsetup.OpenSyslog = func(tg string) (io.WriteCloser, error) { tag = tg; return fake, nil }
	defer func() { logsetup.OpenSyslog = prev }()

	r := detachedPipe(t)
	m, out := testMain(t)
	runUntilStarted(t, m, "-s", "--docroot="+t.TempDir(), "--httplisten=127.0.0.1:0", "--mgmtlisten=127.0.0.1:0")
	if line, _ := bufio.NewReader(r).ReadString('\n'); line != "ok\n" {
		t.Errorf("start-up result %q; want ok", line)
	}
	if tag != "mogstored" || !strings.Contains(fake.String(), "msg=serving") || !strings.Contains(fake.String(), "msg=stopped") {
		t.Errorf("syslog (tag %q) got %q; want the serving and stopped lines tagged mogstored", tag, fake.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout/stderr got %q; a detached mogstored has none", out.String())
	}
}

// Without a syslog to reach and without log_file, a detached mogstored
// still starts (it did before it logged to syslog, and storage nodes run
// in containers without one): its log is discarded and the start-up
// report tells the parent so, which prints it as a warning.
func TestMainRun_DetachedWithoutSyslog(t *testing.T) {
	prev := logsetup.OpenSyslog
	logsetup.OpenSyslog = func(string) (io.WriteCloser, error) { return nil, errors.New("no /dev/log") }
	defer func() { logsetup.OpenSyslog = prev }()
	r := detachedPipe(t)
	m, _ := testMain(t)
	runUntilStarted(t, m, "-s", "--docroot="+t.TempDir(), "--httplisten=127.0.0.1:0", "--mgmtlisten=127.0.0.1:0")
	line, _ := bufio.NewReader(r).ReadString('\n')
	if !strings.HasPrefix(line, "ok logging to syslog (set log_file") || !strings.Contains(line, "no /dev/log; the daemon's log is discarded") {
		t.Errorf("start-up report %q; want ok with the warning that the log is discarded", line)
	}

	// A log_file that cannot be opened is a configuration error, detached
	// or not.
	m, _ = testMain(t)
	err := m.Run(t.Context(), []string{"-s", "--docroot=" + t.TempDir(), "--httplisten=127.0.0.1:0", "--mgmtlisten=127.0.0.1:0",
		"--log_file=/nonexistent/dir/mogstored.log"})
	if err == nil || !strings.Contains(err.Error(), "log_file") {
		t.Errorf("Run with an unwritable log_file: %v; want an error naming log_file", err)
	}
}

// detachedPipe makes Run act as the detached copy --daemonize starts: it
// reports its start-up on a pipe whose read end is returned. Run closes
// its end, a descriptor of its own.
func detachedPipe(t *testing.T) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	fd, err := syscall.Dup(int(w.Fd()))
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(daemonReadyEnv, strconv.Itoa(fd))
	return r
}
