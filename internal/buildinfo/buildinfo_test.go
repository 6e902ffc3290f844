package buildinfo

import (
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/gomogile/gomogile", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "3f2a9c1d0e4b5a6978877665544332211aabbccd"},
			{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	in := fromBuildInfo(bi)
	if in.Short() != "(devel)+3f2a9c1d0e4b-dirty" {
		t.Errorf("Short = %q", in.Short())
	}
	want := "mogilefsd (devel) (github.com/gomogile/gomogile, revision 3f2a9c1d0e4b5a6978877665544332211aabbccd of 2026-12-01T10:00:00Z, modified, go1.26.0)"
	if got := in.String("mogilefsd"); got != want {
		t.Errorf("String =\n %s\nwant\n %s", got, want)
	}
	// A pseudo-version already names the revision.
	bi.Main.Version = "v0.0.0-20261201100000-3f2a9c1d0e4b"
	bi.Settings = nil
	if got := fromBuildInfo(bi).Short(); got != "v0.0.0-20261201100000-3f2a9c1d0e4b" {
		t.Errorf("Short = %q", got)
	}
}

// The test binary has build info too; Read must not invent a version.
func TestRead(t *testing.T) {
	in := Read()
	if in.GoVersion == "" || in.Version == "" || !strings.HasPrefix(in.GoVersion, "go") {
		t.Errorf("Read = %+v", in)
	}
}

func TestVersionRequested(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--version"}, true},
		{[]string{"-s", "-version"}, true},
		{[]string{"--", "--version"}, false},
		{[]string{"-d"}, false},
		{nil, false},
	} {
		if got := VersionRequested(c.args); got != c.want {
			t.Errorf("VersionRequested(%q) = %v", c.args, got)
		}
	}
}

func TestUnbundle(t *testing.T) {
	valued := map[string]bool{"c": true, "config": true, "p": true}
	for _, c := range []struct{ in, want []string }{
		{[]string{"-dd"}, []string{"-d", "-d"}},
		{[]string{"-sDd", "--dsn", "x"}, []string{"-s", "-D", "-d", "--dsn", "x"}},
		{[]string{"-d"}, []string{"-d"}},
		{[]string{"-dsn=sqlite:///x"}, []string{"-dsn=sqlite:///x"}},
		{[]string{"--dd"}, []string{"--dd"}},
		{[]string{"-c", "-dd"}, []string{"-c", "-dd"}}, // -dd is -c's value
		{[]string{"-p", "7001", "-dd"}, []string{"-p", "7001", "-d", "-d"}},
		{[]string{"--", "-dd"}, []string{"--", "-dd"}},
		{[]string{"-dx"}, []string{"-dx"}},
	} {
		if got := Unbundle(c.in, "dDs", valued); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Unbundle(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
