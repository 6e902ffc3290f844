package cluster

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ReplPolicy is a parsed class replpolicy: one of the two policies the
// original ships, MultipleHosts(N) and MultipleDevices(N), or a Union(…)
// of policies, which a file satisfies when it satisfies every member.
// create_class and update_class accept exactly what the replicate worker
// runs.
type ReplPolicy struct {
	Kind    string       // "MultipleHosts", "MultipleDevices" or "Union"
	Min     int          // MultipleHosts, MultipleDevices: 0 = the class's mindevcount
	Members []ReplPolicy // Union: at least one
}

// Copies is how many copies p wants at least, for a class with
// mindevcount classMin: a Union wants what its most demanding member does.
func (p ReplPolicy) Copies(classMin int) int {
	if p.Kind == "Union" {
		n := 0
		for _, m := range p.Members {
			n = max(n, m.Copies(classMin))
		}
		return n
	}
	if p.Min > 0 {
		return p.Min
	}
	return classMin
}

const policyPrefix = "MogileFS::ReplicationPolicy::"

// maxPolicyDepth bounds Union nesting, so that a hostile replpolicy cannot
// exhaust the stack; the original has no bound.
const maxPolicyDepth = 16

var (
	policyNameRE  = regexp.MustCompile(`^\s*([\w:]+)`)
	policyCountRE = regexp.MustCompile(`^\s*\(\s*(\d*)\s*\)\s*`)
	unionOpenRE   = regexp.MustCompile(`^\s*\(\s*`)
	unionCommaRE  = regexp.MustCompile(`^\s*,\s*`)
	unionCloseRE  = regexp.MustCompile(`^\s*\)\s*`)
)

// ParseReplPolicy parses a replpolicy as ReplicationPolicy's
// new_from_policy_string does, with the original's error texts (without
// Perl's " at <file> line <n>."); "" means MultipleHosts(). A policy the
// original loads from a plugin (MultipleNetworks, HostsPerNetwork of
// MogileFS::Network) fails to load, saying gomogile cannot run it. Unlike
// the original, text left after the policy is an error rather than
// ignored.
func ParseReplPolicy(s string) (ReplPolicy, error) {
	if strings.TrimSpace(s) == "" {
		return ReplPolicy{Kind: "MultipleHosts"}, nil
	}
	rest := s
	p, err := parsePolicy(&rest, 0)
	if err != nil {
		return ReplPolicy{}, err
	}
	if strings.TrimSpace(rest) != "" {
		return ReplPolicy{}, fmt.Errorf("Failed to parse policy string: %s", rest)
	}
	return p, nil
}

// parsePolicy eats one policy off the front of *s.
func parsePolicy(s *string, depth int) (ReplPolicy, error) {
	m := policyNameRE.FindStringSubmatch(*s)
	if m == nil {
		return ReplPolicy{}, fmt.Errorf("Failed to parse policy string: %s", *s)
	}
	*s = (*s)[len(m[0]):]
	class := m[1]
	if !strings.Contains(class, ":") {
		class = policyPrefix + class
	}
	kind := strings.TrimPrefix(class, policyPrefix)
	switch kind {
	case "MultipleHosts", "MultipleDevices":
		a := policyCountRE.FindStringSubmatch(*s)
		if a == nil {
			return ReplPolicy{}, fmt.Errorf("%s failed to parse args: %s", class, *s)
		}
		*s = (*s)[len(a[0]):]
		p := ReplPolicy{Kind: kind}
		if a[1] != "" {
			n, err := strconv.Atoi(a[1])
			if err != nil {
				return ReplPolicy{}, fmt.Errorf("%s failed to parse args: %s: %w", class, a[1], errors.Unwrap(err))
			}
			p.Min = n
		}
		return p, nil
	case "Union":
		if depth >= maxPolicyDepth {
			return ReplPolicy{}, fmt.Errorf("Failed to parse policy string: Union nested more than %d deep", maxPolicyDepth)
		}
		if o := unionOpenRE.FindString(*s); o != "" {
			*s = (*s)[len(o):]
		}
		p := ReplPolicy{Kind: "Union"}
		for {
			mem, err := parsePolicy(s, depth+1)
			if err != nil {
				return ReplPolicy{}, err
			}
			p.Members = append(p.Members, mem)
			if c := unionCommaRE.FindString(*s); c != "" {
				*s = (*s)[len(c):]
			}
			if c := unionCloseRE.FindString(*s); c != "" {
				*s = (*s)[len(c):]
				return p, nil
			}
		}
	case "MultipleNetworks", "HostsPerNetwork":
		return ReplPolicy{}, fmt.Errorf("Failed to load replication policy class %s: gomogile runs only MultipleHosts(N), MultipleDevices(N) and Union(...) of them: network zones are not implemented", class)
	}
	return ReplPolicy{}, fmt.Errorf("Failed to load replication policy class %s", class)
}
