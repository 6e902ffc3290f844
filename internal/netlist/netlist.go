// Package netlist is the network lists of the daemons' access-control keys
// (the tracker's admin_networks, mogstored's writenetworks and
// mgmtnetworks): one parser and one membership test, so both daemons read
// and apply such a list the same way.
package netlist

import (
	"fmt"
	"net/netip"
	"strings"
)

// Parse reads a comma-separated list of addresses or address/bits prefixes
// ("127.0.0.1" means 127.0.0.1/32). An empty list is nil: everyone.
func Parse(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		var p netip.Prefix
		var err error
		if strings.Contains(f, "/") {
			p, err = netip.ParsePrefix(f)
		} else {
			var a netip.Addr
			if a, err = netip.ParseAddr(f); err == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%q is not a network (want an address or address/bits)", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Allows reports whether addr is in one of nets. No nets allows everyone;
// otherwise an invalid addr (a peer that is not IP) is refused.
// IPv4-mapped IPv6 addresses are compared as IPv4.
func Allows(nets []netip.Prefix, addr netip.Addr) bool {
	if len(nets) == 0 {
		return true
	}
	if !addr.IsValid() {
		return false
	}
	addr = addr.Unmap()
	for _, p := range nets {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
