package tracker

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/gomogile/gomogile/internal/netlist"
	"github.com/gomogile/gomogile/tracker/query"
)

// Access control. The original answered every command from anyone who
// could reach the tracker. Two keys narrow that, each empty (the default)
// meaning everyone, so existing setups and tools keep working:
//
//   - admin_networks: the commands that change the cluster's shape or its
//     files' placement (category admin in package query's command table,
//     the one place categories are decided), and the "!" commands
//     ("!shutdown" stops the tracker, "!want" and "!to" steer its
//     workers, "!recent" shows other clients' requests).
//   - client_networks: what an application needs (category client).
//
// An address in admin_networks may use everything. With admin_networks
// empty, the admin commands follow client_networks: a peer shut out of
// the client commands is never left the admin ones.

// parseNetworks reads an admin_networks or client_networks value (see
// netlist.Parse).
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

// deniedBy returns "" when a peer at addr may send commands of cat, else
// the configuration keys that shut it out, for the refusal's text.
func (t *Tracker) deniedBy(cat query.Category, addr netip.Addr, ok bool) string {
	admins, clients := t.cfg.AdminNetworks, t.cfg.ClientNetworks
	if len(admins) > 0 && allowed(admins, addr, ok) {
		return ""
	}
	switch {
	case cat == query.Client && allowed(clients, addr, ok):
		return ""
	case cat == query.Admin && len(admins) == 0 && allowed(clients, addr, ok):
		return ""
	case cat == query.Client && len(admins) > 0:
		return "client_networks, admin_networks"
	case len(admins) == 0 && len(clients) > 0:
		return "client_networks"
	}
	return "admin_networks"
}

// adminRefused answers a "!" command from a peer that may not send admin
// commands, or returns "" when it may. The refusal keeps the admin reply's
// shape (lines, then "."), so the original tools print it and stop.
func (t *Tracker) adminRefused(c *conn, req Request) string {
	addr, ok := remoteAddr(c.nc)
	keys := t.deniedBy(query.Admin, addr, ok)
	if keys == "" {
		return ""
	}
	t.log.Warn("admin command refused", "cmd", "!"+req.Cmd, "remote", c.nc.RemoteAddr().String())
	return fmt.Sprintf("ERROR: access denied: !%s is not allowed from %s (%s)\r\n.\r\n", req.Cmd, addr, keys)
}

// queryRefused answers a query command of category cat from a peer that
// may not send it ("ERR access_denied", callid echoed as on every ERR
// line), or returns "" when it may. A refusal is counted as an error in
// gomogile_requests_total.
func (t *Tracker) queryRefused(c *conn, cmd string, cat query.Category, callid *string) string {
	addr, ok := remoteAddr(c.nc)
	keys := t.deniedBy(cat, addr, ok)
	if keys == "" {
		return ""
	}
	t.log.Warn("command refused", "cmd", cmd, "category", cat.String(), "remote", c.nc.RemoteAddr().String(), "networks", keys)
	t.observeRequest(cmd, 0, errAccessDenied)
	return errLine("access_denied", fmt.Sprintf("%s: %s commands are not allowed from %s (%s)", cmd, cat, addr, keys), callid)
}

// errAccessDenied is what a refused query command counts as.
var errAccessDenied error = &query.ProtoError{Code: "access_denied"}

// ParseNetworks parses an admin_networks or client_networks value
// (comma-separated addresses or address/bits) as Config.AdminNetworks and
// Config.ClientNetworks hold it.
func ParseNetworks(v string) ([]netip.Prefix, error) { return parseNetworks(v) }
