package mogstored

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runUntilStarted runs m with args until it serves, then stops it.
func runUntilStarted(t *testing.T, m *Main, args ...string) {
	t.Helper()
	started := make(chan *Server, 1)
	m.Started = func(s *Server) { started <- s }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, args) }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not start")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// log_level, log_format and log_file, from the file and the command line
// (which wins), as the tracker takes them: the log lands in the file, in
// JSON, and nothing on stderr.
func TestMainRun_LogSettings(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "mogstored.log")
	conf := writeConf(t, "log_level = error\nlog_format = json\nlog_file = "+logFile+"\n")
	m, out := testMain(t)
	runUntilStarted(t, m, "--config="+conf, "--log_level=info", "--docroot="+t.TempDir(),
		"--httplisten=127.0.0.1:0", "--mgmtlisten=127.0.0.1:0")
	if m.LogLevel != "info" || m.LogFormat != "json" || m.LogFile != logFile {
		t.Errorf("LogLevel, LogFormat, LogFile = %q, %q, %q; want info (the flag over the file), json, %s", m.LogLevel, m.LogFormat, m.LogFile, logFile)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct{ Msg, Level string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		msgs = append(msgs, rec.Level+" "+rec.Msg)
	}
	if got := strings.Join(msgs, "; "); got != "INFO serving; INFO stopped" {
		t.Errorf("log file holds %q; want the serving and stopped lines at info", got)
	}
	if strings.Contains(out.String(), "serving") {
		t.Errorf("stderr got the log too: %q", out.String())
	}

	for _, bad := range []string{"--log_level=loud", "--log_format=xml"} {
		m, _ := testMain(t)
		if err := m.ParseFlags([]string{"-s", bad}); err == nil || !strings.Contains(err.Error(), "want one of") {
			t.Errorf("ParseFlags(%s) = %v; want a refusal listing the values", bad, err)
		}
	}
}
