//go:build unix

package main_test

import (
	"bytes"
	"errors"
	"net"
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
