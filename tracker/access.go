package tracker

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/gomogile/gomogile/internal/netlist"
)

// Access control for the "!" admin commands. The original answered them
// from anyone who could reach the tracker; "!shutdown" stops it, "!want"
// and "!to" steer its workers and "!recent" shows other clients' requests.
// admin_networks lists the networks allowed to use them; empty (the
// default) keeps the original's behaviour, so existing single-host setups
// and tools keep working.

// parseNetworks reads an admin_networks value (see netlist.Parse).
func parseNetworks(v string) ([]netip.Prefix, error) { return netlist.Parse(v) }

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

// allowed reports whether addr is in one of nets; no nets allows everyone,
// and a peer that is not IP (ok false) is refused by a list.
func allowed(nets []netip.Prefix, addr netip.Addr, ok bool) bool {
	if !ok {
		addr = netip.Addr{}
	}
	return netlist.Allows(nets, addr)
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
