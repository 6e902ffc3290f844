package cluster

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ReplPolicy is a parsed class replpolicy: one of the two policies the
// original ships without plugins, MultipleHosts(N) and MultipleDevices(N).
// create_class and update_class accept exactly what the replicate worker
// runs.
type ReplPolicy struct {
	Kind string // "MultipleHosts" or "MultipleDevices"
	Min  int    // 0: the class's mindevcount
}

var (
	replShapeRE  = regexp.MustCompile(`^\s*(\w+)\s*\((.*)\)\s*$`)
	replPolicyRE = regexp.MustCompile(`^\s*(MultipleHosts|MultipleDevices)\s*\(\s*(\d*)\s*\)\s*$`)
)

// ParseReplPolicy parses a replpolicy; "" means MultipleHosts(). The
// errors are the original's texts for a string it cannot parse, and say
// what to use for a policy it loads from a plugin (MultipleNetworks,
// HostsPerNetwork) or composes (Union), which gomogile cannot run.
func ParseReplPolicy(s string) (ReplPolicy, error) {
	if strings.TrimSpace(s) == "" {
		return ReplPolicy{Kind: "MultipleHosts"}, nil
	}
	if m := replPolicyRE.FindStringSubmatch(s); m != nil {
		p := ReplPolicy{Kind: m[1]}
		if m[2] != "" {
			p.Min, _ = strconv.Atoi(m[2])
		}
		return p, nil
	}
	m := replShapeRE.FindStringSubmatch(s)
	if m == nil {
		return ReplPolicy{}, fmt.Errorf("Failed to parse replication policy %q", s)
	}
	switch m[1] {
	case "MultipleHosts", "MultipleDevices":
		return ReplPolicy{}, fmt.Errorf("Failed to parse replication policy %q: the argument must be a number of copies", s)
	}
	switch m[1] {
	case "MultipleNetworks", "HostsPerNetwork", "Union":
		return ReplPolicy{}, fmt.Errorf("Failed to load replication policy %s: gomogile runs only MultipleHosts(N) and MultipleDevices(N)", m[1])
	}
	return ReplPolicy{}, fmt.Errorf("Failed to load replication policy %s", m[1])
}
