package main_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// --version and --help are answers, not errors: exit 0, on stdout.
func TestMogilefsd_VersionAndHelp(t *testing.T) {
	bin := buildBinary(t)
	for _, c := range []struct {
		arg  string
		want []string
	}{
		{"--version", []string{"mogilefsd ", "github.com/gomogile/gomogile", "go1."}},
		{"--help", []string{"MOGILEFSD_<KEY>", "/etc/mogilefs/mogilefsd.conf", "--daemonize"}},
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, c.arg)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("mogilefsd %s: %v\n%s", c.arg, err, stderr.String())
		}
		for _, w := range c.want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("mogilefsd %s: stdout lacks %q:\n%s", c.arg, w, stdout.String())
			}
		}
	}
}
