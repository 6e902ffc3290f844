package tracker_test

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/tracker"
)

// The original's Getopt::Long bundling accepted -dd and -sD.
func TestLoadConfig_BundledShortFlags(t *testing.T) {
	m := &tracker.Main{Environ: []string{}, Stderr: new(bytes.Buffer)}
	cfg, err := m.LoadConfig([]string{"-sdd", "--dsn", "sqlite:///x.db", "-c", "/nonexistent-but-skipped"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Debug != 2 {
		t.Errorf("-sdd: debug = %d, want 2", cfg.Debug)
	}
	cfg, err = m.LoadConfig([]string{"-s", "-dd", "-d", "--dsn", "sqlite:///x.db"})
	if err != nil || cfg.Debug != 3 {
		t.Errorf("-dd -d: debug = %d, %v; want 3", cfg.Debug, err)
	}
	// A valued flag's value is not split.
	cfg, err = m.LoadConfig([]string{"-s", "--dsn", "sqlite:///x.db", "-l", "127.0.0.1:7001"})
	if err != nil || len(cfg.Listen) != 1 {
		t.Errorf("-l: %v, %v", cfg.Listen, err)
	}
	if _, err := m.LoadConfig([]string{"-sdx"}); !errors.Is(err, tracker.ErrUsage) {
		t.Errorf("-sdx: %v, want a usage error", err)
	}
}

// --help is not a mistake: the usage goes to stdout and names where
// settings come from.
func TestLoadConfig_Help(t *testing.T) {
	var stdout, stderr bytes.Buffer
	m := &tracker.Main{Environ: []string{}, Stdout: &stdout, Stderr: &stderr}
	_, err := m.LoadConfig([]string{"--help"})
	if !errors.Is(err, flag.ErrHelp) || errors.Is(err, tracker.ErrUsage) {
		t.Fatalf("--help: %v, want flag.ErrHelp and not ErrUsage", err)
	}
	for _, want := range []string{"MOGILEFSD_<KEY>", "MOGILEFSD_DB_DSN", tracker.DefaultConfigPath, "--version", "db_dsn", "log_level", "log_file"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("--help output lacks %q:\n%s", want, stdout.String())
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("--help wrote to stderr: %s", stderr.String())
	}
}

// !version keeps the "2.73" clients parse and says which build answers.
func TestVersionCarriesBuild(t *testing.T) {
	if !strings.HasPrefix(tracker.Version, "2.73-gomogile-") || len(tracker.Version) <= len("2.73-gomogile-") {
		t.Errorf("Version = %q, want 2.73-gomogile-<build>", tracker.Version)
	}
}

func TestLogSettings(t *testing.T) {
	m := &tracker.Main{Environ: []string{"MOGILEFSD_LOG_FORMAT=json"}, Stderr: new(bytes.Buffer)}
	cfg, err := m.LoadConfig([]string{"-s", "--dsn", "sqlite:///x.db"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("log_level", "WARN"); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := tracker.NewLogger(&buf, cfg)
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	if got := strings.TrimSpace(buf.String()); !strings.HasPrefix(got, "{") || !strings.Contains(got, `"msg":"shown"`) || strings.Contains(got, "hidden") {
		t.Errorf("log_format=json log_level=warn wrote %q", got)
	}
	for k, v := range map[string]string{"log_level": "loud", "log_format": "xml"} {
		if err := cfg.Set(k, v); err == nil {
			t.Errorf("%s=%s accepted", k, v)
		}
	}
	// -d still means debug when log_level is unset.
	cfg, err = m.LoadConfig([]string{"-s", "-d", "--dsn", "sqlite:///x.db"})
	if err != nil {
		t.Fatal(err)
	}
	if !tracker.NewLogger(&buf, cfg).Enabled(t.Context(), slog.LevelDebug) {
		t.Error("-d without log_level: debug not enabled")
	}
}
