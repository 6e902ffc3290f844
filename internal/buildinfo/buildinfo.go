// Package buildinfo says which build of gomogile a binary is, from what the
// Go toolchain embeds (runtime/debug.ReadBuildInfo): the module version
// (a tag, or a pseudo-version for go install of a commit, or "(devel)" for
// a checkout build) and the VCS revision, time and dirty flag that `go
// build` records in a git checkout. Every command prints it for --version,
// and the tracker's !version carries it; nothing is stamped by hand.
//
// It also holds the small command-line conventions the commands share
// with the Perl originals (bundled short flags).
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is one binary's build.
type Info struct {
	Module    string // module path, github.com/gomogile/gomogile
	Version   string // module version: v1.2.3, a pseudo-version, or (devel)
	Revision  string // VCS revision, "" when built outside a checkout
	Time      string // VCS commit time, RFC 3339
	Modified  bool   // the checkout had uncommitted changes
	GoVersion string
}

// Read returns the running binary's build. Without build info (a binary
// built without module support) the fields it cannot know stay "unknown".
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Module: "github.com/gomogile/gomogile", Version: "unknown", GoVersion: runtime.Version()}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Module: bi.Main.Path, Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if in.Module == "" {
		// Test binaries have no main module path.
		in.Module = "github.com/gomogile/gomogile"
	}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// Short is the version and abbreviated revision in one word, for a
// protocol line: "v1.2.3", "(devel)+3f2a9c1d0e4b", "(devel)+3f2a9c1d0e4b-dirty".
func (in Info) Short() string {
	s := in.Version
	if in.Revision != "" && !strings.Contains(s, shortRev(in.Revision)) {
		s += "+" + shortRev(in.Revision)
		if in.Modified {
			s += "-dirty"
		}
	}
	return s
}

// String is the --version line of command cmd.
func (in Info) String(cmd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (%s", cmd, in.Version, in.Module)
	if in.Revision != "" {
		fmt.Fprintf(&b, ", revision %s", in.Revision)
		if in.Time != "" {
			fmt.Fprintf(&b, " of %s", in.Time)
		}
		if in.Modified {
			b.WriteString(", modified")
		}
	}
	fmt.Fprintf(&b, ", %s)", in.GoVersion)
	return b.String()
}

func shortRev(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}

// VersionRequested reports whether args (before a "--") ask for the
// version: --version or -version, as every gomogile command accepts.
func VersionRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--version", "-version":
			return true
		}
	}
	return false
}

// Unbundle splits bundled single-letter flags as Getopt::Long's bundling
// did for the Perl daemons: "-dd" is "-d -d", "-sD" is "-s -D". Only an
// argument made entirely of letters in bools (the boolean short flags) is
// split, so "-dsn=x" or a long flag written with one dash is left alone.
// Arguments after "--", or after a flag that takes a value (it is its
// value), are not touched: valued lists the flags that take a value.
func Unbundle(args []string, bools string, valued map[string]bool) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name := strings.TrimLeft(a, "-")
		if valued[name] && !strings.Contains(a, "=") && i+1 < len(args) {
			out = append(out, a, args[i+1])
			i++
			continue
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && allIn(a[1:], bools) {
			for _, r := range a[1:] {
				out = append(out, "-"+string(r))
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

func allIn(s, set string) bool {
	for _, r := range s {
		if !strings.ContainsRune(set, r) {
			return false
		}
	}
	return true
}
