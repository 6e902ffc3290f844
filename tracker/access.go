package tracker

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Access control for the "!" admin commands. The original answered them
// from anyone who could reach the tracker; "!shutdown" stops it, "!want"
// and "!to" steer its workers and "!recent" shows other clients' requests.
// admin_networks lists the networks allowed to use them; empty (the
// default) keeps the original's behaviour, so existing single-host setups
// and tools keep working.

// parseNetworks reads a comma-separated list of CIDR prefixes or single
// addresses ("127.0.0.1" means 127.0.0.1/32). An empty list is nil.
func parseNetworks(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range splitList(v) {
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

// remoteAddr is the peer's address, IPv4-mapped IPv6 unmapped; ok is false
// when the connection is not IP.
func remoteAddr(nc net.Conn) (netip.Addr, bool) {
	ta, ok := nc.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	a, ok := netip.AddrFromSlice(ta.IP)
	return a.Unmap(), ok
}

// allowed reports whether addr is in one of nets; no nets allows everyone.
func allowed(nets []netip.Prefix, addr netip.Addr, ok bool) bool {
	if len(nets) == 0 {
		return true
	}
	if !ok {
		return false
	}
	for _, p := range nets {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// adminRefused answers a "!" command from outside admin_networks, or
// returns "" when the peer may use it. The refusal keeps the admin reply's
// shape (lines, then "."), so the original tools print it and stop.
func (t *Tracker) adminRefused(c *conn, req Request) string {
	addr, ok := remoteAddr(c.nc)
	if allowed(t.cfg.AdminNetworks, addr, ok) {
		return ""
	}
	t.log.Warn("admin command refused", "cmd", "!"+req.Cmd, "remote", c.nc.RemoteAddr().String())
	return fmt.Sprintf("ERROR: access denied: !%s is not allowed from %s (admin_networks)\r\n.\r\n", req.Cmd, addr)
}

// ParseNetworks parses an admin_networks value (comma-separated addresses
// or address/bits) as Config.AdminNetworks holds it.
func ParseNetworks(v string) ([]netip.Prefix, error) { return parseNetworks(v) }
