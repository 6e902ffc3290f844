//go:build unix

package main_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// -D with its port taken: the parent waits for the child, exits non-zero
// and prints the child's reason (it used to exit 0 with nothing running).
func TestMogilefsd_DaemonizeReportsChildError(t *testing.T) {
	bin := buildBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dsn := "sqlite:///" + filepath.Join(t.TempDir(), "db")
	cmd := exec.Command(bin, "--skipconfig", "-D", "--dsn", dsn, "--listen", ln.Addr().String())
	// This machine may have no syslog; a detached tracker needs one or a log_file.
	cmd.Env = append(os.Environ(), "MOGILEFSD_LOG_FILE="+filepath.Join(t.TempDir(), "log"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("mogilefsd -D on a taken port: %v (stderr %q), want exit 1", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "did not start") || !strings.Contains(stderr.String(), "address already in use") {
		t.Errorf("stderr %q: want the child's reason (address already in use)", stderr.String())
	}
	t.Logf("parent exited after %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(stderr.String()))
}

// A detached tracker's log reaches log_file, in log_format.
func TestMogilefsd_DaemonizeLogsToFile(t *testing.T) {
	bin := buildBinary(t)
	addr := freePort(t)
	dir := t.TempDir()
	logFile := filepath.Join(dir, "mogilefsd.log")
	cmd := exec.Command(bin, "--skipconfig", "-D", "--dsn", "sqlite:///"+filepath.Join(dir, "db"), "--listen", addr, "--no-job_master")
	cmd.Env = append(os.Environ(), "MOGILEFSD_LOG_FILE="+logFile, "MOGILEFSD_LOG_FORMAT=json")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mogilefsd -D: %v\n%s", err, out)
	}
	// Ready was reported, so it listens now.
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("detached tracker reported ready but does not listen: %v", err)
	}
	fmt.Fprint(nc, "!shutdown test over\r\n")
	nc.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(logFile)
		if bytes.Contains(b, []byte(`"msg":"shutting down"`)) {
			if !bytes.HasPrefix(b, []byte("{")) || !bytes.Contains(b, []byte(`"msg":"database open"`)) {
				t.Errorf("log_file is not the JSON log:\n%s", b)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log_file never showed the shutdown:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
