package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/torture"
)

// The test binary stands in for the command as the tracker processes.
func TestMain(m *testing.M) {
	torture.MaybeWorker()
	os.Exit(m.Run())
}

func TestRunSQLite(t *testing.T) {
	var out, errb bytes.Buffer
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "t.db")
	code := run(context.Background(), []string{"--dsn", dsn, "--duration", "3s", "--workers", "2", "--fault-every", "400ms", "--seed", "5"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"seed=5", "result: PASS", "no two holders at once", "\ntorture: backend=sqlite seconds=3 ", " violations=0 ", " partition=- "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"--dsn"}, {"--dsn", "sqlite:///x", "extra"}, {"--nosuchflag"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (usage)", args, code)
		}
	}
}

func TestUnreachable(t *testing.T) {
	var out, errb bytes.Buffer
	// Port 1 on the loopback: refused at once.
	code := run(context.Background(), []string{"--dsn", "postgres://u@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", "--duration", "1s"}, &out, &errb)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (run not carried out); stderr: %s", code, errb.String())
	}
}
