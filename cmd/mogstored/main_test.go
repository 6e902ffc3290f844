//go:build unix

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildBinary compiles this command once per test into a temporary dir.
func buildBinary(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "mogstored")
	out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freeAddr finds a port to hand to the binary: it must be known before the
// process starts.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitUsage(t *testing.T, httpAddr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get("http://" + httpAddr + "/dev1/usage")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mogstored never answered on %s: %v", httpAddr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestBinary(t *testing.T) {
	bin := buildBinary(t)

	t.Run("foreground, SIGTERM", func(t *testing.T) {
		docroot := t.TempDir()
		os.Mkdir(filepath.Join(docroot, "dev1"), 0o755)
		httpAddr, mgmtAddr := freeAddr(t), freeAddr(t)
		var out bytes.Buffer
		cmd := exec.Command(bin, "--skipconfig", "--docroot="+docroot, "--httplisten="+httpAddr, "--mgmtlisten="+mgmtAddr)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer cmd.Process.Kill()
		waitUsage(t, httpAddr)

		req, _ := http.NewRequest("PUT", "http://"+httpAddr+"/dev1/0/000/000/0000000001.fid", strings.NewReader("bin"))
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("PUT to the binary: %v %v", res, err)
		}
		res.Body.Close()

		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("exit after SIGTERM: %v\n%s", err, out.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no exit after SIGTERM\n%s", out.String())
		}
		if !strings.Contains(out.String(), "Running.") {
			t.Errorf("output lacks Running.: %s", out.String())
		}
	})

	t.Run("second signal exits without waiting", func(t *testing.T) {
		docroot := t.TempDir()
		os.Mkdir(filepath.Join(docroot, "dev1"), 0o755)
		httpAddr, mgmtAddr := freeAddr(t), freeAddr(t)
		cmd := exec.Command(bin, "--skipconfig", "--docroot="+docroot, "--httplisten="+httpAddr, "--mgmtlisten="+mgmtAddr)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer cmd.Process.Kill()
		waitUsage(t, httpAddr)

		// An upload in flight holds the graceful shutdown (10s by default).
		c, err := net.Dial("tcp", httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, "PUT /dev1/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nabc")
		deadline := time.Now().Add(10 * time.Second)
		for {
			ents, _ := os.ReadDir(filepath.Join(docroot, "dev1"))
			if len(ents) > 1 { // usage plus the upload's temporary
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("upload never started")
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			t.Fatalf("exited (%v) while an upload was in its grace period", err)
		case <-time.After(500 * time.Millisecond):
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err == nil {
				t.Error("exit status 0 after an abandoned drain, want non-zero")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("second SIGTERM did not end the process")
		}
	})

	t.Run("daemonize, mgmt shutdown", func(t *testing.T) {
		docroot := t.TempDir()
		os.Mkdir(filepath.Join(docroot, "dev1"), 0o755)
		pidfile := filepath.Join(t.TempDir(), "mogstored.pid")
		conf := filepath.Join(t.TempDir(), "mogstored.conf")
		httpAddr, mgmtAddr := freeAddr(t), freeAddr(t)
		os.WriteFile(conf, []byte(fmt.Sprintf("docroot = %s\nhttplisten = %s\nmgmtlisten = %s\ndaemonize = 1\npidfile = %s\n",
			docroot, httpAddr, mgmtAddr, pidfile)), 0o644)

		out, err := exec.Command(bin, "--config="+conf).CombinedOutput()
		if err != nil {
			t.Fatalf("daemonizing run failed: %v\n%s", err, out)
		}
		b, err := os.ReadFile(pidfile)
		if err != nil {
			t.Fatalf("no pidfile after the parent returned: %v (%s)", err, out)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if !strings.Contains(string(out), strconv.Itoa(pid)) {
			t.Errorf("parent output %q does not name pid %d", out, pid)
		}
		defer syscall.Kill(pid, syscall.SIGKILL)
		waitUsage(t, httpAddr)

		c, err := net.Dial("tcp", mgmtAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, "shutdown\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if line, _ := bufio.NewReader(c).ReadString('\n'); line != "OK\r\n" {
			t.Fatalf("shutdown answered %q", line)
		}
		deadline := time.Now().Add(20 * time.Second)
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatal("daemon still running after shutdown")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
			t.Errorf("pidfile left behind: %v", err)
		}
	})

	t.Run("daemonize reports start-up errors", func(t *testing.T) {
		out, err := exec.Command(bin, "--skipconfig", "-d", "--docroot=/nonexistent/mogdata",
			"--httplisten="+freeAddr(t), "--mgmtlisten="+freeAddr(t)).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "docroot") {
			t.Fatalf("want a docroot error from the parent, got %v: %s", err, out)
		}
	})
}

// alive reports whether pid runs; a zombie (nobody reaps in some containers)
// counts as gone.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+1:])
	return len(f) == 0 || f[0] != "Z"
}
