package mogstored

import (
	"io"
	"path/filepath"
	"testing"
)

// The sample config shipped in examples/ must load and state the defaults.
func TestExampleConfigLoads(t *testing.T) {
	path := filepath.Join("..", "examples", "mogstored.conf")
	m := &Main{Stdout: io.Discard, Stderr: io.Discard}
	if err := m.ParseFlags([]string{"--config", path}); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	def := DefaultConfig().withDefaults()
	got := m.Config.withDefaults()
	if got.HTTPListen != def.HTTPListen || got.MgmtListen != def.MgmtListen || got.DocRoot != def.DocRoot || got.MaxConns != def.MaxConns || got.NoIOStat {
		t.Errorf("%s: %+v; the sample claims the defaults %+v", path, got, def)
	}
}

// -sd is -s -d, as the original's Getopt bundling read it.
func TestParseFlagsBundled(t *testing.T) {
	m := &Main{Stdout: io.Discard, Stderr: io.Discard, DefaultConfigFile: filepath.Join(t.TempDir(), "none.conf")}
	if err := m.ParseFlags([]string{"-sd", "--docroot", "/x"}); err != nil {
		t.Fatal(err)
	}
	if !m.Daemonize || m.ConfigFile != "" || m.Config.DocRoot != "/x" {
		t.Errorf("-sd: daemonize=%v config file %q docroot %q", m.Daemonize, m.ConfigFile, m.Config.DocRoot)
	}
}
