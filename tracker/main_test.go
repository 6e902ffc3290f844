package tracker_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/tracker"
)

func TestMain_RunServesUntilCancelled(t *testing.T) {
	dsn := "sqlite:///" + filepath.Join(t.TempDir(), "db")
	ready := make(chan *tracker.Tracker, 1)
	var stderr bytes.Buffer
	m := &tracker.Main{Environ: []string{}, Stderr: &stderr, Ready: func(tr *tracker.Tracker) { ready <- tr }, NewJobs: tracker.NewJobs}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- m.Run(ctx, []string{"--skipconfig", "--dsn", dsn, "--listen", "127.0.0.1:0"})
	}()
	var tr *tracker.Tracker
	select {
	case tr = <-ready:
	case err := <-done:
		t.Fatalf("Run: %v\n%s", err, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("Run never became ready")
	}
	tt := &testTracker{t: t, tr: tr, addr: tr.Addrs()[0].String()}
	c := tt.dial()
	c.want("noop", "OK ")
	c.send("!jobs\r\n")
	var lines []string
	for l := c.readLine(); l != ".\r\n"; l = c.readLine() {
		lines = append(lines, strings.TrimSpace(l))
	}
	if !containsLine(lines, "replicate desired 1") || !containsLine(lines, "job_master desired 1") {
		t.Errorf("!jobs with the jobs manager: %q", lines)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestMain_ShutdownCommand(t *testing.T) {
	dsn := "sqlite:///" + filepath.Join(t.TempDir(), "db")
	ready := make(chan *tracker.Tracker, 1)
	m := &tracker.Main{Environ: []string{}, Stderr: &bytes.Buffer{}, Ready: func(tr *tracker.Tracker) { ready <- tr }}
	done := make(chan error, 1)
	go func() { done <- m.Run(t.Context(), []string{"-s", "--dsn", dsn, "-l", "127.0.0.1:0"}) }()
	tr := <-ready
	tt := &testTracker{t: t, tr: tr, addr: tr.Addrs()[0].String()}
	c := tt.dial()
	c.send("!shutdown now\r\n")
	if got := c.readLine(); got != ".\r\n" {
		t.Errorf("!shutdown reply %q", got)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after !shutdown: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("!shutdown did not stop Run")
	}
}

func TestMain_RunRefusesBadStart(t *testing.T) {
	m := &tracker.Main{Environ: []string{}, Stderr: &bytes.Buffer{}}
	err := m.Run(t.Context(), []string{"-s", "--dsn", "sqlite:///" + filepath.Join(t.TempDir(), "missing", "dir", "db"), "-l", "127.0.0.1:0"})
	if err == nil {
		t.Fatal("Run with an unusable database succeeded")
	}
	// A port in use is an error at start, not later.
	tt := startTracker(t, testConfig(), nil, nil)
	err = m.Run(t.Context(), []string{"-s", "--dsn", "sqlite:///" + filepath.Join(t.TempDir(), "db"), "-l", tt.addr})
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("Run on a busy port: %v", err)
	}
	// What concerns the process is cmd/mogilefsd's, not the library's:
	// Run never detaches, switches user or writes a pidfile behind its
	// caller's back.
	for _, extra := range [][]string{{"--user", "nobody"}, {"-D"}, {"--pidfile", filepath.Join(t.TempDir(), "pid")}} {
		args := append([]string{"-s", "--dsn", "sqlite:///" + filepath.Join(t.TempDir(), "db2"), "-l", "127.0.0.1:0"}, extra...)
		if err := m.Run(t.Context(), args); !errors.Is(err, tracker.ErrProcess) {
			t.Errorf("Run %q: %v; want ErrProcess", extra, err)
		}
	}
}
