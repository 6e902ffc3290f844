package main_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildBinary compiles mogilefsd once per test.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mogilefsd")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestMogilefsd_Binary(t *testing.T) {
	bin := buildBinary(t)

	t.Run("ServesAndStopsOnSIGTERM", func(t *testing.T) {
		addr := freePort(t)
		dsn := "sqlite:///" + filepath.Join(t.TempDir(), "mogilefs.db")
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "--skipconfig", "--dsn", dsn, "--listen", addr, "--no-job_master")
		cmd.Stderr = &stderr
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer cmd.Process.Kill()

		deadline := time.Now().Add(20 * time.Second)
		var reply string
		for {
			if r, err := noop(addr); err == nil {
				reply = r
				break
			}
			select {
			case err := <-exited:
				t.Fatalf("mogilefsd exited early: %v\n%s", err, stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("mogilefsd never answered on %s\n%s", addr, stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if reply != "OK \r\n" {
			t.Errorf("noop: %q", reply)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("exit after SIGTERM: %v\n%s", err, stderr.String())
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("mogilefsd did not stop on SIGTERM\n%s", stderr.String())
		}
	})

	t.Run("WrongDSNFailsAtStart", func(t *testing.T) {
		for _, tc := range []struct{ dsn, want string }{
			{"nosuchdb://x/y", "no such backend"},
			{"sqlite:///" + filepath.Join(t.TempDir(), "no", "such", "dir", "db"), "sqlite"},
			{"mysql://u:p@127.0.0.1:1/db", "127.0.0.1:1"},
		} {
			cmd := exec.Command(bin, "--skipconfig", "--dsn", tc.dsn, "--listen", freePort(t))
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 {
					t.Errorf("dsn %s: exit %v; want code 1", tc.dsn, err)
				}
			case <-time.After(40 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("dsn %s: still running", tc.dsn)
			}
			msg := stderr.String()
			if !strings.HasPrefix(msg, "mogilefsd: ") || !strings.Contains(msg, tc.want) {
				t.Errorf("dsn %s: message %q; want it to mention %q", tc.dsn, msg, tc.want)
			}
			if strings.Contains(msg, ":p@") {
				t.Errorf("password leaked in %q", msg)
			}
		}
	})

	t.Run("BadFlagExitsTwo", func(t *testing.T) {
		cmd := exec.Command(bin, "--no-such-flag")
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("bad flag: %v; want exit code 2", err)
		}
	})
}

func noop(addr string) (string, error) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprint(nc, "noop\r\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(nc).ReadString('\n')
}

// --daemonize: a bad database fails in the foreground; a good one leaves a
// detached tracker serving, which "!shutdown" stops.
func TestMogilefsd_Daemonize(t *testing.T) {
	bin := buildBinary(t)
	cmd := exec.Command(bin, "--skipconfig", "--daemonize", "--dsn", "nosuchdb://x", "--listen", freePort(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "no such backend") {
		t.Errorf("daemonize with a bad DSN: %v, %q", err, stderr.String())
	}

	addr := freePort(t)
	dsn := "sqlite:///" + filepath.Join(t.TempDir(), "db")
	pidfile := filepath.Join(t.TempDir(), "mogilefsd.pid")
	cmd = exec.Command(bin, "--skipconfig", "-D", "--dsn", dsn, "--listen", addr, "--pidfile", pidfile)
	// A detached tracker logs to syslog or log_file; this machine may have no syslog.
	cmd.Env = append(os.Environ(), "MOGILEFSD_LOG_FILE="+filepath.Join(t.TempDir(), "log"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("daemonize: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if r, err := noop(addr); err == nil {
			if r != "OK \r\n" {
				t.Errorf("noop: %q", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("detached mogilefsd never answered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid, err := os.ReadFile(pidfile)
	if err != nil || len(bytes.TrimSpace(pid)) == 0 {
		t.Errorf("pidfile: %q, %v", pid, err)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(nc, "!shutdown test over\r\n")
	nc.Close()
	waitGone := time.Now().Add(20 * time.Second)
	for {
		if _, err := noop(addr); err != nil {
			break
		}
		if time.Now().After(waitGone) {
			t.Fatal("detached mogilefsd did not stop on !shutdown")
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitFile := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(pidfile); os.IsNotExist(err) {
			break
		}
		if time.Now().After(waitFile) {
			t.Error("pidfile left behind after shutdown")
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The first SIGTERM waits for a request in flight; a second exits at once.
func TestMogilefsd_SecondSignal(t *testing.T) {
	bin := buildBinary(t)
	addr := freePort(t)
	cmd := exec.Command(bin, "--skipconfig", "--dsn", "sqlite:///"+filepath.Join(t.TempDir(), "db"), "--listen", addr, "--no-job_master")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := noop(addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never answered\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprint(nc, "sleep duration=30\r\n")
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		t.Fatalf("exited on the first signal with a request in flight: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("second signal: %v; want exit code 1", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("second signal took %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("second signal did not stop mogilefsd\n%s", stderr.String())
	}
}
