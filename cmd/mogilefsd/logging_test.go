package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/internal/logsetup"
	"github.com/gomogile/gomogile/tracker"
)

type fakeSyslog struct{ strings.Builder }

func (*fakeSyslog) Close() error { return nil }

// A detached tracker logs to syslog unless log_file is set; in the
// foreground, to stderr.
func TestLogOutput(t *testing.T) {
	fake := &fakeSyslog{}
	prev := logsetup.OpenSyslog
	var tag string
	logsetup.OpenSyslog = func(t string) (io.WriteCloser, error) { tag = t; return fake, nil }
	defer func() { logsetup.OpenSyslog = prev }()

	cfg := tracker.DefaultConfig()
	w, done, err := logOutput(cfg, true, os.Stderr)
	if err != nil || w != io.Writer(fake) || tag != "mogilefsd" {
		t.Errorf("detached without log_file: %T (tag %q), %v; want syslog tagged mogilefsd", w, tag, err)
	} else {
		done()
	}
	if w, _, err := logOutput(cfg, false, os.Stderr); err != nil || w != io.Writer(os.Stderr) {
		t.Errorf("foreground: %T, %v; want stderr", w, err)
	}
	cfg.LogFile = filepath.Join(t.TempDir(), "mogilefsd.log")
	w, done, err = logOutput(cfg, true, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "line\n")
	done()
	if b, _ := os.ReadFile(cfg.LogFile); string(b) != "line\n" {
		t.Errorf("log_file holds %q", b)
	}

	logsetup.OpenSyslog = func(string) (io.WriteCloser, error) { return nil, errors.New("no /dev/log") }
	if _, _, err := logOutput(tracker.DefaultConfig(), true, os.Stderr); err == nil || !strings.Contains(err.Error(), "log_file") {
		t.Errorf("no syslog: %v, want an error naming log_file", err)
	}
}
